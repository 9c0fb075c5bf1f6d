// Whether the ranks of a node may go ahead with a round, from the bytes per rank each of them
// published: all the same, or an error naming who said what. Every rank (and the daemon) that
// reads the same slots reaches the same verdict with the same text, which is what lets ranks on
// one node settle a round among themselves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/segment_layout.h"

namespace ohio {

// "rank 3" / "ranks 0,1,2" (the first 16, then "and N more").
std::string DescribeRanks(const std::vector<uint32_t>& group_ranks);

// bytes[l] is local rank l's M (kOptOutBytes: it opted out); group_rank[l] its rank in the group.
// An opt-out wins over any disagreement (kOptedOut), then disagreement (kSizeMismatch).
Status RoundVerdict(const std::vector<uint64_t>& bytes, const std::vector<uint32_t>& group_rank);

// The same without allocating when the ranks agree: bytes_of(l) gives local rank l's M.
template <typename BytesOf>
bool RanksAgree(uint32_t n, BytesOf bytes_of) {
  const uint64_t first = bytes_of(0);
  if (first == kOptOutBytes) return false;
  for (uint32_t l = 1; l < n; ++l) {
    if (bytes_of(l) != first) return false;
  }
  return true;
}

// The verdict of a node's n ranks, allocating only when they do not agree: bytes_of(l) is local
// rank l's M, group_rank_of(l) its rank in the group.
template <typename BytesOf, typename RankOf>
Status NodeVerdict(uint32_t n, BytesOf bytes_of, RankOf group_rank_of) {
  if (RanksAgree(n, bytes_of)) return Status::Ok();
  std::vector<uint64_t> bytes(n);
  std::vector<uint32_t> ranks(n);
  for (uint32_t l = 0; l < n; ++l) {
    bytes[l] = bytes_of(l);
    ranks[l] = group_rank_of(l);
  }
  return RoundVerdict(bytes, ranks);
}

}  // namespace ohio
