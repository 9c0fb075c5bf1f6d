#include "shm/round_verdict.h"

#include <map>

namespace ohio {

std::string DescribeRanks(const std::vector<uint32_t>& group_ranks) {
  std::string s = group_ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < group_ranks.size(); ++i) {
    if (i == 16) {
      s += " and " + std::to_string(group_ranks.size() - i) + " more";
      break;
    }
    if (i > 0) s += ",";
    s += std::to_string(group_ranks[i]);
  }
  return s;
}

Status RoundVerdict(const std::vector<uint64_t>& bytes, const std::vector<uint32_t>& group_rank) {
  std::map<uint64_t, std::vector<uint32_t>> by_bytes;
  for (size_t l = 0; l < bytes.size(); ++l) by_bytes[bytes[l]].push_back(group_rank[l]);
  const auto opting_out = by_bytes.find(kOptOutBytes);
  if (opting_out != by_bytes.end()) {
    return Status(Code::kOptedOut, DescribeRanks(opting_out->second) + " opted out of this alltoall");
  }
  if (by_bytes.size() == 1) return Status::Ok();
  const auto vector = by_bytes.find(kVectorBytes);
  if (vector != by_bytes.end()) {
    std::vector<uint32_t> others;
    for (const auto& [m, ranks] : by_bytes) {
      if (m != kVectorBytes) others.insert(others.end(), ranks.begin(), ranks.end());
    }
    return Status(Code::kSizeMismatch, DescribeRanks(vector->second) + " called alltoallv while " +
                                           DescribeRanks(others) + " called alltoall");
  }
  std::string message = "ranks disagree on the bytes per rank of this alltoall:";
  for (const auto& [m, ranks] : by_bytes) message += " " + std::to_string(m) + " from " + DescribeRanks(ranks) + ";";
  message.pop_back();
  return Status(Code::kSizeMismatch, message);
}

}  // namespace ohio
