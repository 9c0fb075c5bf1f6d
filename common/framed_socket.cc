#include "common/framed_socket.h"

#include "common/little_endian.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ohio {
namespace {

uint32_t DecodeLength(const char* p) { return GetLittleEndian<uint32_t>(p); }

void EncodeLength(uint32_t n, char* p) { PutLittleEndian(p, n); }

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) close(fd);
  fds->clear();
}

// Ok once `fd` is ready for `events` (or has hung up: the read or write then says how);
// kTimeout once the deadline has passed without it.
Status AwaitReady(int fd, short events, Deadline deadline) {
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= Deadline::duration::zero()) return Status(Code::kTimeout, "no answer before the deadline");
    // Rounded up, so that a wait does not end just short of its deadline and spin.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    struct pollfd p = {fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (r > 0) return Status::Ok();
    if (r < 0 && errno != EINTR) return SystemError("waiting on the control socket", errno);
  }
}

// Reads exactly n bytes, by the deadline; collects any descriptors that arrive with them.
Status ReadFull(int fd, char* buf, size_t n, std::vector<int>* fds, Deadline deadline) {
  size_t got = 0;
  while (got < n) {
    if (deadline != kNoDeadline) {
      if (Status s = AwaitReady(fd, POLLIN, deadline); !s.ok()) return s;
    }
    struct iovec iov = {buf + got, n - got};
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR) continue;
      // A peer that closes with our request unread resets the connection instead of ending
      // it: it went away all the same (a daemon killed mid-join does this).
      if (errno == ECONNRESET) return Status(Code::kDaemonLost, "connection reset by peer");
      return SystemError("reading from ohiod", errno);
    }
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int received;
          std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          fds->push_back(received);
        }
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) return Status(Code::kProtocol, "too many descriptors in one frame");
    if (r == 0) return Status(Code::kDaemonLost, "connection closed by peer");
    got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

Status SendFrame(int fd, const std::string& payload, const std::vector<int>& fds, Deadline deadline) {
  if (payload.size() > UINT32_MAX) return Status(Code::kInvalidArgument, "frame too large");
  if (fds.size() > kMaxFdsPerFrame) return Status(Code::kInvalidArgument, "too many descriptors");
  char header[kFrameHeaderBytes];
  EncodeLength(static_cast<uint32_t>(payload.size()), header);
  struct iovec iov[2] = {{header, sizeof(header)}, {const_cast<char*>(payload.data()), payload.size()}};
  size_t total = sizeof(header) + payload.size();
  size_t sent = 0;
  bool fds_sent = fds.empty();
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  while (sent < total) {
    struct iovec rest[2];
    int n = 0;
    size_t skip = sent;
    for (auto& v : iov) {
      if (skip >= v.iov_len) {
        skip -= v.iov_len;
        continue;
      }
      rest[n++] = {static_cast<char*>(v.iov_base) + skip, v.iov_len - skip};
      skip = 0;
    }
    struct msghdr msg = {};
    msg.msg_iov = rest;
    msg.msg_iovlen = n;
    if (!fds_sent) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    // With a deadline the send never blocks: a full socket is waited on with poll, up to it.
    const int flags = MSG_NOSIGNAL | (deadline == kNoDeadline ? 0 : MSG_DONTWAIT);
    ssize_t w = sendmsg(fd, &msg, flags);
    if (w < 0) {
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && deadline != kNoDeadline) {
        if (Status s = AwaitReady(fd, POLLOUT, deadline); !s.ok()) return s;
        continue;
      }
      return SystemError("sending on the control socket", errno);
    }
    fds_sent = true;
    sent += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status ReceiveFrame(int fd, size_t max_bytes, std::string* payload, std::vector<int>* fds, Deadline deadline) {
  char header[kFrameHeaderBytes];
  Status s = ReadFull(fd, header, sizeof(header), fds, deadline);
  if (s.ok()) {
    uint32_t n = DecodeLength(header);
    if (n > max_bytes) {
      s = Status(Code::kProtocol, "frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                                      std::to_string(max_bytes));
    } else {
      payload->resize(n);
      s = ReadFull(fd, payload->data(), n, fds, deadline);
    }
  }
  if (!s.ok()) CloseAll(fds);
  return s;
}

// What the buffer keeps between frames; a larger one is given back after its frame.
constexpr size_t kRetainedBytes = 64 << 10;

size_t FrameReader::CapacityAfterAppend(size_t n) const {
  const size_t needed = buffer_.size() + n;
  if (needed <= buffer_.capacity()) return buffer_.capacity();
  // Doubling keeps the copies few; the frame's end caps it, so that 4 MiB - 1 bytes of an
  // announced 4 MiB frame take 4 MiB, not 8.
  size_t frame_end = needed;
  if (buffer_.size() >= kFrameHeaderBytes) {
    const uint32_t announced = DecodeLength(buffer_.data());
    if (announced <= max_bytes_) frame_end = std::max(needed, kFrameHeaderBytes + announced);
  }
  return std::max(needed, std::min(2 * buffer_.capacity(), frame_end));
}

void FrameReader::Append(const char* data, size_t n) {
  const size_t capacity = CapacityAfterAppend(n);
  if (capacity > buffer_.capacity()) buffer_.reserve(capacity);  // exactly that: vector's reserve
  buffer_.insert(buffer_.end(), data, data + n);
}

FrameReader::Next FrameReader::Take(std::string* payload) {
  if (buffer_.size() < kFrameHeaderBytes) return Next::kNeedMore;
  uint32_t n = DecodeLength(buffer_.data());
  if (n > max_bytes_) return Next::kTooLarge;
  if (buffer_.size() < kFrameHeaderBytes + n) return Next::kNeedMore;
  payload->assign(buffer_.data() + kFrameHeaderBytes, n);
  buffer_.erase(buffer_.begin(), buffer_.begin() + kFrameHeaderBytes + n);
  if (buffer_.capacity() > kRetainedBytes && buffer_.size() <= kRetainedBytes) {
    std::vector<char>(buffer_.begin(), buffer_.end()).swap(buffer_);
  }
  return Next::kFrame;
}

uint32_t FrameReader::TooLargeAnnouncedBy(const char* data, size_t n) const {
  if (buffer_.size() >= kFrameHeaderBytes || buffer_.size() + n < kFrameHeaderBytes) return 0;
  char header[kFrameHeaderBytes];
  std::copy(buffer_.begin(), buffer_.end(), header);
  std::copy(data, data + (kFrameHeaderBytes - buffer_.size()), header + buffer_.size());
  const uint32_t announced = DecodeLength(header);
  return announced > max_bytes_ ? announced : 0;
}

uint32_t FrameReader::announced() const {
  return buffer_.size() < kFrameHeaderBytes ? 0 : DecodeLength(buffer_.data());
}

}  // namespace ohio
