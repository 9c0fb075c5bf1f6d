#include "client/libohio/nonblocking_alltoalls.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "shm/segment_change.h"

namespace ohio {

NonblockingAlltoalls::NonblockingAlltoalls(const Segment* segment, uint32_t local, const RoundWaiter* waiter, int doorbell_fd,
                                 bool ring_every_start)
    : segment_(segment),
      header_(segment->header()),
      local_(local),
      waiter_(waiter),
      doorbell_fd_(doorbell_fd),
      ring_every_start_(ring_every_start) {}

bool NonblockingAlltoalls::Done(uint32_t call) const {
  return RoundReached(header_->nonblocking_done.load(std::memory_order_acquire), call);
}

Status NonblockingAlltoalls::Await(uint32_t call) const {
  return waiter_->Wait([this, call] { return Done(call); }, "the other ranks",
                       "start the nonblocking alltoall (or ohiod did not move it)");
}

void NonblockingAlltoalls::NoteProgress() {
  const uint32_t done = header_->nonblocking_done.load(std::memory_order_acquire);
  const uint32_t round = segment_->slot(local_)->arrived_round.load(std::memory_order_acquire);
  if (done == seen_done_ && round == seen_round_) return;
  seen_done_ = done;
  seen_round_ = round;
  progress_at_ = std::chrono::steady_clock::now();
}

Status NonblockingAlltoalls::Overdue(uint32_t call) {
  NoteProgress();
  auto started = open_.find(call);
  if (started == open_.end()) return Status::Ok();
  const auto since = std::max(started->second, progress_at_);
  // Which of the two it is, as far as this node can tell: across nodes ohiod may still be
  // waiting for other nodes' ranks, and a daemon that runs says so itself within the grace.
  if (segment_->AllStarted(call)) return waiter_->Overdue(since, "ohiod", "complete the nonblocking alltoall");
  return waiter_->Overdue(since, "the other ranks", "start the nonblocking alltoall (or ohiod did not move it)");
}

std::set<uint32_t> NonblockingAlltoalls::OutstandingCalls() const {
  std::set<uint32_t> calls;
  for (const auto& [call, started] : open_) calls.insert(call);
  return calls;
}

Status NonblockingAlltoalls::Published(uint32_t call) const {
  const uint32_t entry = call % kNonblockingDepth;
  const auto code = static_cast<Code>(header_->nonblocking_code[entry].load(std::memory_order_relaxed));
  if (code == Code::kOk) return Status::Ok();
  return Status(code, std::string(header_->nonblocking_error[entry], strnlen(header_->nonblocking_error[entry], kErrorMessageBytes)));
}

void NonblockingAlltoalls::Keep(uint32_t call) {
  tables_.erase(call);
  if (open_.count(call) != 0 && kept_.count(call) == 0) kept_.emplace(call, Published(call));
}

Status NonblockingAlltoalls::Outcome(uint32_t call) {
  Status s;
  auto kept = kept_.find(call);
  if (kept != kept_.end()) {
    s = kept->second;
    kept_.erase(kept);
  } else {
    s = Published(call);
  }
  open_.erase(call);
  tables_.erase(call);
  return s;
}

Status NonblockingAlltoalls::Start(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* call) {
  return StartEntry(send, recv, m, {}, call);
}

Status NonblockingAlltoalls::StartVector(const uint8_t* send, uint8_t* recv, std::vector<uint64_t> tables, uint32_t* call) {
  return StartEntry(send, recv, 0, std::move(tables), call);
}

Status NonblockingAlltoalls::StartEntry(const uint8_t* send, uint8_t* recv, uint64_t m, std::vector<uint64_t> tables,
                                  uint32_t* call) {
  const uint32_t next = started_ + 1;
  if (next > kNonblockingDepth) {
    // The ring entry was call next - depth's: the daemon must be through with it.
    const uint32_t reused = next - kNonblockingDepth;
    if (Status s = Await(reused); !s.ok()) return s;
    Keep(reused);
  }
  RankSlot* me = segment_->slot(local_);
  NonblockingEntry& e = me->nonblocking[next % kNonblockingDepth];
  e.send_address.store(reinterpret_cast<uint64_t>(send), std::memory_order_relaxed);
  e.recv_address.store(reinterpret_cast<uint64_t>(recv), std::memory_order_relaxed);
  e.bytes_per_rank.store(m, std::memory_order_relaxed);
  uint64_t tables_address = 0;
  if (!tables.empty()) {
    // A vector's heap block does not move when the vector is moved into the map.
    tables_address = reinterpret_cast<uint64_t>(tables.data());
    tables_[next] = std::move(tables);
  }
  e.tables_address.store(tables_address, std::memory_order_relaxed);
  // Progress before this start is not progress on this call.
  NoteProgress();
  me->nonblocking_started.store(next, std::memory_order_seq_cst);
  started_ = next;
  open_.emplace(next, std::chrono::steady_clock::now());
  // Paired with the engine's fence after it sets daemon_sleeping: either it sees this start
  // before it sleeps, or this rank sees the flag and rings. And with the other ranks' fences
  // after their starts: of ranks starting at once, the last in the fences' order sees every start.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header_->daemon_sleeping.load(std::memory_order_relaxed) != 0 &&
      (ring_every_start_ || segment_->AllStarted(next))) {
    uint64_t one = 1;
    (void)!write(doorbell_fd_, &one, sizeof(one));
  }
  *call = next;
  return Status::Ok();
}

}  // namespace ohio
