#include "shm/plan/staging.h"

#include <string>

namespace ohio {

uint64_t MinSsbBytes(const GroupShape& shape) { return MinSsbBytes(shape.max_ppn(), shape.size()); }

uint64_t MinSsbBytes(uint32_t max_ppn, uint32_t size) { return uint64_t{max_ppn} * size; }

uint64_t LocalSsbHalfBytes(uint64_t ssb_bytes) {
  const uint64_t half = ssb_bytes / 2;
  return half >= 64 ? half - half % 64 : half;
}

uint64_t MinLocalSsbBytes(const GroupShape& shape) { return MinLocalSsbBytes(shape.max_ppn(), shape.size()); }

uint64_t MinLocalSsbBytes(uint32_t max_ppn, uint32_t size) {
  const uint64_t min = MinSsbBytes(max_ppn, size);
  return 2 * (min >= 64 ? (min + 63) / 64 * 64 : min);
}

Result<Staging> PlanStaging(const GroupShape& shape, uint64_t ssb_bytes, uint64_t bytes_per_rank) {
  const uint64_t messages = MinSsbBytes(shape);
  if (ssb_bytes < messages) {
    return Status(Code::kNoMemory,
                  "an SSB of " + std::to_string(ssb_bytes) + " bytes cannot hold one byte of each of the " +
                      std::to_string(messages) + " messages of a node (max PPN " +
                      std::to_string(shape.max_ppn()) + " x " + std::to_string(shape.size()) + " ranks)");
  }
  Staging s;
  s.bytes_per_rank = bytes_per_rank;
  const uint64_t fits = ssb_bytes / messages;
  if (bytes_per_rank <= fits) {
    s.slice = bytes_per_rank;
    s.rounds = 1;
    return s;
  }
  constexpr uint64_t kLine = 64;
  s.slice = fits >= kLine ? fits - fits % kLine : fits;
  // Not (M + slice - 1) / slice: that wraps for M near 2^64 and would give zero rounds.
  s.rounds = bytes_per_rank / s.slice + (bytes_per_rank % s.slice != 0 ? 1 : 0);
  return s;
}

}  // namespace ohio
