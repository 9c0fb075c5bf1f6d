// The local control channel: a unix stream socket where ranks say hello, join and leave
// groups. One thread, epoll, non-blocking sockets. A client is who SO_PEERCRED says it is;
// a client that sends garbage, a truncated or oversized frame gets an Error (when it can
// still be told) and is disconnected, and its memberships are released like a crash's.
// Hostile clients are bounded: one that says no hello within hello-timeout-ms is disconnected;
// the memory of messages still arriving is bounded per uid and in all (a client that would
// pass a bound is disconnected, and the memory given back to the system); and out of
// descriptors, the listener sheds what is pending and rests instead of spinning.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/descriptor_reserve.h"
#include "common/framed_socket.h"
#include "common/host_cpus.h"
#include "common/log_rate_limiter.h"
#include "common/resting_listener.h"
#include "common/status.h"
#include "daemon/control/group_registry.h"
#include "daemon/ops/config.h"

namespace ohio {

class ControlServer {
 public:
  ControlServer(const DaemonConfig& config, GroupRegistry* registry)
      : config_(config), node_cpus_(CpusOfSetting(config.cpus)), registry_(registry) {}
  ~ControlServer();

  // Binds the socket (refusing if another daemon answers on it) and starts the thread.
  Status Start();
  void Stop();
  size_t clients() const { return client_count_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    int fd = -1;
    PeerCredentials cred;
    FrameReader reader;
    size_t held = 0;  // reader's memory as counted in pending_by_uid_ and pending_total_
    bool greeted = false;
    Clock::time_point connected_at = Clock::now();
    std::vector<Membership> memberships;
    explicit Client(size_t max_bytes) : reader(max_bytes) {}
    ~Client();
  };

  void Run();
  void Accept();
  // Returns false when the client must be disconnected.
  bool OnReadable(Client& c);
  bool Handle(Client& c, const std::string& payload);
  bool Reply(Client& c, const control::DaemonMessage& m, const std::vector<int>& fds = {});
  bool ReplyError(Client& c, control::Error::Code code, const std::string& message);
  void Disconnect(int fd);
  // Whether n more bytes of c fit the bounds on memory held for unfinished messages; if not,
  // c is told why and the caller disconnects it.
  bool AdmitBytes(Client& c, size_t n);
  void SetHeld(Client& c, size_t held);
  // accept failed for want of descriptors: shed what is pending, stop polling for a while.
  void OutOfDescriptors(int err);
  // Hello deadlines, the listener's rest, summaries of suppressed log lines. Whether it is
  // wanted again (something is still to be watched).
  bool Housekeeping(Clock::time_point now);

  const DaemonConfig& config_;
  const double node_cpus_;  // told to every rank that joins
  GroupRegistry* registry_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::atomic<size_t> client_count_{0};

  std::map<uid_t, size_t> pending_by_uid_;
  size_t pending_total_ = 0;
  bool trim_due_ = false;  // much memory was freed: give it back to the system
  size_t released_since_trim_ = 0;  // what clients' readers gave up since the last trim
  DescriptorReserve reserve_;
  RestingListener listener_;  // out of descriptors: the listener rests a while
  bool housekeeping_wanted_ = false;
  Clock::time_point next_housekeeping_{};
  LogRateLimiter accept_log_{std::chrono::seconds(10), 5};
  LogRateLimiter pending_log_{std::chrono::seconds(10), 5};
  LogRateLimiter hello_log_{std::chrono::seconds(10), 5};
};

}  // namespace ohio
