#include "daemon/engine/nonblocking_alltoall.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "shm/round_verdict.h"
#include "shm/segment_change.h"

namespace ohio {
namespace {

std::string Hex(uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

}  // namespace

NonblockingAlltoall::NonblockingAlltoall(const Segment* segment, const GroupShape* shape, uint32_t node)
    : segment_(segment),
      shape_(shape),
      node_(node),
      ranks_(shape->ppn(node)),
      memories_(shape->ppn(node)) {}

void NonblockingAlltoall::Attach(uint32_t l, RankMemoryAccess access) {
  std::lock_guard<std::mutex> lock(memories_mutex_);
  memories_[l] = std::move(access);
}

Result<std::shared_ptr<const RankMemory>> NonblockingAlltoall::Memory(uint32_t l) const {
  std::lock_guard<std::mutex> lock(memories_mutex_);
  const RankMemoryAccess& access = memories_[l];
  if (access.memory) return access.memory;
  const std::string who = "rank " + std::to_string(shape_->rank_at(node_, l));
  if (!access.refusal.empty()) return Status(Code::kRefused, who + ": " + access.refusal);
  return Status(Code::kGroupFailed, who + " has left the group");
}

bool NonblockingAlltoall::AnyPosted() const {
  const uint32_t done = segment_->header()->nonblocking_done.load(std::memory_order_acquire);
  for (uint32_t l = 0; l < ranks_; ++l) {
    if (segment_->slot(l)->nonblocking_started.load(std::memory_order_acquire) != done) return true;
  }
  return false;
}

bool NonblockingAlltoall::Advance(DaemonCounters* counters) {
  SegmentHeader* h = segment_->header();
  bool moved = false;
  for (;;) {
    const uint32_t call = h->nonblocking_done.load(std::memory_order_relaxed) + 1;
    if (!AllPosted(call)) return moved;
    const uint32_t entry = call % kNonblockingDepth;
    auto bytes_of = [this, entry](uint32_t l) {
      return segment_->slot(l)->nonblocking[entry].bytes_per_rank.load(std::memory_order_relaxed);
    };
    const bool vector = segment_->slot(0)->nonblocking[entry].tables_address.load(std::memory_order_relaxed) != 0;
    Status outcome = SameKind(call);
    uint64_t moved = 0;
    if (outcome.ok() && vector) {
      outcome = MoveVector(call, &moved);
    } else if (outcome.ok()) {
      outcome = NodeVerdict(ranks_, bytes_of, [this](uint32_t l) { return shape_->rank_at(0, l); });
      const uint64_t m = bytes_of(0);
      if (outcome.ok()) outcome = Move(call, m);
      moved = uint64_t{ranks_} * ranks_ * m;
    }
    if (outcome.ok()) {
      counters->collectives_served.fetch_add(1, std::memory_order_relaxed);
      counters->rounds.fetch_add(1, std::memory_order_relaxed);
      counters->bytes_local.fetch_add(moved, std::memory_order_relaxed);
    } else {
      counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
      counters->CountError(outcome.code());
    }
    Publish(call, outcome);
    moved = true;
  }
}

std::optional<std::string> NonblockingAlltoall::Stalled(std::chrono::steady_clock::time_point now,
                                                      std::chrono::milliseconds timeout) {
  const uint32_t call = segment_->header()->nonblocking_done.load(std::memory_order_acquire) + 1;
  std::vector<uint32_t> missing;
  for (uint32_t l = 0; l < ranks_; ++l) {
    if (!RoundReached(segment_->slot(l)->nonblocking_started.load(std::memory_order_acquire), call)) {
      missing.push_back(shape_->rank_at(node_, l));
    }
  }
  if (missing.empty() || missing.size() == ranks_ || call != watched_call_) {
    watched_call_ = missing.empty() || missing.size() == ranks_ ? 0 : call;
    watched_since_ = now;
    return std::nullopt;
  }
  if (now - watched_since_ < timeout) return std::nullopt;
  return DescribeRanks(missing) + " did not post nonblocking alltoall " + std::to_string(call) + " within " +
         std::to_string(timeout.count()) + " ms of the others";
}

Status NonblockingAlltoall::Move(uint32_t call, uint64_t m) {
  const uint32_t entry = call % kNonblockingDepth;
  const uint64_t row = uint64_t{ranks_} * m;
  if (m == 0) return Status::Ok();
  if (row * ranks_ / ranks_ != row || row * ranks_ > kMaxCallBytes) {
    return Status(Code::kNotSupported, "a nonblocking alltoall of " + std::to_string(m) +
                                           " bytes per rank is larger than ohiod moves at once (" +
                                           std::to_string(kMaxCallBytes) + " bytes in all)");
  }
  rows_.resize(row * ranks_);
  // Every row is read before any column is written: a rank may pass the same buffer for both.
  for (uint32_t l = 0; l < ranks_; ++l) {
    const uint32_t src = shape_->rank_at(0, l);
    const uint64_t address = segment_->slot(l)->nonblocking[entry].send_address.load(std::memory_order_relaxed);
    const std::vector<iovec> local = {{rows_.data() + src * row, row}};
    const std::vector<iovec> remote = {{reinterpret_cast<void*>(address), row}};
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const ssize_t n = memory.value()->Transfer(local, remote, false);
    if (n != static_cast<ssize_t>(row)) return Refused(l, *memory.value(), false, "send buffer", row, address);
  }
  std::vector<iovec> column(ranks_), remote(ranks_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const uint32_t dst = shape_->rank_at(0, l);
    const uint64_t address = segment_->slot(l)->nonblocking[entry].recv_address.load(std::memory_order_relaxed);
    for (uint32_t src = 0; src < ranks_; ++src) {
      column[src] = {rows_.data() + src * row + dst * m, m};
      remote[src] = {reinterpret_cast<void*>(address + src * m), m};
    }
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const ssize_t n = memory.value()->Transfer(column, remote, true);
    if (n != static_cast<ssize_t>(row)) return Refused(l, *memory.value(), true, "receive buffer", row, address);
  }
  return Status::Ok();
}

Status NonblockingAlltoall::Refused(uint32_t l, const RankMemory& memory, bool writing, const char* what,
                                  uint64_t bytes, uint64_t address) const {
  const int err = errno;
  const std::string who =
      "rank " + std::to_string(shape_->rank_at(node_, l)) + " (pid " + std::to_string(memory.pid()) + ")";
  if (err == ESRCH && memory.Exited()) return Status(Code::kGroupFailed, who + " is gone");
  if (err == ESRCH) {
    return Status(Code::kRefused, who + " is no longer the process that joined: it ran another program, "
                                        "whose memory ohiod does not touch");
  }
  if (err == EFAULT) {
    return Status(Code::kInvalidArgument, who + ": its " + what + " (" + std::to_string(bytes) + " bytes at " +
                                              Hex(address) + ") is not mapped" + (writing ? " writable" : "") +
                                              " in its process");
  }
  return Status(Code::kNotSupported, std::string("the kernel refused ohiod to ") + (writing ? "write " : "read ") +
                                         who + "'s memory: " + std::strerror(err));
}

Status NonblockingAlltoall::SameKind(uint32_t call) const {
  const uint32_t entry = call % kNonblockingDepth;
  auto is_vector = [this, entry](uint32_t l) {
    return segment_->slot(l)->nonblocking[entry].tables_address.load(std::memory_order_relaxed) != 0;
  };
  uint32_t alike = 1;
  while (alike < ranks_ && is_vector(alike) == is_vector(0)) ++alike;
  if (alike == ranks_) return Status::Ok();  // without allocating, as every call of a correct program
  std::vector<uint32_t> vector, plain;
  for (uint32_t l = 0; l < ranks_; ++l) (is_vector(l) ? vector : plain).push_back(shape_->rank_at(node_, l));
  return Status(Code::kInvalidArgument, "ranks posted different collectives as nonblocking call " +
                                            std::to_string(call) + ": an alltoallv from " + DescribeRanks(vector) +
                                            ", an alltoall from " + DescribeRanks(plain));
}

void NonblockingAlltoall::Publish(uint32_t call, const Status& outcome) {
  SegmentHeader* h = segment_->header();
  const uint32_t entry = call % kNonblockingDepth;
  h->nonblocking_code[entry].store(static_cast<uint32_t>(outcome.code()), std::memory_order_relaxed);
  std::strncpy(h->nonblocking_error[entry], outcome.message().c_str(), kErrorMessageBytes - 1);
  h->nonblocking_error[entry][kErrorMessageBytes - 1] = '\0';
  h->nonblocking_done.store(call, std::memory_order_seq_cst);
  SignalChange(h);
}

}  // namespace ohio
