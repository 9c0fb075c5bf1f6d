#include "daemon/ops/live_config.h"

#include <ctime>

namespace ohio {
namespace {

std::string Now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  struct tm tm;
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Keys(const std::vector<ConfigChange>& changes) {
  std::string s;
  for (const auto& c : changes) s += (s.empty() ? "" : ", ") + c.key;
  return s;
}

}  // namespace

DaemonConfig LiveConfig::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::map<std::string, std::string> LiveConfig::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

std::string LiveConfig::last_reload() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_reload_;
}

LiveConfig::Reload LiveConfig::Apply(const DaemonConfig& next) {
  std::lock_guard<std::mutex> lock(mu_);
  Reload r;
  for (ConfigChange& c : DiffConfig(current_, next)) (IsReloadable(c.key) ? r.applied : r.need_restart).push_back(c);
  ApplyReloadable(next, &current_);
  current_.config_file = next.config_file;
  // What is left different needs a restart; a key set back to its running value is no longer pending.
  pending_.clear();
  for (const ConfigChange& c : DiffConfig(current_, next)) pending_[c.key] = c.to;
  last_reload_ =
      "reloaded at " + Now() + ": " + (r.applied.empty() ? "no change applied" : "applied " + Keys(r.applied));
  if (!r.need_restart.empty()) last_reload_ += "; needs a restart: " + Keys(r.need_restart);
  return r;
}

void LiveConfig::Failed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  last_reload_ = "reload failed at " + Now() + ": " + why + "; the settings in force are unchanged";
}

}  // namespace ohio
