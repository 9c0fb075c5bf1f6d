#include "tests/soak/port_garbage.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <vector>

namespace ohio::soak {
namespace {

void PutLe32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}
void PutLe64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

// The data port's 32-byte header (daemon/transport/tcp/tcp_frame.h): "OH" and a type, an
// immediate, a key, an offset, a length.
std::string DataHeader(uint32_t type, uint64_t key, uint64_t offset, uint64_t bytes) {
  std::string h;
  PutLe32(&h, 0x4f480000u | type);
  PutLe32(&h, 0);
  PutLe64(&h, key);
  PutLe64(&h, offset);
  PutLe64(&h, bytes);
  return h;
}

std::vector<std::string> Payloads(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> length(1, 4096);
  std::string noise;
  for (size_t i = length(rng); i > 0; --i) noise.push_back(static_cast<char>(byte(rng)));
  std::string huge_frame;
  PutLe32(&huge_frame, 0xffffffffu);
  huge_frame += noise.substr(0, 64);
  const std::string http2 = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + noise;
  const std::string put_unnamed = DataHeader(2, rng(), 0, 1 << 20) + noise;
  const std::string hello = DataHeader(1, 0, 0, 13) + "garbage-node!" + DataHeader(2, rng(), 0, 1 << 30) + noise;
  return {noise, huge_frame, http2, put_unnamed, hello, "", noise.substr(0, 3)};
}

// Writes what the socket takes (never blocking long), gives the daemon a moment to read, closes.
void Feed(int fd, const std::string& payload) {
  size_t sent = 0;
  while (sent < payload.size()) {
    struct pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 100) <= 0) break;
    ssize_t n = send(fd, payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  struct pollfd p = {fd, POLLIN, 0};
  poll(&p, 1, 5);
  close(fd);
}

GarbageSent SendAll(const std::function<int()>& connect_one, std::mt19937_64& rng) {
  GarbageSent g;
  for (const std::string& payload : Payloads(rng)) {
    const int fd = connect_one();
    if (fd < 0) {
      ++g.refused;
      continue;
    }
    Feed(fd, payload);
    ++g.connections;
  }
  return g;
}

}  // namespace

GarbageSent SendGarbageToUnix(const std::string& path, std::mt19937_64& rng) {
  return SendAll(
      [&] {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un addr = {};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
        if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
          close(fd);
          return -1;
        }
        return fd;
      },
      rng);
}

GarbageSent SendGarbageToTcp(int port, std::mt19937_64& rng) {
  return SendAll(
      [&] {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in addr = {};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
          close(fd);
          return -1;
        }
        return fd;
      },
      rng);
}

}  // namespace ohio::soak
