#include "tests/harness/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace ohio::testing {

std::string RunfilePath(const std::string& relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) return std::string(srcdir) + "/" + workspace + "/" + relative;
  return relative;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/ohio-test-XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p != nullptr ? p : "/tmp";
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  if (path_.rfind("/tmp/ohio-test-", 0) == 0) {
    std::string cmd = "rm -rf '" + path_ + "'";
    (void)!std::system(cmd.c_str());
  }
}

Process::Process(const std::vector<std::string>& argv, const std::string& output_file,
                 std::optional<uid_t> run_as_uid)
    : output_file_(output_file) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int out = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
      close(out);
    }
    if (run_as_uid) {
      if (setgid(*run_as_uid) != 0 || setuid(*run_as_uid) != 0) _exit(126);
    }
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (Running()) {
    Signal(SIGKILL);
    Wait(std::chrono::milliseconds(5000));
  }
}

bool Process::Running() {
  if (status_ || pid_ <= 0) return false;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    return false;
  }
  return true;
}

int Process::Wait(std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (Running()) {
    if (std::chrono::steady_clock::now() > end) {
      Signal(SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
      status_ = st;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!status_) return -1;
  if (WIFEXITED(*status_)) return WEXITSTATUS(*status_);
  if (WIFSIGNALED(*status_)) return 128 + WTERMSIG(*status_);
  return -1;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !status_) kill(pid_, sig);
}

std::string Process::Output() const {
  std::ifstream in(output_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Process::WaitForOutput(const std::string& text, std::chrono::milliseconds deadline) const {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (Output().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int CountOpenFds(pid_t pid, const std::string& needle) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (struct dirent* e = readdir(d)) {
    char target[512];
    ssize_t len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    if (std::strstr(target, needle.c_str()) != nullptr) ++n;
  }
  closedir(d);
  return n;
}

int CountMappings(pid_t pid, const std::string& needle) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  if (!in) return -1;
  int n = 0;
  std::string line;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace ohio::testing
