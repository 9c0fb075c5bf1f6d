// The copies a rank makes for a call of M bytes per rank, planned once per M and reused: a
// program calls alltoall with the same few sizes over and over, and planning allocates.
//
// A call's rounds are all full-length but maybe the last, and a full round's copies differ from
// round 0's only by the round's offset into the user's buffers; so two span lists per copy
// (full round, last round) serve every round, shifted by staging.offset(round).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"

namespace ohio {

struct CallPlan {
  uint64_t bytes_per_rank = 0;
  Staging staging;
  // [0]: a full round, [1]: the last round; user-buffer offsets as for round offset 0.
  std::array<std::vector<CopySpan>, 2> copy_in;
  std::array<std::vector<CopySpan>, 2> copy_out_on_node;

  size_t Kind(uint64_t round) const {
    return round + 1 == staging.rounds && staging.length(round) != staging.slice ? 1 : 0;
  }
};

// One rank's copy-in into `ssb` and local copy-out from it for round `round` of the plan.
// user-side offsets shift by the round's offset.
void CopyIn(const CallPlan& plan, uint64_t round, const uint8_t* send, uint8_t* ssb);
void CopyOutOnNode(const CallPlan& plan, uint64_t round, const uint8_t* ssb, uint8_t* recv);

// The plan of local rank l of `node` for a call staged as `staging` says.
CallPlan MakeCallPlan(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l, const Staging& staging);

class CallPlans {
 public:
  // Plans for local rank `l` of `node`, rounds cut to fit `ssb_bytes`.
  CallPlans(const GroupShape* shape, NodeLevelDesign algo, uint32_t node, uint32_t l)
      : shape_(shape), algo_(algo), node_(node), local_(l) {}

  // The plan for M, from the cache when it was planned before with the same SSB.
  Result<const CallPlan*> For(uint64_t bytes_per_rank, uint64_t ssb_bytes);

 private:
  static constexpr size_t kCached = 4;
  struct Entry {
    bool used = false;
    uint64_t ssb_bytes = 0;
    uint64_t last_use = 0;
    CallPlan plan;
  };
  const GroupShape* shape_;
  NodeLevelDesign algo_;
  uint32_t node_;
  uint32_t local_;
  std::array<Entry, kCached> entries_;
  uint64_t uses_ = 0;
};

}  // namespace ohio
