// A stand-in for any setuid-root program holding a secret, for the tests that try to make ohiod
// read or write it on a user's behalf (tests/integration/limits/rank_memory_test.cc). Installed by the
// test as root's, mode 4755, and run by an unprivileged user: it reads a secret only root may
// read (a 0600 file of root's) into memory, writes where it keeps it (address and length) to
// --ready, then waits for --go to exist (30 s at most) and says whether its copy of the secret
// is still what the file holds: "secret intact" or "secret overwritten". Its first line gives
// its pid and effective uid, so a test can check it really runs as root where it was exec'd.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

// Page-aligned and far from anything else, so a write past it lands nowhere that matters.
alignas(4096) char secret[4096];

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: setuid_secret SECRET_FILE READY_FILE GO_FILE\n");
    return 2;
  }
  std::printf("setuid_secret pid %d euid %d\n", static_cast<int>(getpid()), static_cast<int>(geteuid()));
  std::fflush(stdout);
  std::string want;
  {
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    want = text.str();
  }
  if (want.empty() || want.size() > sizeof(secret)) {
    std::printf("setuid_secret: could not read the secret\n");
    return 1;
  }
  std::memcpy(secret, want.data(), want.size());
  {
    // Written whole, then renamed: a reader never sees half a line.
    const std::string part = std::string(argv[2]) + ".part";
    std::ofstream out(part);
    out << reinterpret_cast<uintptr_t>(secret) << " " << want.size() << "\n";
    out.close();
    chmod(part.c_str(), 0644);
    std::rename(part.c_str(), argv[2]);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (access(argv[3], F_OK) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("setuid_secret: no go within 30 s\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool intact = std::memcmp(secret, want.data(), want.size()) == 0;
  std::printf("secret %s\n", intact ? "intact" : "overwritten");
  return 0;
}
