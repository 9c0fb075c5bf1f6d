// The alltoallv call under way, as both of its round protocols (vector_round.h, pairwise, and
// vector_cube_round.h, a hypercube) see it: what is kept across the rounds of a call and from
// one call to the next (the plan while the counts stay the same, which nodes stream, whether
// the next call tries the hypercube), and what its current round found.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/vector_plan.h"

namespace ohio {

struct VectorCall {
  uint32_t part = 0;            // the round's index in its call (0: the counts' check)
  uint32_t rounds_in_call = 1;  // once the first round's verdict is in (1 until then)
  std::vector<bool> staged_nodes;  // by node, its part did not fit the first round
  VectorRoundPlan plan;            // kept while the counts stay the same
  // Hypercube alltoallv: the largest block it carries (0: never), whether the group's next
  // alltoallv tries it (the same on every node), whether this node's part of the call under
  // way fits it.
  uint64_t cube_block_cap = 0;
  bool cube_next = true;
  bool cube_fits = false;
  // The round's digest failed: the count tables travel (no error yet), and whether this node's
  // have been put.
  bool naming_pair = false;
  bool tables_posted = false;

  // What a round resets: `part` is its index in the call, 0 for a round that is no alltoallv's.
  void BeginRound(uint32_t round_part) {
    part = round_part;
    if (part == 0) rounds_in_call = 1;
    naming_pair = tables_posted = false;
    cube_fits = false;
  }
};

}  // namespace ohio
