// Length-prefixed messages over a unix stream socket, with file descriptors riding along
// (SCM_RIGHTS). Frame: 4-byte little-endian payload length, then the payload. Descriptors are
// attached to the frame's first byte, so a reader that takes whole frames sees them with the
// frame they belong to.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio {

constexpr size_t kFrameHeaderBytes = 4;
constexpr size_t kMaxFdsPerFrame = 4;

// When a client's wait for its daemon gives up: a daemon that is stopped or hung never
// answers, and a rank must not wait for it for ever. kNoDeadline: no bound (the daemon's own
// sends, on non-blocking sockets, never wait anyway).
using Deadline = std::chrono::steady_clock::time_point;
constexpr Deadline kNoDeadline = Deadline::max();

// Send of one frame on a socket. Without a deadline it blocks, and EAGAIN on a non-blocking
// socket is an error: the peer is not reading its replies. With one, a peer that does not
// read waits it out at most until `deadline`, then kTimeout (part of the frame may be sent).
Status SendFrame(int fd, const std::string& payload, const std::vector<int>& fds = {},
                 Deadline deadline = kNoDeadline);

// Blocking receive of one whole frame (client side, where one reply is awaited at a time):
// kTimeout if it is not all in by `deadline`. Received descriptors are returned in *fds and
// owned by the caller. A frame longer than max_bytes is refused without reading it.
Status ReceiveFrame(int fd, size_t max_bytes, std::string* payload, std::vector<int>* fds,
                    Deadline deadline = kNoDeadline);

// Incremental parsing for a non-blocking server: feed bytes as they come, take frames out.
// The buffer grows as bytes arrive, never to a frame's announced length ahead of them (at most
// twice what came, and no further than the frame's end), and gives its memory back once a large
// frame is taken: a peer holds no more of the server's memory than it has sent.
class FrameReader {
 public:
  explicit FrameReader(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The memory the buffer will hold once n more bytes are appended: what a server bounding
  // the memory of unfinished frames checks before it appends them.
  size_t CapacityAfterAppend(size_t n) const;
  void Append(const char* data, size_t n);
  enum class Next { kFrame, kNeedMore, kTooLarge };
  // On kFrame, *payload holds the next frame and it is consumed.
  Next Take(std::string* payload);
  bool empty() const { return buffer_.empty(); }
  // The memory held for bytes not yet taken as frames.
  size_t capacity() const { return buffer_.capacity(); }
  // Length the peer announced for the frame that is too large.
  uint32_t announced() const;
  // The length announced by the header these n bytes would complete, if it is longer than
  // max_bytes (else 0): a server refuses such a frame from its length before keeping any of
  // its payload.
  uint32_t TooLargeAnnouncedBy(const char* data, size_t n) const;
  // Bytes held that are not yet taken as frames: non-zero while a frame is unfinished.
  size_t size() const { return buffer_.size(); }

 private:
  size_t max_bytes_;
  std::vector<char> buffer_;
};

}  // namespace ohio
