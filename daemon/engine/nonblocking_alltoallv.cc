// The alltoallv side of NonblockingAlltoall (nonblocking_alltoall.h). Each rank posted the address
// of its tables (bytes and byte offsets per group rank, in its own memory, kept by libohio until
// the call is moved); the daemon reads them all, checks MPI's matching rule for every pair once
// for every rank (so every rank gets the same verdict and text), then reads each rank's pieces
// into one buffer and writes each rank's pieces where its receive tables say. A zero count is
// no piece at all: its displacement is never looked at.
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

Status NonblockingAlltoall::MoveVector(uint32_t call, uint64_t* moved_bytes) {
  const uint32_t entry = call % kNonblockingDepth;
  if (Status s = ReadTables(call); !s.ok()) return s;
  if (Status s = PairsAgree(); !s.ok()) return s;
  uint64_t total = 0;
  for (uint32_t l = 0; l < ranks_; ++l) {
    for (uint32_t g = 0; g < ranks_; ++g) {
      const uint64_t b = Table(l, kSendBytes, g);
      if (b > kMaxCallBytes - total) {
        return Status(Code::kNotSupported, "a nonblocking alltoallv of more than " + std::to_string(kMaxCallBytes) +
                                               " bytes in all is larger than ohiod moves at once");
      }
      total += b;
    }
  }
  rows_.resize(total);
  piece_at_.assign(uint64_t{ranks_} * ranks_, 0);
  std::vector<iovec> local, remote;
  // Every piece is read before any is written: a rank may pass the same buffer for both.
  uint64_t offset = 0;
  for (uint32_t src = 0; src < ranks_; ++src) {
    const uint32_t l = shape_->local_index(src);
    const NonblockingEntry& e = segment_->slot(l)->nonblocking[entry];
    const uint64_t base = e.send_address.load(std::memory_order_relaxed);
    local.clear();
    remote.clear();
    const uint64_t first = offset;
    for (uint32_t dst = 0; dst < ranks_; ++dst) {
      const uint64_t b = Table(l, kSendBytes, dst);
      if (b == 0) continue;
      piece_at_[uint64_t{src} * ranks_ + dst] = offset;
      local.push_back({rows_.data() + offset, b});
      // Wrapping like the rank's own pointer arithmetic would: an offset "before" the buffer.
      remote.push_back({reinterpret_cast<void*>(base + Table(l, kSendAt, dst)), b});
      offset += b;
    }
    if (local.empty()) continue;
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const ssize_t n = memory.value()->Transfer(local, remote, false);
    if (n != static_cast<ssize_t>(offset - first)) {
      return Refused(l, *memory.value(), false, "send buffer", offset - first, base);
    }
  }
  for (uint32_t dst = 0; dst < ranks_; ++dst) {
    const uint32_t l = shape_->local_index(dst);
    const NonblockingEntry& e = segment_->slot(l)->nonblocking[entry];
    const uint64_t base = e.recv_address.load(std::memory_order_relaxed);
    local.clear();
    remote.clear();
    uint64_t bytes = 0;
    for (uint32_t src = 0; src < ranks_; ++src) {
      const uint64_t b = Table(l, kRecvBytes, src);
      if (b == 0) continue;
      local.push_back({rows_.data() + piece_at_[uint64_t{src} * ranks_ + dst], b});
      remote.push_back({reinterpret_cast<void*>(base + Table(l, kRecvAt, src)), b});
      bytes += b;
    }
    if (local.empty()) continue;
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const ssize_t n = memory.value()->Transfer(local, remote, true);
    if (n != static_cast<ssize_t>(bytes)) return Refused(l, *memory.value(), true, "receive buffer", bytes, base);
  }
  *moved_bytes = total;
  return Status::Ok();
}

}  // namespace ohio
