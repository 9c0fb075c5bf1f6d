// A real ohiod for a test: its own sockets in a temp dir and (unless the flags say otherwise)
// ephemeral peer and data ports, started with the flags given, ready once its socket accepts,
// stopped with SIGTERM (and its exit code checked).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/harness/process.h"

namespace ohio::testing {

class Daemon {
 public:
  explicit Daemon(const TempDir& dir, std::vector<std::string> flags = {}, const std::string& name = "ohiod");
  ~Daemon();

  // False if the daemon did not come up (its log tells why).
  bool Start() { return Launch() && AwaitUp(); }
  // Start in two halves, so that many daemons start side by side: Launch runs the process,
  // AwaitUp waits (up to 60 s) until its socket accepts; false if it exited first.
  bool Launch();
  bool AwaitUp();
  // SIGTERM, then wait; returns the exit code (-1 if it had to be killed).
  int Stop();
  void Kill();
  // The program the next Launch runs, instead of the built daemon/ohiod: a test of an upgrade
  // starts a new binary where the old one ran.
  void UseBinary(std::string path) { binary_ = std::move(path); }

  const std::string& socket() const { return socket_; }
  const std::string& admin_socket() const { return admin_socket_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  bool running() { return process_ && process_->Running(); }
  std::string Log() const { return process_ ? process_->Output() : ""; }

 private:
  std::string socket_;
  std::string admin_socket_;
  std::string log_;
  std::vector<std::string> flags_;
  std::string binary_;  // empty: the built daemon/ohiod
  std::unique_ptr<Process> process_;
};

// A group key (32 hex digits) derived from a name, so each test uses its own groups.
std::string KeyHex(const std::string& seed);

}  // namespace ohio::testing
