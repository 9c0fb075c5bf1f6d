// One group (communicator) as this node's daemon sees it: what it is (its spec, shape, owner and
// tables), the shared segment its local ranks map and the doorbell they ring, who is attached,
// where its segment was placed, and whether it failed. Its round driver (round_driver.h), which
// it owns, is what the progress engine moves it with.
//
// Threading: what the group is does not change once it is created, and any thread reads it.
// Membership (members(), placement) is changed by the control thread under the registry's lock.
// The segment's state (rounds, failure) is read by any thread and written by the round driver
// alone, on the progress engine thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/group_spec.h"
#include "daemon/engine/rank_memory.h"
#include "daemon/engine/round_driver.h"
#include "daemon/engine/segment_cache.h"
#include "daemon/engine/tag_pool.h"
#include "daemon/host/segment_placement.h"
#include "daemon/ops/internode_policy.h"
#include "daemon/ops/selection_policy.h"
#include "daemon/transport/transport.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

std::string KeyHex(const GroupKey& key);

struct Member {
  bool attached = false;
  bool departed = false;
  pid_t pid = 0;
};

class Group {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates the segment and the doorbell. A single-node group is ready for round 1 at once;
  // a group spanning nodes registers its segment with the transport (or takes `reused`, a
  // cached one of its key, already registered) under `tag` and is ready once every other
  // node's daemon has told it its own tag and SRB (SetPeer). Its segment goes back to `cache`
  // when the group is destroyed. `internode`: the table its daemons choose inter-node algorithms by;
  // `selection`: the table its ranks choose which calls ohio serves by (handed to them at join).
  // Every other node of the group must hold the same two (checked at setup).
  static Result<std::unique_ptr<Group>> Create(GroupSpec spec, GroupShape shape, uid_t owner, InterNodePolicy internode,
                                               SelectionPolicy selection,
                                               uint64_t ssb_bytes, uint64_t srb_bytes, uint64_t min_slice_bytes,
                                               uint32_t timeout_ms, std::optional<uint32_t> tag,
                                               std::shared_ptr<TagPool> tags, Transport* transport,
                                               std::shared_ptr<SegmentCache> cache,
                                               std::optional<RegisteredSegment> reused);
  ~Group();

  const GroupSpec& spec() const { return spec_; }
  const GroupShape& shape() const { return shape_; }
  const std::string& key_hex() const { return key_hex_; }
  uid_t owner() const { return owner_; }
  const InterNodePolicy& internode_policy() const { return internode_; }
  const InterNodeTable& internode_table() const { return internode_.table; }
  // The selection table the group was created with; a reload does not change it.
  const SelectionPolicy& selection_policy() const { return selection_; }
  uint32_t local_ranks() const { return shape_.ppn(spec_.node); }
  uint32_t tag() const { return tag_; }
  uint64_t srb_key() const { return srb_key_; }  // the segment's region with the transport
  uint64_t srb_offset() const { return segment_.header()->srb_offset; }
  uint64_t ssb_bytes() const { return segment_.layout().ssb_bytes; }
  uint64_t srb_bytes() const { return segment_.layout().srb_bytes; }
  uint64_t min_slice_bytes() const { return min_slice_bytes_; }  // this node's, as configured
  // Every other node answered for the group and this node's data connections to them are up
  // (the peer bootstrap's thread sets it; any thread reads it).
  void set_opened_here() { opened_here_.store(true, std::memory_order_release); }
  bool opened_here() const { return opened_here_.load(std::memory_order_acquire); }
  bool spans_nodes() const { return shape_.nodes() > 1; }
  // What the progress engine moves the group with (round_driver.h: its thread alone, but for
  // AttachRankMemory).
  RoundDriver& rounds() { return *rounds_; }
  const RoundDriver& rounds() const { return *rounds_; }
  uint32_t group_rank(uint32_t local) const { return shape_.rank_at(spec_.node, local); }
  // "rank R (who) left the group" or "... disconnected from ohiod without leaving the group".
  std::string Departure(uint32_t local, bool clean, const std::string& who) const {
    return "rank " + std::to_string(group_rank(local)) + " (" + who + ") " +
           (clean ? "left the group" : "disconnected from ohiod without leaving the group");
  }
  int segment_fd() const { return segment_.fd(); }
  int doorbell_fd() const { return doorbell_fd_; }
  uint64_t segment_bytes() const { return segment_.bytes(); }
  uint32_t timeout_ms() const { return static_cast<uint32_t>(timeout_.count()); }
  SegmentHeader* header() const { return segment_.header(); }
  // Rounds fully completed so far (readable from any thread).
  uint64_t rounds_completed() const;
  bool failed() const;
  // Why it failed, once failed(): what its ranks are told, less "; the group is closed".
  std::string failure() const;
  Code failure_code() const;

  // Guarded by the registry's lock.
  std::vector<Member>& members() { return members_; }
  // The first departure of a local rank whose connection closed without a LeaveGroup (Departure's
  // text), or empty: the group's failure as the progress engine will give it, which takes the
  // departures in the order the control thread posts them (ProgressEngine::MemberGone). The
  // control thread, which may forget the group before the engine has run, reads it from here.
  // Guarded by the registry's lock.
  std::string& first_gone_without_leaving() { return first_gone_without_leaving_; }
  // Local rank l joined: the address space the daemon moves its nonblocking calls' data from
  // and into, or why it may not (rank_memory.h).
  void Attached(uint32_t l, RankMemoryAccess memory) { rounds_->AttachRankMemory(l, std::move(memory)); }
  // Every local rank has joined (and may have left since).
  bool AllJoined() const {
    for (const Member& m : members_) {
      if (!m.attached && !m.departed) return false;
    }
    return true;
  }
  Clock::time_point created_at() const { return created_at_; }
  // Where its segment was placed, once every local rank joined (guarded by the registry's lock).
  const SegmentPlacement& placement() const { return placement_; }
  void set_placement(SegmentPlacement p) { placement_ = std::move(p); }

 private:
  Group() = default;

  GroupSpec spec_;
  GroupShape shape_;
  std::string key_hex_;
  uid_t owner_ = 0;
  InterNodePolicy internode_;
  SelectionPolicy selection_;
  Segment segment_;
  int doorbell_fd_ = -1;
  std::chrono::milliseconds timeout_{0};
  Clock::time_point created_at_;
  std::string first_gone_without_leaving_;
  std::vector<Member> members_;
  SegmentPlacement placement_;
  uint32_t tag_ = 0;
  std::shared_ptr<TagPool> tags_;  // the tag is returned when the group is destroyed
  uint64_t srb_key_ = 0;
  uint64_t min_slice_bytes_ = 0;  // this node's configured minimum slice
  std::shared_ptr<SegmentCache> cache_;  // takes the registered segment back (groups spanning nodes)
  SegmentCacheKey cache_key_;
  std::atomic<bool> opened_here_{false};
  std::unique_ptr<RoundDriver> rounds_;  // points into the segment: destroyed first
};

}  // namespace ohio
