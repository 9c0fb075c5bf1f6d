// RankMemory (daemon/engine/rank_memory.h) against a real child process: pieces in any order, runs of
// adjacent remote pieces, more pieces than one system call takes, a piece that is not mapped,
// and an address space that is gone after an exec or an exit. The unprivileged and setuid
// cases, which need another uid, are tests/integration/limits/rank_memory_test.cc.
#include "daemon/engine/rank_memory.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <vector>

namespace ohio {
namespace {

// A child sharing nothing with the test but a copy of `region` (fork), waiting on a pipe: what
// it holds is what the test wrote into it through RankMemory, read back through RankMemory.
class Child {
 public:
  explicit Child(bool exec_after_go = false) {
    EXPECT_EQ(pipe(go_), 0);
    pid_ = fork();
    if (pid_ == 0) {
      char c;
      if (read(go_[0], &c, 1) == 1 && exec_after_go) execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(0);
    }
  }
  ~Child() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  void Go() { EXPECT_EQ(write(go_[1], "g", 1), 1); }

 private:
  int go_[2];
  pid_t pid_;
};

alignas(4096) uint8_t region[64 * 4096];

std::shared_ptr<const RankMemory> Open(const Child& child) {
  auto m = RankMemory::Open(child.pid(), -1, getuid(), getgid());
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m.value() : nullptr;
}

// Polls `moved` until it says the address space is gone (5 s at most).
template <typename F>
bool GoneWithin5s(F moved) {
  for (int i = 0; i < 500; ++i) {
    errno = 0;
    if (moved() == 0 && errno == ESRCH) return true;
    usleep(10000);
  }
  return false;
}

TEST(RankMemory, PiecesInAnyOrderAndMoreThanOneCallTakesLandWhereTheyBelong) {
  Child child;
  auto memory = Open(child);
  ASSERT_NE(memory, nullptr);
  // 3,000 pieces of 7 bytes, adjacent in the child (3 runs cut at IOV_MAX), taken from a local
  // buffer in reverse order; then 100 pieces with gaps between them, one call each.
  constexpr size_t kPieces = 3000, kBytes = 7;
  static_assert(kPieces > 2 * IOV_MAX, "more than one system call's pieces");
  std::vector<uint8_t> source(kPieces * kBytes);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 13 + 1);
  std::vector<iovec> local, remote;
  for (size_t p = 0; p < kPieces; ++p) {
    local.push_back({source.data() + (kPieces - 1 - p) * kBytes, kBytes});
    remote.push_back({region + p * kBytes, kBytes});
  }
  for (size_t p = 0; p < 100; ++p) {
    local.push_back({source.data() + p, 3});
    remote.push_back({region + 40000 + p * 10, 3});
  }
  ASSERT_EQ(memory->Transfer(local, remote, true), static_cast<ssize_t>(kPieces * kBytes + 300));
  // Read back whole, in one piece, and compare with where each piece must be.
  std::vector<uint8_t> back(41000);
  ASSERT_EQ(memory->Transfer({{back.data(), back.size()}}, {{region, back.size()}}, false), 41000);
  for (size_t p = 0; p < kPieces; ++p) {
    for (size_t b = 0; b < kBytes; ++b) {
      ASSERT_EQ(back[p * kBytes + b], source[(kPieces - 1 - p) * kBytes + b]) << "piece " << p;
    }
  }
  for (size_t p = 0; p < 100; ++p) {
    for (size_t b = 0; b < 10; ++b) ASSERT_EQ(back[40000 + p * 10 + b], b < 3 ? source[p + b] : 0) << "gap piece " << p;
  }
  // Nothing of it was written here: the child's region is its own.
  EXPECT_EQ(region[0], 0);
}

TEST(RankMemory, AnAddressNotMappedStopsTheMoveWithEfault) {
  Child child;
  auto memory = Open(child);
  ASSERT_NE(memory, nullptr);
  uint8_t byte = 0;
  errno = 0;
  EXPECT_EQ(memory->Transfer({{&byte, 1}}, {{reinterpret_cast<void*>(4096), 1}}, false), -1);
  EXPECT_EQ(errno, EFAULT);
  // Half of a move mapped, half not: the mapped half moves, and the move says where it stopped.
  uint8_t* page = static_cast<uint8_t*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(page, MAP_FAILED);
  munmap(page + 4096, 4096);
  Child holes;  // forked after the unmap: the same hole
  auto m2 = Open(holes);
  ASSERT_NE(m2, nullptr);
  std::vector<uint8_t> buffer(8192);
  errno = 0;
  EXPECT_EQ(m2->Transfer({{buffer.data(), 8192}}, {{page, 8192}}, false), 4096);
  EXPECT_EQ(errno, EFAULT);
  munmap(page, 4096);
}

TEST(RankMemory, AfterAnExecNothingMovesAndTheProcessIsStillThere) {
  Child child(/*exec_after_go=*/true);
  auto memory = Open(child);
  ASSERT_NE(memory, nullptr);
  uint8_t byte = 0;
  ASSERT_EQ(memory->Transfer({{&byte, 1}}, {{region, 1}}, false), 1);
  child.Go();
  EXPECT_TRUE(GoneWithin5s([&] { return memory->Transfer({{&byte, 1}}, {{region, 1}}, false); }));
  EXPECT_TRUE(GoneWithin5s([&] { return memory->Transfer({{&byte, 1}}, {{region, 1}}, true); }));
  EXPECT_FALSE(memory->Exited());
}

TEST(RankMemory, AfterAnExitNothingMovesAndTheProcessIsGone) {
  Child child;
  auto memory = Open(child);
  ASSERT_NE(memory, nullptr);
  child.Go();
  uint8_t byte = 0;
  EXPECT_TRUE(GoneWithin5s([&] { return memory->Transfer({{&byte, 1}}, {{region, 1}}, false); }));
  EXPECT_TRUE(memory->Exited());
}

TEST(RankMemory, AProcessAlreadyGoneIsNotOpened) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  auto memory = RankMemory::Open(pid, -1, getuid(), getgid());
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().code(), Code::kGroupFailed);
  EXPECT_EQ(memory.status().message(), "process " + std::to_string(pid) + " is gone");
}

}  // namespace
}  // namespace ohio
