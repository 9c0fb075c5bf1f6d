// ohiod under a service manager's eyes: with NOTIFY_SOCKET and WATCHDOG_USEC set, it sends
// READY=1 once it serves, WATCHDOG=1 while its progress engine answers, RELOADING=1 and READY=1
// around a SIGHUP, and STOPPING=1 when told to stop; all received here on a real datagram
// socket, as systemd would.
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/harness/daemon_fixture.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    bound_ = bind(fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) == 0;
    struct timeval tv = {0, 100 * 1000};  // each receive is bounded; the callers' deadlines add up
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }

  // Receives messages until one has the line `line` (e.g. "READY=1"); false at the deadline.
  // Every message received is kept in `seen`.
  bool WaitFor(const std::string& line, seconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < end) {
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) continue;
      const std::string msg(buf, static_cast<size_t>(n));
      seen.push_back(msg);
      if (("\n" + msg + "\n").find("\n" + line + "\n") != std::string::npos) return true;
    }
    return false;
  }
  std::string All() const {
    std::string s;
    for (const auto& m : seen) s += "[" + m + "]\n";
    return s;
  }

  std::vector<std::string> seen;

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(SystemdNotify, ReadyWatchdogReloadAndStopArriveOnTheNotifySocket) {
  TempDir dir;
  NotifySocket notify(dir.file("notify.sock"));
  ASSERT_TRUE(notify.bound());
  // The daemon inherits these (as from systemd); nothing else in this test starts processes.
  setenv("NOTIFY_SOCKET", dir.file("notify.sock").c_str(), 1);
  setenv("WATCHDOG_USEC", "200000", 1);
  Daemon daemon(dir);
  const bool started = daemon.Start();
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  ASSERT_TRUE(started) << daemon.Log();

  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(10))) << notify.All() << daemon.Log();
  const std::string ready = notify.seen.back();
  EXPECT_NE(ready.find("STATUS=0 groups"), std::string::npos) << ready;
  ASSERT_TRUE(notify.WaitFor("WATCHDOG=1", seconds(10))) << notify.All() << daemon.Log();
  // It keeps coming: the watchdog is fed, not pinged once.
  ASSERT_TRUE(notify.WaitFor("WATCHDOG=1", seconds(10))) << notify.All();
  EXPECT_NE(daemon.Log().find("systemd watchdog every 200 ms"), std::string::npos) << daemon.Log();

  ASSERT_EQ(kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(notify.WaitFor("RELOADING=1", seconds(10))) << notify.All();
  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(10))) << notify.All();

  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
  ASSERT_TRUE(notify.WaitFor("STOPPING=1", seconds(10))) << notify.All();
}

}  // namespace
}  // namespace ohio::testing
