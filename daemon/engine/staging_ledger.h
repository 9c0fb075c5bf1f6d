// The memory ohiod holds for each uid beyond its groups' shared segments: the staging areas of
// the nonblocking calls the engine is moving for it (nonblocking_alltoall.h). Counted against
// the same limits as the segments: memory-limit over all uids, and user-memory-percent of it
// for one uid. The control thread tells the ledger each uid's segment bytes as it admits and
// forgets groups, and adds the staging to what it admits against; the engine takes staging here.
// Any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace ohio {

class StagingLedger {
 public:
  StagingLedger(uint64_t memory_limit, uint64_t user_limit) : memory_limit_(memory_limit), user_limit_(user_limit) {}

  // The staging area a call of uid gets: `want` bytes if they fit the limits beside the uid's
  // segments and staging, else the most that does, but never less than `floor`: a call must
  // move, and a uid's calls hold at most its groups' count times `floor` above its share.
  uint64_t Take(uid_t uid, uint64_t want, uint64_t floor);
  void Give(uid_t uid, uint64_t bytes);

  // The control thread: uid's groups now hold `bytes` of shared segments in all.
  void SetSegments(uid_t uid, uint64_t bytes);

  uint64_t staging_of(uid_t uid) const;
  uint64_t staging_total() const;

 private:
  struct Use {
    uint64_t segments = 0;
    uint64_t staging = 0;
  };
  const uint64_t memory_limit_;
  const uint64_t user_limit_;
  mutable std::mutex mu_;
  std::map<uid_t, Use> users_;
  uint64_t segments_ = 0;
  uint64_t staging_ = 0;
};

}  // namespace ohio
