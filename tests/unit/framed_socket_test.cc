// How a control connection's reader names a daemon that went away: whether the daemon closed
// the connection cleanly or reset it (closing with the request unread, as one killed in the
// middle of a join does), the rank must be told "daemon connection lost", not a protocol error.
// And a daemon that neither answers nor reads (stopped) holds a wait only until its deadline;
// and what the daemon's incremental reader holds: no more than a frame's bytes as they come,
// given back once a large frame is taken.
#include "common/framed_socket.h"

#include "common/little_endian.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>

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

// wait(deadline) must end with kTimeout at a deadline 200 ms away, not before, and not much later.
void ExpectTimeoutAtDeadline(const std::function<Status(Deadline)>& wait) {
  const auto start = std::chrono::steady_clock::now();
  Status s = wait(start + std::chrono::milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::milliseconds(1200));
}

TEST(FramedSocket, ASilentPeerEndsTheReceiveAtItsDeadline) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  // Half a header, then silence (a daemon stopped mid-reply).
  ASSERT_EQ(write(sv[1], "\x05\x00", 2), 2);
  ExpectTimeoutAtDeadline([&](Deadline deadline) {
    std::string payload;
    std::vector<int> fds;
    return ReceiveFrame(sv[0], 1024, &payload, &fds, deadline);
  });
  close(sv[0]);
  close(sv[1]);
}

TEST(FramedSocket, APeerThatDoesNotReadEndsTheSendAtItsDeadline) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int small = 4096;
  ASSERT_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  // Far more than the socket holds: a blocking send would wait for a reader for ever.
  const std::string big(8 << 20, 'x');
  ExpectTimeoutAtDeadline([&](Deadline deadline) { return SendFrame(sv[0], big, {}, deadline); });
  close(sv[0]);
  close(sv[1]);
}

std::string Header(uint32_t n) {
  std::string h(kFrameHeaderBytes, '\0');
  PutLittleEndian(h.data(), n);
  return h;
}

TEST(FrameReader, GrowsWithTheBytesNotTheAnnouncedLength) {
  constexpr size_t kMax = 4 << 20;
  FrameReader reader(kMax);
  const std::string chunk(64 << 10, 'x');
  const std::string first = Header(kMax) + chunk;
  reader.Append(first.data(), first.size());
  EXPECT_EQ(reader.capacity(), first.size());  // not 4 MiB ahead of the bytes
  size_t got = chunk.size();
  std::string payload;
  while (got + chunk.size() < kMax) {
    EXPECT_EQ(reader.CapacityAfterAppend(chunk.size()) >= reader.capacity(), true);
    reader.Append(chunk.data(), chunk.size());
    got += chunk.size();
    EXPECT_LE(reader.capacity(), 2 * (kFrameHeaderBytes + got));
    EXPECT_LE(reader.capacity(), kFrameHeaderBytes + kMax);  // never past the frame's end
    EXPECT_EQ(reader.Take(&payload), FrameReader::Next::kNeedMore);
  }
  const std::string rest(kMax - got, 'y');
  reader.Append(rest.data(), rest.size());
  EXPECT_EQ(reader.capacity(), kFrameHeaderBytes + kMax);
  ASSERT_EQ(reader.Take(&payload), FrameReader::Next::kFrame);
  EXPECT_EQ(payload.size(), kMax);
  EXPECT_EQ(payload.back(), 'y');
  // Its memory is given back with the frame.
  EXPECT_TRUE(reader.empty());
  EXPECT_EQ(reader.capacity(), 0u);
}

TEST(FrameReader, KeepsSmallFramesAndWhatFollowsAFrame) {
  FrameReader reader(1024);
  const std::string two = Header(3) + "abc" + Header(2) + "de" + Header(5) + "f";
  reader.Append(two.data(), two.size());
  std::string payload;
  ASSERT_EQ(reader.Take(&payload), FrameReader::Next::kFrame);
  EXPECT_EQ(payload, "abc");
  ASSERT_EQ(reader.Take(&payload), FrameReader::Next::kFrame);
  EXPECT_EQ(payload, "de");
  EXPECT_EQ(reader.Take(&payload), FrameReader::Next::kNeedMore);
  reader.Append("ghij", 4);
  ASSERT_EQ(reader.Take(&payload), FrameReader::Next::kFrame);
  EXPECT_EQ(payload, "fghij");
  const std::string big = Header(2000);
  reader.Append(big.data(), big.size());
  EXPECT_EQ(reader.Take(&payload), FrameReader::Next::kTooLarge);
  EXPECT_EQ(reader.announced(), 2000u);
}

}  // namespace
}  // namespace ohio
