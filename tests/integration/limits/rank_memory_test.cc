// ohiod moves a nonblocking call's bytes in the ranks' own memory, and ohiod is root: it must
// never do so in a process the rank's user may not touch (daemon/engine/rank_memory.h). A hostile
// user's job, ranks of uid nobody, aims ohio_ialltoall at a setuid-root program that holds a
// secret only root may read (tests/tools/setuid_secret.cc, installed by the test as root's,
// mode 4755):
//  - a rank that joined, then exec'd the program under the same pid, a child of it keeping
//    the group and starting the call;
//  - a rank that connected, exec'd the program, and whose child joined afterwards;
//  - a rank that joined and exited, a child keeping the group, its pid then given to the
//    program (clone3 with set_tid, so the reuse is certain, not hoped for).
// Each time the program's secret stays where it was, unread and unwritten, the other rank
// receives none of it, and both ranks get the same clear error. Real daemon, real processes.
#include <linux/sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr uid_t kNobody = 65534;
constexpr auto kDeadline = seconds(60);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string Copy(const TempDir& dir, const std::string& runfile, const std::string& name, mode_t mode) {
  const std::string path = dir.file(name);
  {
    std::ifstream in(RunfilePath(runfile), std::ios::binary);
    std::ofstream out(path, std::ios::binary);
    out << in.rdbuf();
  }
  chown(path.c_str(), 0, 0);
  chmod(path.c_str(), mode);  // after chown, which clears the setuid bit
  return path;
}

// What the hostile job needs: the rank tool and the setuid program where nobody may run them,
// a secret of root's, and a directory where the job and the program leave their signals.
struct Scene {
  explicit Scene(const TempDir& dir)
      : tool(Copy(dir, "tests/tools/memory_attack_rank", "memory_attack_rank", 0755)),
        helper(Copy(dir, "tests/tools/setuid_secret", "setuid_secret", 04755)),
        secret_file(dir.file("secret")),
        signals(dir.file("signals")) {
    chmod(dir.path().c_str(), 0755);
    std::string secret;
    while (secret.size() < 4096) secret += "TOPSECRET-";
    secret.resize(4096);
    std::ofstream(secret_file) << secret;
    chmod(secret_file.c_str(), 0600);
    mkdir(signals.c_str(), 0777);
    chmod(signals.c_str(), 0777);
  }
  std::string ready() const { return signals + "/ready"; }
  std::string go() const { return signals + "/go"; }

  std::vector<std::string> Attacker(const Daemon& d, const std::string& key, const std::string& attack) const {
    return {tool,     "--socket",      d.socket(),  "--key",   key,     "--size", "2",    "--rank", "0", "--attack",
            attack,   "--helper",      helper,      "--secret-file", secret_file, "--ready", ready(), "--go", go()};
  }
  std::vector<std::string> Victim(const Daemon& d, const std::string& key) const {
    return {tool, "--socket", d.socket(), "--key", key, "--size", "2", "--rank", "1", "--victim"};
  }

  std::string tool, helper, secret_file, signals;
};

// The victim's outcome and what it received: the same error as the attacker's, no secret.
void ExpectNothingMoved(const std::string& victim, const std::string& attacker, const std::string& why) {
  EXPECT_TRUE(Contains(victim, "rank 1: code=4 ")) << victim;
  EXPECT_TRUE(Contains(victim, why)) << victim;
  EXPECT_TRUE(Contains(victim, "rank 1 received: ")) << victim;
  EXPECT_FALSE(Contains(victim, "SECRET")) << victim;
  EXPECT_TRUE(Contains(attacker, "rank 0: code=4 ")) << attacker;
  EXPECT_TRUE(Contains(attacker, why)) << attacker;
}

// Runs the attacker's `attack` beside the victim; expects the setuid program really ran as root
// under the attacker's pid, its secret intact, and `why(attacker pid)` on both ranks.
template <typename Why>
void ExecAttackFails(const TempDir& dir, const Daemon& daemon, const Scene& scene, const std::string& attack,
                     Why why) {
  Process attacker(scene.Attacker(daemon, KeyHex(attack), attack), dir.file("attacker.out"), kNobody);
  Process victim(scene.Victim(daemon, KeyHex(attack)), dir.file("victim.out"), kNobody);
  EXPECT_EQ(victim.Wait(kDeadline), 0) << victim.Output();
  EXPECT_EQ(attacker.Wait(kDeadline), 0) << attacker.Output();
  // The attacker's pid now runs the program, as root: the attack is real.
  EXPECT_TRUE(Contains(attacker.Output(), "setuid_secret pid " + std::to_string(attacker.pid()) + " euid 0"))
      << attacker.Output();
  EXPECT_TRUE(Contains(attacker.Output(), "secret intact")) << attacker.Output();
  ExpectNothingMoved(victim.Output(), attacker.Output(), why(std::to_string(attacker.pid())));
}

TEST(RankMemory, AProgramExecdUnderAJoinedRanksPidIsNeitherReadNorWritten) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "10000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ExecAttackFails(dir, daemon, Scene(dir), "exec-after-join", [](const std::string& pid) {
    return "rank 0 (pid " + pid + ") is no longer the process that joined: it ran another program";
  });
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 0u);
  EXPECT_EQ(c.collectives_failed(), 1u);
}

TEST(RankMemory, ARankJoiningForASetuidProgramsPidGetsNoCallMovedInIt) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "10000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ExecAttackFails(dir, daemon, Scene(dir), "exec-before-join", [](const std::string& pid) {
    return "rank 0: ohiod may not read or write the memory of process " + pid +
           " with the rights of uid 65534 (Permission denied)";
  });
  EXPECT_TRUE(Contains(daemon.Log(), "nonblocking calls will not be moved")) << daemon.Log();
}

// Starts `argv` as uid nobody under pid `pid` exactly (clone3's set_tid: root may choose a
// free pid), output to `output`; -1 if the pid is taken.
pid_t SpawnUnderPid(pid_t pid, const std::vector<std::string>& argv, const std::string& output) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  struct clone_args ca = {};
  ca.exit_signal = SIGCHLD;
  ca.set_tid = reinterpret_cast<uintptr_t>(&pid);
  ca.set_tid_size = 1;
  const long child = syscall(SYS_clone3, &ca, sizeof(ca));
  if (child != 0) return static_cast<pid_t>(child);
  const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(126);
  execv(args[0], args.data());
  _exit(127);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(RankMemory, ASetuidProgramGivenAGoneRanksPidIsNeitherReadNorWritten) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "10000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const Scene scene(dir);
  Process attacker(scene.Attacker(daemon, KeyHex("leave-a-child"), "leave-a-child"), dir.file("attacker.out"),
                   kNobody);
  Process victim(scene.Victim(daemon, KeyHex("leave-a-child")), dir.file("victim.out"), kNobody);
  // The rank exits (and is reaped here), its child still holding the group.
  ASSERT_EQ(attacker.Wait(kDeadline), 0) << attacker.Output();
  const pid_t reused = attacker.pid();
  const pid_t program = SpawnUnderPid(
      reused, {scene.helper, scene.secret_file, scene.ready(), scene.go()}, dir.file("program.out"));
  ASSERT_EQ(program, reused) << "clone3 with set_tid: " << std::strerror(errno);
  int status = -1;
  for (auto deadline = std::chrono::steady_clock::now() + kDeadline; std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    if (waitpid(program, &status, WNOHANG) == program) break;
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(dir.file("program.out"));
  EXPECT_EQ(victim.Wait(kDeadline), 0) << victim.Output();
  const std::string program_out = ReadFile(dir.file("program.out"));
  EXPECT_TRUE(Contains(program_out, "setuid_secret pid " + std::to_string(reused) + " euid 0")) << program_out;
  EXPECT_TRUE(Contains(program_out, "secret intact")) << program_out;
  // The child's report is in the rank's output, which it inherited.
  ASSERT_TRUE(attacker.WaitForOutput("rank 0: code=", kDeadline)) << attacker.Output();
  const std::string why = "rank 0 (pid " + std::to_string(reused) + ") is gone";
  EXPECT_TRUE(Contains(victim.Output(), "rank 1: code=7 ")) << victim.Output();
  EXPECT_TRUE(Contains(victim.Output(), why)) << victim.Output();
  EXPECT_FALSE(Contains(victim.Output(), "SECRET")) << victim.Output();
  EXPECT_TRUE(Contains(attacker.Output(), "rank 0: code=7 ")) << attacker.Output();
  EXPECT_TRUE(Contains(attacker.Output(), why)) << attacker.Output();
}

}  // namespace
}  // namespace ohio::testing
