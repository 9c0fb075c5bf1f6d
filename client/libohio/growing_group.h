// A group as the C API hands it out: a joined GroupHandle that is joined again, with larger
// buffers, once a call outgrows the ones it was sized for (shm/plan/buffer_sizing.h). A group
// joined without a hint has the daemon's configured buffers and never grows.
//
// Growth is decided after a call that succeeded, from that call's bytes per rank, which every
// rank of every node agreed on in the call: every rank decides alike without a message of its
// own. An alltoallv across nodes that took several rounds grows the group to the configured
// sizes after it; one that did not fit the buffers (kNotSupported, alike on every rank: across
// nodes it would take too many rounds; on one node a row its rank may not read in place) grows it
// at once and is tried again there. The ranks then join the group again under a key derived from the first one and the
// generation. They leave the outgrown group only after their first call on the new one: a rank
// arrives at a call only once its previous call returned, so by then no rank is still reading
// from the old segment.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "client/libohio/control_connection.h"
#include "client/libohio/group_handle.h"
#include "common/status.h"
#include "proto/control.pb.h"

namespace ohio {

class GrowingGroup {
 public:
  static Result<std::unique_ptr<GrowingGroup>> Join(ControlConnection* connection, const control::JoinGroup& join);

  Status Alltoall(const void* send, void* recv, uint64_t bytes_per_rank);
  Status Alltoallv(const VectorCall& call);
  Status OptOut();
  // Nonblocking alltoalls (GroupHandle::Ialltoall). A request names the generation it was
  // started on and its call there: a call outlives a growth, and its outcome the group it ran on.
  Status Ialltoall(const void* send, void* recv, uint64_t bytes_per_rank, uint64_t* request);
  Status Ialltoallv(const VectorCall& call, uint64_t* request);
  Status Test(uint64_t request, bool* done, std::chrono::microseconds within);
  Status Wait(uint64_t request);
  Status Check() const;
  bool Usable() const { return broken_.ok() && current_->Usable(); }
  // The current generation's selection table and transport (GroupHandle::Selection): a growth
  // joins again, and a table ohiod reloaded meanwhile comes with the new generation, alike for
  // every rank.
  Status Selection(const std::string** table, const std::string** transport);
  // In the current generation's segment (GroupHandle::CountHandedBack).
  void CountHandedBack(size_t function, HandBackReason reason, uint64_t calls) {
    current_->CountHandedBack(function, reason, calls);
  }
  // Leaves the group (and an outgrown one still held).
  Status Leave();

 private:
  GrowingGroup() = default;
  // After a call every rank made: leave the outgrown group if one is held, and join again if
  // `agreed_bytes_per_rank` outgrew the buffers.
  void AfterCall(const Status& result, uint64_t agreed_bytes_per_rank);

  ControlConnection* connection_ = nullptr;
  control::JoinGroup first_join_;
  uint32_t generation_ = 0;
  uint64_t current_hint_ = 0;  // the hint current_ was joined with
  std::unique_ptr<GroupHandle> current_;
  std::unique_ptr<GroupHandle> outgrown_;
  uint32_t outgrown_generation_ = 0;
  // Outcomes of nonblocking calls of groups already left, by request.
  std::map<uint64_t, Status> settled_;
  Status broken_;  // joining again failed: the group cannot serve further calls
};

// The key of a group's generation-th re-join: the first key with its last 8 bytes mixed with
// the generation, the same on every rank.
std::string GenerationKey(const std::string& key, uint32_t generation);

}  // namespace ohio
