// The alltoallv side of NonblockingAlltoall (nonblocking_alltoall.h). Each rank gave the address
// of its tables (bytes and byte offsets per group rank, in its own memory, kept by libohio until
// the call is moved); the daemon reads them all and checks MPI's matching rule for every pair once
// for every rank (so every rank gets the same verdict and text). The pieces then move slice by
// slice as an alltoall's do, each from where the sender's tables say to where the receiver's say.
// A zero count is no piece at all: its displacement is never looked at.
#include <sys/uio.h>

#include <cerrno>
#include <string>
#include <vector>

#include "daemon/engine/nonblocking_alltoall.h"

namespace ohio {

Status NonblockingAlltoall::ReadTables(uint32_t call) {
  const uint32_t entry = call % kNonblockingDepth;
  const uint64_t per_rank = uint64_t{kNonblockingTables} * ranks_;
  tables_.resize(per_rank * ranks_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const uint64_t address = segment_->slot(l)->nonblocking[entry].tables_address.load(std::memory_order_relaxed);
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const uint64_t bytes = per_rank * sizeof(uint64_t);
    const std::vector<iovec> local = {{tables_.data() + l * per_rank, bytes}};
    const std::vector<iovec> remote = {{reinterpret_cast<void*>(address), bytes}};
    const ssize_t n = memory.value()->Transfer(local, remote, false);
    if (n != static_cast<ssize_t>(bytes)) return Refused(l, *memory.value(), false, "count tables", bytes, address);
  }
  return Status::Ok();
}

Status NonblockingAlltoall::PairsAgree() const {
  uint64_t differing = 0;
  std::string first;
  for (uint32_t src = 0; src < ranks_; ++src) {
    for (uint32_t dst = 0; dst < ranks_; ++dst) {
      const uint64_t sent = Table(shape_->local_index(src), kSendBytes, dst);
      const uint64_t expected = Table(shape_->local_index(dst), kRecvBytes, src);
      if (sent == expected || differing++ != 0) continue;
      first = "rank " + std::to_string(src) + " sends " + std::to_string(sent) + " bytes to rank " +
              std::to_string(dst) + ", which expects " + std::to_string(expected);
    }
  }
  if (differing == 0) return Status::Ok();
  return Status(Code::kSizeMismatch, "ranks disagree on the counts of this alltoallv: " + first +
                                         (differing > 1 ? " (and " + std::to_string(differing - 1) + " more pairs)" : ""));
}

}  // namespace ohio
