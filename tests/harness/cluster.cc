#include "tests/harness/cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
    : dir_(dir), ports_(FreePorts(static_cast<int>(2 * nodes))) {
  const auto& ports = ports_;
  std::vector<std::string> peers;
  for (uint32_t i = 0; i < nodes; ++i) {
    names_.push_back("n" + std::to_string(i));
    peers.push_back("--peer");
    peers.push_back(names_[i] + "=127.0.0.1:" + std::to_string(ports[2 * i]));
  }
  for (uint32_t i = 0; i < nodes; ++i) {
    std::vector<std::string> flags = {"--node-name", names_[i], "--peer-port", std::to_string(ports[2 * i]),
                                      "--data-port", std::to_string(ports[2 * i + 1])};
    flags.insert(flags.end(), peers.begin(), peers.end());
    flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
    daemons_.push_back(std::make_unique<Daemon>(dir, flags, names_[i]));
    flags_.push_back(std::move(flags));
  }
}

void Cluster::AddFlags(uint32_t i, const std::vector<std::string>& flags) {
  flags_[i].insert(flags_[i].end(), flags.begin(), flags.end());
  daemons_[i] = std::make_unique<Daemon>(dir_, flags_[i], names_[i]);
}

bool Cluster::Start() {
  // All at once: with 32 nodes, one after another would wait out each start-up in turn.
  for (uint32_t i = 0; i < size(); ++i) {
    if (!daemons_[i]->Launch()) return false;
  }
  for (uint32_t i = 0; i < size(); ++i) {
    if (!daemons_[i]->AwaitUp()) return false;
  }
  return true;
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

admin::CountersReply QueryCounters(const std::string& admin_socket) {
  auto stub = admin::Admin::NewStub(grpc::CreateChannel("unix:" + admin_socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  admin::CountersReply reply;
  stub->Counters(&ctx, admin::CountersRequest(), &reply);
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
