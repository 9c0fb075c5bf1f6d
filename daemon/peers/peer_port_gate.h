// The peer port's listener. gRPC (1.51, Debian 12) bounds what an HTTP/2 connection does once it
// is up (idle and age timers, streams, threads: set on the server in daemon.cc) but has no cap
// on connections per source or on those nobody has authenticated, so one host could hold
// thousands of idle ones. So ohiod listens and accepts itself, caps those connections like the
// data port's, and hands each one it admits to the gRPC server (grpc::AddInsecureChannelFromFd),
// which serves it as if it had accepted it.
//
// A connection counts as unauthenticated until a call on it passes the peer service's check
// (Authenticated): at most max-unauthenticated-peer-connections of them at once, one address half
// of them; further ones are closed as they come, and one still unauthenticated after
// hello-timeout-ms is shut down. Refusals are counted (refusals()) and logged at a limited rate.
//
// gRPC owns the descriptor it is handed and closes it when it likes; the gate keeps a duplicate
// of each unauthenticated connection's descriptor. Shutting the duplicate down ends the
// connection under gRPC with no risk of hitting a descriptor number gRPC has closed and the
// process reused, and the duplicate, watched for EPOLLRDHUP, tells when the connection ends
// (gRPC shuts a connection down before it closes it, and so does a remote end that goes).
//
// One thread of its own accepts and keeps the deadlines; it also writes the summaries of
// credential refusals' suppressed lines (PeerAuth::LogSuppressed), both channels', since every
// daemon has a peer port.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/connection_refusals.h"
#include "common/descriptor_reserve.h"
#include "common/log_rate_limiter.h"
#include "common/resting_listener.h"
#include "common/status.h"
#include "daemon/peers/peer_auth.h"

namespace ohio {

class PeerPortGate {
 public:
  struct Limits {
    std::chrono::milliseconds auth_timeout{5000};
    uint32_t max_unauthenticated = 128;  // one address: half of it
  };

  // Listens on host:port (IPv4; port 0 picks one). `auth` outlives the gate.
  static Result<std::unique_ptr<PeerPortGate>> Listen(const std::string& host, uint16_t port, Limits limits,
                                                      PeerAuth* auth);
  ~PeerPortGate();
  PeerPortGate(const PeerPortGate&) = delete;
  PeerPortGate& operator=(const PeerPortGate&) = delete;

  uint16_t port() const { return port_; }
  // Starts accepting, handing connections to `server` (started, outliving Stop).
  void Serve(grpc::Server* server);
  // Stops accepting and watching; connections already handed over stay with gRPC.
  void Stop();

  // A call on the connection gRPC names `grpc_peer` (ServerContext::peer(), "fd:N") passed the
  // credential check: it no longer counts against the caps or the deadline. Any thread.
  void Authenticated(const std::string& grpc_peer);
  // "ADDRESS:PORT" of the connection gRPC names `grpc_peer`, for the logs; grpc_peer if unknown.
  std::string RemoteAddress(const std::string& grpc_peer) const;

  ConnectionRefusals::Counts refusals() const { return refusals_.Read(); }
  size_t unauthenticated() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    int grpc_fd;     // the descriptor gRPC owns
    int watch_fd;    // our duplicate
    uint32_t source; // IPv4 address, network order
    std::string from;
  };
  struct Deadline {
    Clock::time_point at;
    uint64_t serial;
  };

  PeerPortGate(PeerAuth* auth, Limits limits) : auth_(auth), limits_(limits) {}
  void Run();
  // Accepts what is pending; returns the descriptors admitted, to hand to gRPC unlocked.
  std::vector<int> Accept();
  void OutOfDescriptors(int err);
  // Drops the bookkeeping of a pending connection (and closes our duplicate); mu_ held.
  void Forget(uint64_t serial);
  void ExpireDeadlines(Clock::time_point now);
  void LogSummaries(Clock::time_point now);
  // Milliseconds until the next deadline, rest or summary; -1: none. Deadlines of connections
  // authenticated or gone since are dropped first, so an idle daemon does not wake for them. mu_ held.
  int NextWakeMs(Clock::time_point now);

  PeerAuth* const auth_;
  const Limits limits_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::map<uint64_t, Pending> pending_;         // by serial
  std::map<int, uint64_t> pending_by_grpc_fd_;  // gRPC's descriptor -> serial
  std::map<uint32_t, size_t> pending_by_source_;
  std::deque<Deadline> deadlines_;  // in order: the timeout is the same for all
  // Where each descriptor handed to gRPC came from; a number gRPC closed is overwritten when the
  // process reuses it for a new connection, which is the only one gRPC can then name so.
  std::map<int, std::string> remote_by_grpc_fd_;
  uint64_t next_serial_ = 1;
  DescriptorReserve reserve_;
  RestingListener listener_;
  LogRateLimiter refused_log_{std::chrono::seconds(10), 5};
  LogRateLimiter timeout_log_{std::chrono::seconds(10), 5};
  LogRateLimiter accept_log_{std::chrono::seconds(10), 5};
  ConnectionRefusals refusals_;
};

}  // namespace ohio
