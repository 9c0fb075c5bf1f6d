// The local control channel: a unix stream socket where ranks say hello, join and leave
// groups. One thread, epoll, non-blocking sockets. A client is who SO_PEERCRED says it is;
// a client that sends garbage, a truncated or oversized frame gets an Error (when it can
// still be told) and is disconnected, and its memberships are released like a crash's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/framed_socket.h"
#include "common/host_cpus.h"
#include "common/status.h"
#include "daemon/config.h"
#include "daemon/group_registry.h"

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
  struct Client {
    int fd = -1;
    PeerCredentials cred;
    FrameReader reader;
    bool greeted = false;
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

  const DaemonConfig& config_;
  const double node_cpus_;  // told to every rank that joins
  GroupRegistry* registry_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::atomic<size_t> client_count_{0};
};

}  // namespace ohio
