// A real munged for a test: a key of its own (mungekey), its socket, pid, log and seed files in
// the test's temp dir, run in the foreground as a child (--force: tests run as root, which
// munged refuses otherwise), ready once its socket accepts, killed with the test. Two of them
// with different keys are two clusters: one's credentials are foreign to the other.
#pragma once

#include <memory>
#include <string>

#include "tests/harness/process.h"

namespace ohio::testing {

class Munged {
 public:
  Munged(const TempDir& dir, const std::string& name);
  ~Munged();

  // False if it did not come up (Log() tells why).
  bool Start();
  const std::string& socket() const { return socket_; }
  std::string Log() const;

 private:
  std::string dir_;
  std::string name_;
  std::string socket_;
  std::unique_ptr<Process> process_;
};

}  // namespace ohio::testing
