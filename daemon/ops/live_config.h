// The settings a running ohiod is using: those it started with, as far as SIGHUP has changed
// them since, and the values a reload found but could not apply (they wait for a restart).
// Read by the admin service from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/ops/config.h"

namespace ohio {

class LiveConfig {
 public:
  explicit LiveConfig(DaemonConfig startup) : current_(std::move(startup)) {}

  DaemonConfig current() const;
  // key -> the value the config sources now give, for keys that need a restart to change.
  std::map<std::string, std::string> pending() const;
  // One line on the last SIGHUP ("" before the first): what changed, or why it failed.
  std::string last_reload() const;

  struct Reload {
    std::vector<ConfigChange> applied;       // reloadable keys now in force
    std::vector<ConfigChange> need_restart;  // the running value stays until a restart
  };
  // Takes the settings a reload read: reloadable ones go into force, the others wait.
  Reload Apply(const DaemonConfig& next);
  // The reload could not read its settings; those in force stay.
  void Failed(const std::string& why);

 private:
  mutable std::mutex mu_;
  DaemonConfig current_;
  std::map<std::string, std::string> pending_;
  std::string last_reload_;
};

}  // namespace ohio
