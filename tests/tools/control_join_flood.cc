// A hostile local client for tests of the control thread's fairness: --connections threads,
// each on its own connection to the control socket, say hello, then send JoinGroup after
// JoinGroup for a group of --ranks ranks all placed on node --node (1 MiB for a million ranks),
// reading each answer, until --duration-ms has passed. A connection the daemon closes is made
// again. Prints "started" once every connection said hello, and at the end
// "join flood: N joins sent, R refused, D disconnected".
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/framed_socket.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/control.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

// A connection that said hello and was answered, or -1.
int Greeted(const std::string& socket_path, Clock::time_point end) {
  auto fd = ohio::ConnectUnix(socket_path);
  if (!fd.ok()) return -1;
  ohio::control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(ohio::kControlProtocolVersion);
  std::string reply;
  std::vector<int> fds;
  if (!ohio::SendFrame(fd.value(), hello.SerializeAsString(), {}, end).ok() ||
      !ohio::ReceiveFrame(fd.value(), 1 << 20, &reply, &fds, end).ok()) {
    close(fd.value());
    return -1;
  }
  return fd.value();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("control_join_flood");
  std::string socket_path;
  std::string node;
  uint32_t connections = 16;
  uint32_t ranks = 1u << 20;
  uint32_t duration_ms = 10000;
  app.add_option("--socket", socket_path)->required();
  app.add_option("--node", node)->required();
  app.add_option("--connections", connections);
  app.add_option("--ranks", ranks);
  app.add_option("--duration-ms", duration_ms);
  CLI11_PARSE(app, argc, argv);

  ohio::control::ClientMessage m;
  auto* join = m.mutable_join();
  join->set_key(std::string(16, '\x5a'));
  join->set_size(ranks);
  join->set_rank(0);
  join->add_node_names(node);
  join->mutable_rank_node()->Resize(static_cast<int>(ranks), 0);
  const std::string payload = m.SerializeAsString();

  const auto end = Clock::now() + std::chrono::milliseconds(duration_ms);
  std::atomic<uint64_t> sent{0}, refused{0}, disconnected{0};
  std::atomic<uint32_t> ready{0};
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < connections; ++i) {
    threads.emplace_back([&] {
      int fd = Greeted(socket_path, end);
      ++ready;
      while (Clock::now() < end) {
        if (fd < 0) {
          fd = Greeted(socket_path, end);
          if (fd < 0) continue;
        }
        ++sent;
        std::string reply;
        std::vector<int> fds;
        ohio::control::DaemonMessage answer;
        if (!ohio::SendFrame(fd, payload, {}, end).ok() || !ohio::ReceiveFrame(fd, 1 << 20, &reply, &fds, end).ok() ||
            !answer.ParseFromString(reply)) {
          ++disconnected;
          close(fd);
          fd = -1;
          continue;
        }
        for (int f : fds) close(f);
        if (answer.has_error()) ++refused;
      }
      if (fd >= 0) close(fd);
    });
  }
  while (ready.load() < connections && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::printf("started\n");
  std::fflush(stdout);
  for (auto& t : threads) t.join();
  std::printf("join flood: %llu joins sent, %llu refused, %llu disconnected\n",
              static_cast<unsigned long long>(sent.load()), static_cast<unsigned long long>(refused.load()),
              static_cast<unsigned long long>(disconnected.load()));
  return 0;
}
