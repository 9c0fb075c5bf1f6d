// A hostile local client for tests of ohiod's bounds: opens many connections to the control
// socket, on each (optionally) says hello, then announces a frame of --announce bytes and sends
// --send of them, never the rest. Holds every connection until --hold-ms has passed (or it is
// killed), so that the daemon must bound what it keeps for them. Prints one line once every
// connection has sent what it could: "flooded: N connections, K sent every byte, M cut off".
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/little_endian.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/control.pb.h"

namespace {

// Sends all of `bytes`; false if the daemon closed the connection first (or the send stalled).
bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (w <= 0) return false;
    sent += static_cast<size_t>(w);
  }
  return true;
}

std::string Framed(const std::string& payload) {
  std::string frame(4, '\0');
  ohio::PutLittleEndian(frame.data(), static_cast<uint32_t>(payload.size()));
  return frame + payload;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("control_flood");
  std::string socket_path;
  uint32_t connections = 1000;
  uint32_t announce = 4u << 20;
  uint32_t send_bytes = (4u << 20) - 1;
  bool hello = false;
  uint32_t hold_ms = 60000;
  app.add_option("--socket", socket_path)->required();
  app.add_option("--connections", connections);
  app.add_option("--announce", announce);
  app.add_option("--send", send_bytes);
  app.add_flag("--hello", hello);
  app.add_option("--hold-ms", hold_ms);
  CLI11_PARSE(app, argc, argv);

  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);

  ohio::control::ClientMessage m;
  m.mutable_hello()->set_protocol_version(ohio::kControlProtocolVersion);
  const std::string hello_frame = Framed(m.SerializeAsString());
  std::string partial(4, '\0');
  ohio::PutLittleEndian(partial.data(), announce);
  partial.append(send_bytes, 'x');

  std::vector<int> fds;
  uint32_t complete = 0, cut_off = 0;
  for (uint32_t i = 0; i < connections; ++i) {
    auto fd = ohio::ConnectUnix(socket_path);
    if (!fd.ok()) {
      ++cut_off;
      continue;
    }
    // A daemon that neither reads nor closes must not hang the flood: 10 s per send at most.
    struct timeval tv = {10, 0};
    setsockopt(fd.value(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fds.push_back(fd.value());
    const bool ok = (!hello || SendAll(fd.value(), hello_frame)) && SendAll(fd.value(), partial);
    ok ? ++complete : ++cut_off;
  }
  std::printf("flooded: %u connections, %u sent every byte, %u cut off\n", connections, complete, cut_off);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  for (int fd : fds) close(fd);
  return 0;
}
