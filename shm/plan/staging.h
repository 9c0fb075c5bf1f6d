// Cutting one alltoall into rounds that fit the SSB. A round carries the same byte range
// [offset, offset+length) of the P·PPN messages of a node (a group spanning nodes: of those of
// some of its ranks to some nodes, see RoundCover), so the SSB need per round is at most
// PPN·P·slice however large M is: memory is bounded by configuration, not by M.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "shm/plan/group_shape.h"

namespace ohio {

// What one round of a call carries, on every node of the group: bytes [offset, offset+length)
// of the messages that the node's local ranks [first_row, end_row) send to the ranks of the
// nodes its steps [first_step, end_step) reach. Step t of node n sends to node (n+t) mod N and
// receives from node (n-t) mod N; t = 0 is n itself. A round that covers every step (the
// default) reaches every node in PairwiseSchedule's order (exchange_plan.h) and lays its SSB as
// it always did; one that covers some of them lays the nodes it reaches in step order.
struct RoundCover {
  static constexpr uint32_t kAll = ~uint32_t{0};
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t first_step = 0;
  uint32_t end_step = kAll;
  uint32_t first_row = 0;
  uint32_t end_row = kAll;

  bool every_step(uint32_t nodes) const { return first_step == 0 && end_step >= nodes; }
  bool has_row(uint32_t l) const { return l >= first_row && l < end_row; }
  // Rows of a node with `ppn` local ranks that the round carries.
  uint32_t rows(uint32_t ppn) const {
    const uint32_t end = end_row < ppn ? end_row : ppn;
    return end > first_row ? end - first_row : 0;
  }
};

// A round carrying `length` bytes of every message: what a call of one round, an eager round
// and a group on one node use.
inline RoundCover WholeCover(uint64_t length) {
  RoundCover c;
  c.length = length;
  return c;
}

// The shortest slice a staged round of a group spanning nodes copies, unless a whole message
// is shorter or the SSB cannot hold max PPN such slices (exchange_plan.h, PlanGroupStaging):
// copies of a few dozen bytes cost more than the bytes they move.
constexpr uint64_t kDefaultMinSliceBytes = 4096;

// A call's rounds: slice after slice of the messages (outermost), and within one slice, group
// after group of `steps` steps, and within one such group, part after part of `rows` rows.
// Every node computes the same rounds from the same inputs; the last slice may be shorter.
struct Staging {
  uint64_t bytes_per_rank = 0;  // M
  uint64_t slice = 0;           // bytes of each message carried by a full round
  uint64_t rounds = 0;          // at least 1, even for M = 0, so every call synchronises
  uint32_t steps = RoundCover::kAll;  // steps a round covers (kAll: every one)
  uint32_t step_groups = 1;           // rounds per slice and row part to reach every node
  uint32_t rows = RoundCover::kAll;   // local ranks a round carries (kAll: every one)
  uint32_t row_parts = 1;             // rounds per slice and step group to carry every rank

  // For round < rounds.
  uint64_t slice_index(uint64_t round) const { return round / (uint64_t{step_groups} * row_parts); }
  uint64_t offset(uint64_t round) const { return slice_index(round) * slice; }
  uint64_t length(uint64_t round) const {
    uint64_t rest = bytes_per_rank - offset(round);
    return rest < slice ? rest : slice;
  }
  RoundCover cover(uint64_t round) const {
    RoundCover c = WholeCover(length(round));
    c.offset = offset(round);
    const uint64_t within = round % (uint64_t{step_groups} * row_parts);
    if (step_groups > 1) {
      c.first_step = static_cast<uint32_t>(within / row_parts) * steps;
      c.end_step = c.first_step + steps;
    }
    if (row_parts > 1) {
      c.first_row = static_cast<uint32_t>(within % row_parts) * rows;
      c.end_row = c.first_row + rows;
    }
    return c;
  }
};

// Bytes of SSB every node of the group needs for the smallest possible round (one byte of
// each message of the node with the most ranks).
uint64_t MinSsbBytes(const GroupShape& shape);
// The same from the group's size and the ranks of its fullest node, before its shape is built.
uint64_t MinSsbBytes(uint32_t max_ppn, uint32_t size);

// A group on one node stages its rounds in two halves of the SSB, by round parity, so that
// its ranks never wait for each other to free a half (client/libohio/on_node_alltoall.h). A half is
// rounded down to a cache line.
uint64_t LocalSsbHalfBytes(uint64_t ssb_bytes);
// Bytes of SSB a group on one node needs: two halves of MinSsbBytes, rounded to a cache line.
uint64_t MinLocalSsbBytes(const GroupShape& shape);
uint64_t MinLocalSsbBytes(uint32_t max_ppn, uint32_t size);

// Splits M so that an SSB of ssb_bytes holds one round on the node with the most ranks, so
// every node of the group arrives at the same rounds. A slice shorter than M is rounded down
// to a multiple of 64 bytes (when at least 64) so copies stay cache-line sized. The last
// round may be shorter; its layout is computed with its own length (see copy_plan.h).
Result<Staging> PlanStaging(const GroupShape& shape, uint64_t ssb_bytes, uint64_t bytes_per_rank);

}  // namespace ohio
