// An environment variable set for a test's scope (the rank and daemon processes it starts
// inherit it), and unset again when the scope ends.
#pragma once

#include <cstdlib>
#include <string>

namespace ohio::testing {

class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
};

}  // namespace ohio::testing
