// At the descriptor limit, the reserve lets a listener close what is pending instead of leaving
// it queued (and its epoll loop spinning), and is held again afterwards.
#include "common/descriptor_reserve.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

namespace ohio {
namespace {

TEST(DescriptorReserve, ShedsPendingConnectionsAtTheLimit) {
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;  // an abstract name: nothing to clean up
  snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "ohio-reserve-test-%d", getpid());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(socket(AF_UNIX, SOCK_STREAM, 0));
    ASSERT_EQ(connect(clients.back(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  DescriptorReserve reserve;
  ASSERT_TRUE(reserve.held());
  // Use up every descriptor below a lowered limit.
  struct rlimit saved;
  getrlimit(RLIMIT_NOFILE, &saved);
  int highest = dup(0);
  close(highest);
  struct rlimit low = {static_cast<rlim_t>(highest + 4), saved.rlim_max};
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = dup(0)) >= 0;) filler.push_back(fd);
  EXPECT_LT(accept4(listener, nullptr, nullptr, 0), 0);
  EXPECT_EQ(errno, EMFILE);
  EXPECT_EQ(reserve.ShedPending(listener), 3);
  EXPECT_TRUE(reserve.held());
  for (int fd : filler) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  // Every client sees its connection closed.
  for (int c : clients) {
    struct pollfd p = {c, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 5000), 1);
    char byte;
    EXPECT_EQ(read(c, &byte, 1), 0);
    close(c);
  }
  close(listener);
}

}  // namespace
}  // namespace ohio
