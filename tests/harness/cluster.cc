#include "tests/harness/cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "proto/admin.grpc.pb.h"

namespace ohio::testing {

std::vector<int> FreePorts(int count) {
  std::vector<int> fds, ports;
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<struct sockaddr*>(&addr), &len);
    ports.push_back(ntohs(addr.sin_port));
    fds.push_back(fd);  // held until all are chosen, so no port is handed out twice
  }
  for (int fd : fds) close(fd);
  return ports;
}

Cluster::Cluster(const TempDir& dir, uint32_t nodes, std::vector<std::string> extra_flags)
    : dir_(dir), ports_(FreePorts(static_cast<int>(2 * nodes))), extra_flags_(std::move(extra_flags)), added_(nodes) {
  for (uint32_t i = 0; i < nodes; ++i) names_.push_back("n" + std::to_string(i));
  MakeDaemons();
}

void Cluster::MakeDaemons() {
  std::vector<std::string> peers;
  for (uint32_t i = 0; i < names_.size(); ++i) {
    peers.push_back("--peer");
    peers.push_back(names_[i] + "=127.0.0.1:" + std::to_string(peer_port(i)));
  }
  daemons_.clear();
  for (uint32_t i = 0; i < names_.size(); ++i) {
    std::vector<std::string> flags = {"--node-name", names_[i], "--peer-port", std::to_string(peer_port(i)),
                                      "--data-port", std::to_string(data_port(i))};
    flags.insert(flags.end(), peers.begin(), peers.end());
    flags.insert(flags.end(), extra_flags_.begin(), extra_flags_.end());
    flags.insert(flags.end(), added_[i].begin(), added_[i].end());
    daemons_.push_back(std::make_unique<Daemon>(dir_, flags, names_[i]));
  }
}

void Cluster::AddFlags(uint32_t i, const std::vector<std::string>& flags) {
  added_[i].insert(added_[i].end(), flags.begin(), flags.end());
  MakeDaemons();
}

bool Cluster::Start() {
  for (int attempt = 0;; ++attempt) {
    // All at once: with 32 nodes, one after another would wait out each start-up in turn.
    for (uint32_t i = 0; i < size(); ++i) daemons_[i]->Launch();
    bool up = true;
    bool port_taken = false;
    for (uint32_t i = 0; i < size(); ++i) {
      if (daemons_[i]->AwaitUp()) continue;
      up = false;
      const std::string log = daemons_[i]->Log();
      port_taken |= log.find("peer service: cannot listen on") != std::string::npos ||
                    (log.find("binding the data port") != std::string::npos &&
                     log.find("Address already in use") != std::string::npos);
    }
    // The ports were free when the cluster was made, not necessarily now: another process may
    // have taken one since. Once, the whole cluster again on fresh ports (every node's peers
    // table names them all).
    if (up || !port_taken || attempt == 1) return up;
    std::fprintf(stderr, "a port of the cluster was taken before its daemon listened; again on fresh ports\n%s",
                 Logs().c_str());
    for (auto& d : daemons_) {
      if (d->running()) d->Stop();
    }
    ports_ = FreePorts(static_cast<int>(2 * size()));
    MakeDaemons();
  }
}

bool Cluster::StartNode(uint32_t i) { return daemons_[i]->Start(); }

std::string Cluster::Logs() const {
  std::string s;
  for (uint32_t i = 0; i < daemons_.size(); ++i) s += "--- " + names_[i] + " ---\n" + daemons_[i]->Log();
  return s;
}

StatusQuery QueryStatus(const std::string& admin_socket) {
  StatusQuery q;
  auto stub = admin::Admin::NewStub(grpc::CreateChannel("unix:" + admin_socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->Status(&ctx, admin::StatusRequest(), &q.reply);
  q.ok = s.ok();
  q.error = s.error_message();
  return q;
}

long HandedBack(const admin::CountersReply& c, const std::string& function, const std::string& reason) {
  for (const auto& h : c.handed_back()) {
    if (h.function() == function && h.reason() == reason) return static_cast<long>(h.count());
  }
  return -1;
}

admin::CountersReply QueryCounters(const std::string& admin_socket) {
  auto stub = admin::Admin::NewStub(grpc::CreateChannel("unix:" + admin_socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  admin::CountersReply reply;
  stub->Counters(&ctx, admin::CountersRequest(), &reply);
  return reply;
}

admin::ListPeersReply QueryPeers(const std::string& admin_socket) {
  auto stub = admin::Admin::NewStub(grpc::CreateChannel("unix:" + admin_socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  admin::ListPeersReply reply;
  stub->ListPeers(&ctx, admin::ListPeersRequest(), &reply);
  return reply;
}

std::vector<std::string> ControlSockets(Cluster& c) {
  std::vector<std::string> s;
  for (uint32_t i = 0; i < c.size(); ++i) s.push_back(c.node(i).socket());
  return s;
}

std::vector<std::string> NodeNames(Cluster& c) {
  std::vector<std::string> s;
  for (uint32_t i = 0; i < c.size(); ++i) s.push_back(c.name(i));
  return s;
}

std::vector<uint32_t> ConsecutivePlacement(uint32_t nodes, uint32_t ppn) {
  std::vector<uint32_t> rn;
  for (uint32_t n = 0; n < nodes; ++n) rn.insert(rn.end(), ppn, n);
  return rn;
}

}  // namespace ohio::testing
