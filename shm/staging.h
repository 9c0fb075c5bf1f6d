// Cutting one alltoall into rounds that fit the SSB. A round carries the same byte range
// [offset, offset+length) of every one of the P·PPN messages of a node, so the SSB need per
// round is PPN·P·slice however large M is: memory is bounded by configuration, not by M.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "shm/group_shape.h"

namespace ohio {

struct Staging {
  uint64_t bytes_per_rank = 0;  // M
  uint64_t slice = 0;           // bytes of each message carried by a full round
  uint64_t rounds = 0;          // at least 1, even for M = 0, so every call synchronises

  // For round < rounds.
  uint64_t offset(uint64_t round) const { return round * slice; }
  uint64_t length(uint64_t round) const {
    uint64_t rest = bytes_per_rank - offset(round);
    return rest < slice ? rest : slice;
  }
};

// Bytes of SSB every node of the group needs for the smallest possible round (one byte of
// each message of the node with the most ranks).
uint64_t MinSsbBytes(const GroupShape& shape);

// A group on one node stages its rounds in two halves of the SSB, by round parity, so that
// its ranks never wait for each other to free a half (client/local_alltoall.h). A half is
// rounded down to a cache line.
uint64_t LocalSsbHalfBytes(uint64_t ssb_bytes);
// Bytes of SSB a group on one node needs: two halves of MinSsbBytes, rounded to a cache line.
uint64_t MinLocalSsbBytes(const GroupShape& shape);

// Splits M so that an SSB of ssb_bytes holds one round on the node with the most ranks, so
// every node of the group arrives at the same rounds. A slice shorter than M is rounded down
// to a multiple of 64 bytes (when at least 64) so copies stay cache-line sized. The last
// round may be shorter; its layout is computed with its own length (see copy_plan.h).
Result<Staging> PlanStaging(const GroupShape& shape, uint64_t ssb_bytes, uint64_t bytes_per_rank);

}  // namespace ohio
