// Every group this daemon serves, by key: admission (validation, ownership, memory limits),
// membership and removal. Called by the control thread; the admin service reads snapshots.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/config.h"
#include "daemon/group.h"
#include "daemon/progress_engine.h"
#include "proto/control.pb.h"

namespace ohio {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct Membership {
  std::shared_ptr<Group> group;
  uint32_t local = 0;
};

struct GroupInfo {
  std::string key_hex;
  uint32_t size = 0;
  uint32_t local_ranks = 0;
  uint32_t attached = 0;
  uid_t owner = 0;
  uint64_t rounds = 0;
  uint64_t segment_bytes = 0;
  bool failed = false;
  std::string algorithm;
};

class GroupRegistry {
 public:
  GroupRegistry(const DaemonConfig& config, ProgressEngine* engine) : config_(config), engine_(engine) {}

  // The error's code maps to a control Error code; its message goes to the client verbatim.
  Result<Membership> Join(const control::JoinGroup& join, const PeerCredentials& who,
                          control::Error::Code* refusal);
  // `clean` for a LeaveGroup; false when the member's connection closed without one.
  void Depart(const Membership& m, bool clean, const PeerCredentials& who);

  std::vector<GroupInfo> Snapshot();
  uint64_t bytes_in_use();

 private:
  Result<GroupSpec> ValidateJoin(const control::JoinGroup& join, control::Error::Code* refusal) const;

  const DaemonConfig& config_;
  ProgressEngine* engine_;
  std::mutex mu_;
  std::map<GroupKey, std::shared_ptr<Group>> groups_;
  uint64_t bytes_in_use_ = 0;
};

}  // namespace ohio
