// ohio_daemon_gone, against a real ohiod through libohio in this process: a client learns that
// its daemon has gone (stopped, then started again: an upgrade) without a call failing first,
// and a new ohio_connect reaches the daemon that listens now; a daemon that is only stopped
// (SIGSTOP) and given up on is not taken for gone, since a new connection would wait on it too.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "client/libohio/ohio.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/scoped_env.h"
#include "tests/harness/stopped_process.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

// A group of this process alone on its node, joined under `key_seed`; null if the join failed.
ohio_group* JoinAlone(ohio_client* client, const std::string& key_seed) {
  ohio_group_spec spec = {};
  const std::string key = KeyHex(key_seed);
  for (int i = 0; i < OHIO_KEY_BYTES; ++i) {
    spec.key[i] = static_cast<unsigned char>(std::stoi(key.substr(2 * i, 2), nullptr, 16));
  }
  const char* node = ohio_node_name(client);
  const uint32_t rank_node = 0;
  spec.size = 1;
  spec.rank = 0;
  spec.num_nodes = 1;
  spec.node_names = &node;
  spec.rank_node = &rank_node;
  ohio_group* group = nullptr;
  return ohio_join(client, &spec, &group) == OHIO_OK ? group : nullptr;
}

// One call of 64 bytes to itself, checked byte for byte.
bool SelfAlltoall(ohio_group* group) {
  std::vector<unsigned char> send(64), recv(64, 0xEE);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<unsigned char>(i * 7 + 1);
  return ohio_alltoall(group, send.data(), recv.data(), send.size()) == OHIO_OK && recv == send;
}

TEST(DaemonGone, OnlyOnceTheDaemonExitedAndANewConnectReachesItsSuccessor) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ohio_client* old_client = nullptr;
  ASSERT_EQ(ohio_connect(daemon.socket().c_str(), &old_client), OHIO_OK) << ohio_last_error();
  ohio_group* old_group = JoinAlone(old_client, "gone-old");
  ASSERT_NE(old_group, nullptr) << ohio_last_error();
  EXPECT_TRUE(SelfAlltoall(old_group));
  EXPECT_EQ(ohio_daemon_gone(old_client), 0);

  ASSERT_EQ(daemon.Stop(), 0) << daemon.Log();
  EXPECT_TRUE(WaitUntil([&] { return ohio_daemon_gone(old_client) == 1; }, std::chrono::seconds(10)));
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // The old connection stays the gone daemon's: nothing reconnects behind the caller's back.
  EXPECT_EQ(ohio_daemon_gone(old_client), 1);
  EXPECT_EQ(JoinAlone(old_client, "gone-again"), nullptr);
  EXPECT_EQ(ohio_daemon_gone(nullptr), 0);

  ohio_client* new_client = nullptr;
  ASSERT_EQ(ohio_connect(daemon.socket().c_str(), &new_client), OHIO_OK) << ohio_last_error();
  EXPECT_EQ(ohio_daemon_gone(new_client), 0);
  ohio_group* new_group = JoinAlone(new_client, "gone-new");
  ASSERT_NE(new_group, nullptr) << ohio_last_error();
  EXPECT_TRUE(SelfAlltoall(new_group));
  EXPECT_EQ(ohio_leave(new_group), OHIO_OK) << ohio_last_error();
  ohio_leave(old_group);
  ohio_disconnect(new_client);
  ohio_disconnect(old_client);
}

TEST(DaemonGone, NotForAStoppedDaemonGivenUpOn) {
  const ScopedEnv timeout("OHIO_TIMEOUT_MS", "500");
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ohio_client* client = nullptr;
  ASSERT_EQ(ohio_connect(daemon.socket().c_str(), &client), OHIO_OK) << ohio_last_error();
  {
    const StoppedForScope stopped(daemon.pid());
    ASSERT_TRUE(stopped.stopped());
    EXPECT_EQ(JoinAlone(client, "gone-stopped"), nullptr);
    EXPECT_NE(std::string(ohio_last_error()).find("did not answer join within 500 ms"), std::string::npos)
        << ohio_last_error();
    EXPECT_EQ(ohio_daemon_gone(client), 0);
  }
  EXPECT_EQ(ohio_daemon_gone(client), 0);
  ohio_disconnect(client);
}

}  // namespace
}  // namespace ohio::testing
