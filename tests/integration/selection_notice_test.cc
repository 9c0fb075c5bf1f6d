// What a client decides calls by before it joins a group, against a real ohiod: the hello hands
// every client the selection table new groups get, with a page (the selection notice) whose
// generation a SIGHUP that changes the table moves on. Any local user may read the page and none
// may write it. A client adds its communicators' hand-backs to ohiod's counters without a group
// in a page of its own, which ohiod folds when asked and when the connection closes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <fstream>

#include "client/libohio/ohio.h"
#include "client/libohio/ohio.hpp"
#include "common/framed_socket.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/control.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/selection_tables.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

constexpr auto kSettle = std::chrono::seconds(10);
constexpr char kFirstTable[] = "alltoall any any any 1-1KiB mpi\nany any any any any ohio\n";
constexpr char kSecondTable[] = "any any any any any mpi\n";


// A connection that has said hello, by hand: the reply and the descriptors it carried.
struct RawHello {
  int fd = -1;
  control::HelloReply reply;
  std::vector<int> fds;
  ~RawHello() {
    for (int f : fds) close(f);
    if (fd >= 0) close(fd);
  }
};

void SayHello(const std::string& socket, RawHello* h) {
  auto connected = ConnectUnix(socket);
  ASSERT_TRUE(connected.ok()) << connected.status().message();
  h->fd = connected.value();
  struct timeval tv = {10, 0};  // no read may hang the test
  setsockopt(h->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  ASSERT_TRUE(SendFrame(h->fd, hello.SerializeAsString()).ok());
  std::string payload;
  ASSERT_TRUE(ReceiveFrame(h->fd, 1 << 20, &payload, &h->fds).ok());
  control::DaemonMessage m;
  ASSERT_TRUE(m.ParseFromString(payload) && m.has_hello()) << m.DebugString();
  h->reply = m.hello();
}

// The generation a mapped selection notice shows (its second word).
uint64_t GenerationOf(const void* page) {
  return reinterpret_cast<const std::atomic<uint64_t>*>(static_cast<const char*>(page) + 8)->load();
}

TEST(SelectionNotice, HelloGivesTheTableAndAPageOnlyTheDaemonWrites) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << kFirstTable;
  Daemon daemon(dir, {"--selection-table", table});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();

  RawHello h;
  SayHello(daemon.socket(), &h);
  ASSERT_TRUE(h.reply.has_selection()) << h.reply.DebugString();
  EXPECT_EQ(h.reply.selection().table(), CanonicalSelectionTable(kFirstTable));
  EXPECT_EQ(h.reply.selection().transport(), "tcp");
  EXPECT_EQ(h.reply.selection().digest(), SelectionTableDigestOf(kFirstTable));
  const uint64_t first = h.reply.selection().generation();
  ASSERT_EQ(h.fds.size(), 2u) << "the selection notice and the hand-back page";
  const int page_fd = h.fds[0];

  // A hostile client holds the descriptor itself: it may read the page, and nothing else.
  errno = 0;
  EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  const char garbage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  errno = 0;
  EXPECT_EQ(pwrite(page_fd, garbage, sizeof(garbage), 8), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(ftruncate(page_fd, 0), -1);
  EXPECT_EQ(fcntl(page_fd, F_ADD_SEALS, 0), -1);  // sealed against further seals too (F_SEAL_SEAL)
  const std::string via_proc = "/proc/self/fd/" + std::to_string(page_fd);
  const int reopened = open(via_proc.c_str(), O_RDWR);
  if (reopened >= 0) {
    EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, reopened, 0), MAP_FAILED);
    close(reopened);
  }
  void* page = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, page_fd, 0);
  ASSERT_NE(page, MAP_FAILED) << errno;
  EXPECT_EQ(mprotect(page, 4096, PROT_READ | PROT_WRITE), -1);
  EXPECT_EQ(GenerationOf(page), first);

  // libohio's view: the same table and generation, from the hello.
  ohio_client* client = nullptr;
  ASSERT_EQ(ohio_connect(daemon.socket().c_str(), &client), OHIO_OK) << ohio_last_error();
  const char* text = nullptr;
  const char* transport = nullptr;
  const char* digest = nullptr;
  uint64_t generation = 0;
  ASSERT_EQ(ohio_client_selection(client, &text, &transport, &digest, &generation), OHIO_OK) << ohio_last_error();
  EXPECT_EQ(text, CanonicalSelectionTable(kFirstTable));
  EXPECT_STREQ(transport, "tcp");
  EXPECT_EQ(digest, SelectionTableDigestOf(kFirstTable));
  EXPECT_EQ(generation, first);

  // A SIGHUP that reads the same table moves nothing; one that changes it moves the generation,
  // and the client then asks for the table again.
  ASSERT_TRUE(ReloadSelectionTable(daemon, table, kFirstTable)) << daemon.Log();
  EXPECT_EQ(GenerationOf(page), first);
  ASSERT_TRUE(ReloadSelectionTable(daemon, table, kSecondTable)) << daemon.Log();
  EXPECT_EQ(GenerationOf(page), first + 1);
  const char* old_text = text;
  ASSERT_EQ(ohio_client_selection(client, &text, &transport, &digest, &generation), OHIO_OK) << ohio_last_error();
  EXPECT_EQ(text, CanonicalSelectionTable(kSecondTable));
  EXPECT_EQ(digest, SelectionTableDigestOf(kSecondTable));
  EXPECT_EQ(generation, first + 1);
  EXPECT_EQ(old_text, CanonicalSelectionTable(kFirstTable)) << "a table once given lives as long as the client";
  ohio_disconnect(client);

  // The C++ layer gives the same, to a client connected after the SIGHUP.
  ohio::Client cxx;
  ASSERT_TRUE(ohio::Client::Connect(daemon.socket(), &cxx).ok()) << ohio_last_error();
  std::string cxx_table, cxx_transport, cxx_digest;
  uint64_t cxx_generation = 0;
  ASSERT_TRUE(cxx.Selection(&cxx_table, &cxx_transport, &cxx_digest, &cxx_generation).ok()) << ohio_last_error();
  EXPECT_EQ(cxx_table, CanonicalSelectionTable(kSecondTable));
  EXPECT_EQ(cxx_digest, SelectionTableDigestOf(kSecondTable));
  EXPECT_EQ(cxx_transport, "tcp");
  EXPECT_EQ(cxx_generation, first + 1);
  munmap(page, 4096);
}

TEST(SelectionNotice, HandBacksWithoutAGroupAreCountedFromTheClientsPage) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ohio_client* client = nullptr;
  ASSERT_EQ(ohio_connect(daemon.socket().c_str(), &client), OHIO_OK) << ohio_last_error();
  EXPECT_EQ(ohio_client_count_handed_back_calls(client, OHIO_FUNCTION_ALLTOALLV, OHIO_HANDED_BACK_NOT_SUPPORTED, 7),
            OHIO_OK);
  EXPECT_EQ(ohio_client_count_handed_back_calls(client, OHIO_FUNCTION_ALLTOALL, OHIO_HANDED_BACK_SELECTION_TABLE, 5),
            OHIO_OK);
  EXPECT_EQ(ohio_client_count_handed_back_calls(client, 5, 0, 1), OHIO_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(ohio_last_error(), "ohio_client_count_handed_back_calls: function 5 or reason 0 is out of range");
  // In the page: counted by the time ohiod is asked, with no message sent.
  admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(HandedBack(c, "alltoallv", "not_supported"), 7) << c.DebugString();
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), 5);
  EXPECT_EQ(c.groups_created(), 0u);
  EXPECT_EQ(c.collectives_served(), 0u);
  // Counts added just before the connection closes are folded with its page, once.
  EXPECT_EQ(ohio_client_count_handed_back_calls(client, OHIO_FUNCTION_ALLTOALL, OHIO_HANDED_BACK_SELECTION_TABLE, 2),
            OHIO_OK);
  ohio_disconnect(client);
  EXPECT_TRUE(WaitUntil(
      [&] { return HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table") == 7; }, kSettle));
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table"), 7);
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoallv", "not_supported"), 7);

  // A hostile client holds its page: it may set its counts back (which takes nothing away from
  // the daemon's) or up, but not truncate the page under the daemon's mapping.
  RawHello h;
  SayHello(daemon.socket(), &h);
  ASSERT_EQ(h.fds.size(), 2u);
  const int page_fd = h.fds[1];
  EXPECT_EQ(ftruncate(page_fd, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(ftruncate(page_fd, 1 << 20), -1);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
  ASSERT_NE(page, MAP_FAILED) << errno;
  // Its words: the magic number, then the counts by function and reason (alltoall's first).
  auto* counts = reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(page) + 8);
  counts[0].store(3);  // alltoall, selection_table
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table"), 10);
  counts[0].store(1);  // set back: adds nothing
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table"), 10);
  counts[0].store(4);  // past the most it counted: adds the difference
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table"), 11);
  munmap(page, 4096);
  close(h.fd);
  h.fd = -1;
  // ohiod folds the closed connection's page and still answers.
  EXPECT_TRUE(WaitUntil([&] { return daemon.running() && QueryStatus(daemon.admin_socket()).ok; }, kSettle));
  EXPECT_EQ(HandedBack(QueryCounters(daemon.admin_socket()), "alltoall", "selection_table"), 11);
}

}  // namespace
}  // namespace ohio::testing
