// How a control connection's reader names a daemon that went away: whether the daemon closed
// the connection cleanly or reset it (closing with the request unread, as one killed in the
// middle of a join does), the rank must be told "daemon connection lost", not a protocol error.
#include "common/framed_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace ohio {
namespace {

TEST(FramedSocket, DaemonClosingTheConnectionIsDaemonLost) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  close(sv[1]);
  std::string payload;
  std::vector<int> fds;
  Status s = ReceiveFrame(sv[0], 1024, &payload, &fds);
  EXPECT_EQ(s.code(), Code::kDaemonLost) << s.message();
  EXPECT_EQ(s.message(), "connection closed by peer");
  close(sv[0]);
}

TEST(FramedSocket, DaemonResettingTheConnectionIsDaemonLost) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_TRUE(SendFrame(sv[0], "a request the daemon never reads").ok());
  close(sv[1]);  // with the request unread: the reader gets ECONNRESET, not end of file
  std::string payload;
  std::vector<int> fds;
  Status s = ReceiveFrame(sv[0], 1024, &payload, &fds);
  EXPECT_EQ(s.code(), Code::kDaemonLost) << s.message();
  EXPECT_EQ(s.message(), "connection reset by peer");
  close(sv[0]);
}

}  // namespace
}  // namespace ohio
