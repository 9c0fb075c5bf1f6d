// The two ranks of a hostile user's job that tries to make ohiod move bytes in a process the
// user may not touch (tests/integration/limits/rank_memory_test.cc).
//
// --attack exec-after-join: rank 0 joins, forks a child that keeps the group (the control
//   socket, the segment), and execs a setuid-root program (--helper: it keeps a secret and
//   writes where, tests/tools/setuid_secret.cc) under the pid ohiod saw join. The child waits
//   for the program's --ready file, then starts ohio_ialltoall with both buffers at the secret's
//   address, so that ohiod would read the secret into rank 1 and write rank 1's bytes over it.
// --attack exec-before-join: as above, but only the connection is made before the exec; the
//   child joins afterwards, so the pid that joins is already the setuid program's.
// --attack leave-a-child: rank 0 joins, forks the child and exits; the test then starts the
//   setuid program under rank 0's pid, once it is free, and writes --ready.
// --victim: rank 1, starting a call on its own buffers (bytes 0x42) and printing what it received.
// Every rank prints the outcome of its call as "rank R: code=C message", and the attacking
// child touches --go once its call is over, which lets the setuid program check its secret.
#include <CLI/CLI.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/tools/rank_placement.h"

namespace {

void Report(uint32_t rank, const ohio::CallResult& r) {
  std::printf("rank %u: code=%d %s\n", rank, r.code, r.message.c_str());
  std::fflush(stdout);
}

// The secret's address and length from --ready, once the setuid program wrote it (20 s).
bool AwaitReady(const std::string& ready, uintptr_t* address, size_t* bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(ready);
    if (in >> *address >> *bytes) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// The attacking child: starts the call at the secret's address, waits for it, then lets the
// setuid program check its secret.
int Attack(ohio::Group& group, const std::string& ready, const std::string& go, size_t bytes_per_rank) {
  uintptr_t address = 0;
  size_t bytes = 0;
  if (!AwaitReady(ready, &address, &bytes)) {
    std::printf("attacker: no --ready within 20 s\n");
    std::ofstream(go).put('\n');
    return 1;
  }
  void* secret = reinterpret_cast<void*>(address);
  ohio_request request = 0;
  ohio::CallResult r = group.Ialltoall(secret, secret, bytes_per_rank, &request);
  if (r.ok()) r = group.Wait(request);
  Report(0, r);
  std::ofstream(go).put('\n');
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("A hostile rank pointing ohio_ialltoall at another program's memory");
  RankPlacement where;
  where.AddOptions(&app);
  std::string attack, helper, secret_file, ready, go;
  bool victim = false;
  size_t bytes_per_rank = 2048;
  app.add_option("--attack", attack)->check(CLI::IsMember({"exec-after-join", "exec-before-join", "leave-a-child"}));
  app.add_flag("--victim", victim);
  app.add_option("--helper", helper, "the setuid program to exec");
  app.add_option("--secret-file", secret_file);
  app.add_option("--ready", ready);
  app.add_option("--go", go);
  app.add_option("--bytes", bytes_per_rank);
  CLI11_PARSE(app, argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  if (victim) {
    ohio::Client client;
    ohio::Group group;
    if (!where.Join(&client, &group)) return 1;
    std::vector<char> send(bytes_per_rank * where.size, 0x42), recv(bytes_per_rank * where.size, '.');
    ohio_request request = 0;
    ohio::CallResult r = group.Ialltoall(send.data(), recv.data(), bytes_per_rank, &request);
    if (r.ok()) r = group.Wait(request);
    Report(where.rank, r);
    for (char& c : recv) c = (c >= 0x20 && c < 0x7f) ? c : '.';
    std::printf("rank %u received: %s\n", where.rank, std::string(recv.data(), bytes_per_rank).c_str());
    return 0;
  }

  ohio::Client client;
  ohio::Group group;
  if (attack == "exec-before-join") {
    if (!ohio::Client::Connect(where.socket, &client).ok()) return 1;
  } else if (!where.Join(&client, &group)) {
    return 1;
  }
  std::printf("rank 0 pid %d\n", static_cast<int>(getpid()));
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    if (attack == "exec-before-join") {
      uintptr_t address = 0;
      size_t bytes = 0;
      if (!AwaitReady(ready, &address, &bytes)) return 1;  // joins only once its parent is the setuid program
      unsigned char key[OHIO_KEY_BYTES];
      ParseKey(where.key_hex, key);
      std::vector<uint32_t> rank_node(where.size, 0);
      const ohio::CallResult joined = client.Join(key, 0, {client.node_name()}, rank_node, "", &group);
      if (!joined.ok()) {
        Report(0, joined);
        std::ofstream(go).put('\n');
        return 0;
      }
    }
    return Attack(group, ready, go, bytes_per_rank);
  }
  if (attack == "leave-a-child") {
    std::fflush(stdout);
    _exit(0);  // leaving nothing: the child keeps the group; this pid is free once reaped
  }
  execl(helper.c_str(), helper.c_str(), secret_file.c_str(), ready.c_str(), go.c_str(), static_cast<char*>(nullptr));
  std::perror("exec");
  return 1;
}
