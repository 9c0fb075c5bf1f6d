// The transport over TCP: one socket per peer node, dialled by the node whose name sorts
// first (so a pair never ends up with two), identified by a hello frame that carries the
// dialler's name and credential: an accepted connection whose first frame is not a hello with a
// credential the check lets in is closed before any of its data is read. Frames are a 32-byte
// header (type, immediate, region key, offset, length) and a payload; a put's payload is read
// from the socket straight into the registered region, so the daemon copies no user data.
//
// No thread of its own: the sockets sit in the transport's epoll set (event_fd()), which the
// progress engine nests in its own and drives through Poll. Put and Send write the frame from
// the caller's memory at once when the connection has nothing queued; only what would block
// is queued and finished from Poll when the socket drains.
//
// Against hostile hosts on the network: an accepted connection that has not said hello within
// the hello timeout is closed, and only so many may be waiting for theirs at once (one address
// half of them); others are closed as they come. A connection that begins a frame and has not
// finished it within the frame timeout is closed: it holds no slot and no buffer longer. Out of
// descriptors, the listener closes what is pending and rests instead of spinning. Every such
// refusal is counted (stats().refusals) and its lines are rate-limited.
//
// Its methods by job: tcp_transport.cc (start, regions, connections: dialling, accepting, the
// hello, closing; the engine's pass), tcp_writing.cc (the frame writer) and tcp_reading.cc (the
// frame reader); the frame header itself is tcp_frame.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <netinet/in.h>

#include "common/connection_refusals.h"
#include "common/descriptor_reserve.h"
#include "common/resting_listener.h"
#include "common/log_rate_limiter.h"
#include "daemon/transport/peer_directory.h"
#include "daemon/transport/tcp/tcp_frame.h"
#include "daemon/transport/transport.h"

namespace ohio {

// What accepted connections that have not said hello yet may take, and how long any connection
// may take to finish a frame it began.
struct TcpHelloLimits {
  std::chrono::milliseconds hello_timeout{5000};
  uint32_t max_unauthenticated = 128;  // one address: half of it
  std::chrono::milliseconds frame_timeout{5000};
};

class TcpTransport : public Transport {
 public:
  // How data connections are authenticated; both empty: they are not.
  struct Auth {
    // The credential the dialler sends to `peer` in its hello (called on Connect's thread).
    std::function<Result<std::string>(const std::string& peer)> credential_for;
    // Whether an accepted connection may in: its hello's name and credential ("" when its first
    // frame was no hello), and where it came from, for the log (called on the engine thread).
    std::function<Status(const std::string& claimed_peer, const std::string& credential, const std::string& from)>
        check;
  };

  using Limits = TcpHelloLimits;

  // Listens on bind_host:port (port 0 picks one); peers are told advertised_host:port.
  static Result<std::unique_ptr<TcpTransport>> Start(const std::string& self, const std::string& bind_host,
                                                     uint16_t port, const std::string& advertised_host,
                                                     Auth auth = {}, Limits limits = {});
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  std::string address() const override { return address_; }
  Result<uint64_t> RegisterRegion(void* base, uint64_t bytes) override;
  void DeregisterRegion(uint64_t key) override;
  bool ParkRegion(uint64_t key) override;
  std::optional<uint64_t> ReuseRegion(uint64_t key) override;
  PeerId PeerFor(const std::string& node) override { return directory_.For(node); }
  std::string PeerName(PeerId peer) const override { return directory_.Name(peer); }
  Status Connect(PeerId peer, const std::string& address) override;
  Status Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key, uint64_t remote_offset,
             uint32_t imm, uint64_t cookie) override;
  Status Send(PeerId peer, const void* message, size_t bytes) override;
  int event_fd() const override { return epoll_fd_; }
  void Poll(std::vector<TransportEvent>* out) override;
  // Events of puts that completed inside Put are not behind any fd: the engine must not sleep.
  bool PrepareToSleep() override { return ready_.empty(); }
  size_t connections() const override { return established_.load(std::memory_order_relaxed); }
  std::vector<std::string> connected_peers() const override;
  TransportStats stats() const override;

 private:
  static constexpr size_t kHeaderBytes = TcpFrameHeader::kBytes;
  static constexpr size_t kMaxHello = TcpFrameHeader::kMaxHello;
  // A hypercube step's frame at 32 nodes and 128 B per rank is about 2 KiB with its header.
  static constexpr size_t kReadAheadBytes = 4096;
  using Frame = TcpFrameHeader;
  // What is left of a frame whose write would have blocked.
  struct Outgoing {
    uint32_t type = 0;
    char header[kHeaderBytes];
    size_t header_sent = 0;
    std::vector<LocalPiece> pieces;  // a put's payload, gathered in order (the caller keeps it)
    std::vector<uint8_t> owned;      // the payload of hellos and messages, copied
    uint64_t bytes = 0;
    uint64_t sent = 0;
    uint64_t cookie = 0;
  };
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd = -1;
    bool named = false;  // peer is known: we dialled it, or its hello came
    bool awaiting_hello = false;  // accepted, counted in unauthenticated_ until named or closed
    uint32_t source = 0;          // the remote IPv4 address (accepted)
    uint64_t serial = 0;          // tells a connection from a later one on the same fd
    PeerId peer = 0;
    bool connecting = false;
    bool watching_writes = false;  // EPOLLOUT is in its epoll mask
    std::deque<Outgoing> out;
    char header[kHeaderBytes];
    size_t header_got = 0;
    bool in_payload = false;
    Frame frame;
    uint64_t payload_got = 0;
    bool dropped = false;  // some of this put's payload had nowhere to go
    std::string from;      // the remote address (accepted) or the one dialled, for the logs
    uint8_t small[kMaxHello];  // a hello's or a message's payload
    // Bytes read from the socket before the frame that needs them: a small frame and the next
    // frame's header come in one read, not one read each plus one that finds the socket empty.
    uint8_t ahead[kReadAheadBytes];
    uint32_t ahead_begin = 0;
    uint32_t ahead_end = 0;
    bool drained = false;  // the last read came back short: the socket was empty then
    // When the frame under way was first found unfinished at the end of a read (its clock for
    // the frame timeout); the epoch while no frame is left half read.
    Clock::time_point frame_since{};
  };
  // Engine thread only, indexed by PeerId.
  struct PeerSlot {
    Conn* conn = nullptr;              // dialling or established
    std::deque<Outgoing> pending;      // work issued before any connection existed
  };
  // From Connect, which other threads call; applied by Poll.
  struct Command {
    PeerId peer = 0;
    std::string address;
    struct sockaddr_in resolved {};
    std::string failure;  // why it cannot be dialled, if it cannot
    std::string credential;  // for the hello
  };

  TcpTransport() = default;
  PeerSlot& Slot(PeerId peer);
  Status Post(PeerId peer, uint32_t type, const char* header, const LocalPiece* pieces, size_t count, uint64_t bytes,
              uint64_t cookie);
  void ApplyCommands();
  void Dial(const Command& c);
  void Accept();
  // accept failed for want of descriptors: shed what is pending, rest the listener.
  void OutOfDescriptors(int err);
  // The timer fired: hello deadlines, the listener's rest, summaries of suppressed lines.
  void OnTimer();
  void ArmTimer();
  void HelloSeen(Conn* c);  // no longer awaiting its hello: named or closed
  void OnReadable(Conn* c);
  // OnReadable stopped for want of bytes: a frame left half read starts its frame clock.
  void FrameLeftOpen(Conn* c);
  // Its frame came whole (or it closes): its frame clock stops.
  void FrameDone(Conn* c);
  // Closes every connection whose unfinished frame is older than the frame timeout.
  void CloseStalledFrames(Clock::time_point now);
  // Closes c for a protocol error; one not named yet (garbage, or a hello naming nobody) is
  // counted and logged at a limited rate.
  void CloseMalformed(Conn* c, const std::string& why);
  // Up to n bytes for dst (the read-ahead buffer's first, then the socket's: straight into dst
  // when a buffer's worth or more is wanted, else through the buffer). The bytes given; 0 when
  // there are none now (the socket was empty at the last read, or `budget` is spent: bytes
  // already read ahead are given whatever the budget); -1 when the connection closed (errno 0)
  // or failed.
  int64_t Take(Conn* c, uint8_t* dst, uint64_t n, uint64_t* budget);
  // Reads what it can of the current frame's payload; false when the connection must close.
  bool ReadPayload(Conn* c, uint64_t* budget);
  // "" when the frame was taken, else why the connection must close.
  std::string OnFrameDone(Conn* c);
  void OnWritable(Conn* c);
  void Sent(Conn* c, const Outgoing& o);
  void Established(Conn* c, PeerId peer);
  // Closes c; a named peer's close is logged, through `log` when given (rate-limited).
  void Close(Conn* c, const std::string& reason, LogRateLimiter* log = nullptr);
  void WatchWrites(Conn* c);
  void PeersChanged();
  void Emit(TransportEvent e) { ready_.push_back(std::move(e)); }

  std::string self_;
  std::string address_;
  Auth auth_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  PeerDirectory directory_;
  Limits limits_;

  std::mutex commands_mu_;
  std::deque<Command> commands_;

  // Held while a payload is read into a region, so a region is never freed under a read.
  mutable std::mutex regions_mu_;
  struct Region {
    uint8_t* base;
    uint64_t bytes;
  };
  std::map<uint64_t, Region> regions_;
  // Parked regions, by their last key: no frame lands in them (a put naming the key is
  // dropped as one naming a key never handed out), so they are quiet at once.
  std::map<uint64_t, Region> parked_;
  uint64_t next_key_ = 1;
  uint64_t registrations_ = 0;
  uint64_t deregistrations_ = 0;
  uint64_t registered_bytes_ = 0;

  // Engine thread only.
  std::map<int, std::unique_ptr<Conn>> conns_;
  std::deque<PeerSlot> slots_;  // a deque: growing it keeps references to the others
  std::vector<TransportEvent> ready_;  // handed out by the next Poll
  std::vector<uint8_t> discard_;
  // Accepted connections awaiting their hello: how many, per source address, and their
  // deadlines in the order they came (entries of connections gone since are skipped).
  size_t unauthenticated_ = 0;
  std::map<uint32_t, size_t> unauthenticated_by_source_;
  struct HelloDeadline {
    Clock::time_point at;
    int fd;
    uint64_t serial;
  };
  // The connection of deadline `d` is still open and has not said hello yet.
  bool AwaitsHello(const HelloDeadline& d) const;
  std::deque<HelloDeadline> hello_deadlines_;
  uint64_t next_serial_ = 1;
  DescriptorReserve reserve_;
  RestingListener listener_;  // out of descriptors: the listener rests a while
  LogRateLimiter accept_log_{std::chrono::seconds(10), 5};
  LogRateLimiter refused_log_{std::chrono::seconds(10), 5};
  LogRateLimiter hello_log_{std::chrono::seconds(10), 5};
  LogRateLimiter malformed_log_{std::chrono::seconds(10), 5};
  LogRateLimiter frame_log_{std::chrono::seconds(10), 5};
  // Connections with a frame clock running (frame_since set).
  size_t frames_left_open_ = 0;
  // When the timer is set to fire (nullopt: disarmed), so that a frame left half read re-arms it
  // only when its own deadline comes first: a stream of large puts costs no syscall per frame.
  std::optional<Clock::time_point> timer_due_;
  ConnectionRefusals refusals_;

  std::atomic<size_t> established_{0};
  mutable std::mutex peers_mu_;
  std::vector<std::string> peers_;
  std::atomic<uint64_t> data_frames_sent_{0};
  std::atomic<uint64_t> data_frames_received_{0};
  std::atomic<uint64_t> control_frames_sent_{0};
  std::atomic<uint64_t> control_frames_received_{0};
};

}  // namespace ohio
