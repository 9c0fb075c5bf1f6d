#include "tests/harness/raw_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ohio::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int ConnectFrom(const std::string& source, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from = {};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to = {};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

bool ClosedByPeer(int fd, milliseconds deadline) {
  const auto end = Clock::now() + deadline;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
    if (left <= 0) return false;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno == ECONNRESET)) return true;
  }
}

std::vector<Clock::time_point> WhenClosedByPeer(const std::vector<int>& fds, milliseconds deadline) {
  std::vector<Clock::time_point> closed(fds.size());
  const auto end = Clock::now() + deadline;
  size_t open = fds.size();
  char buf[4096];
  while (open > 0 && Clock::now() < end) {
    std::vector<struct pollfd> polled;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (closed[i] == Clock::time_point{}) polled.push_back({fds[i], POLLIN, 0});
    }
    if (poll(polled.data(), polled.size(), 20) <= 0) continue;
    for (const auto& p : polled) {
      if (p.revents == 0) continue;
      const ssize_t r = recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) {
        const size_t i = static_cast<size_t>(std::find(fds.begin(), fds.end(), p.fd) - fds.begin());
        closed[i] = Clock::now();
        --open;
      }
    }
  }
  return closed;
}

void RaiseDescriptorLimit() {
  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace ohio::testing
