// Alltoallv of a group on one node: counts of any size per pair, in one meeting for small
// calls (shm/plan/local_vector_plan.h) and in one copy for large ones.
//
// A rank writes its send counts and displacements into its count table in the segment. If its
// row is small it stages the row in its region of SSB half k mod 2 and says how in its slot;
// otherwise it offers its send buffer to be read in place (process_vm_readv). With its arrival it
// publishes its share of the count digest. Once everyone has arrived, every rank sums the same
// shares: a call whose counts disagree anywhere fails on every rank, before anything is copied,
// with the first such pair in the same tables, so all ranks fail alike with the same text and
// the group stays usable. Otherwise each rank copies what every sender sends it from the
// sender's region (from its piece slot there, or where the sender's table says), or reads it
// from the sender's buffer where the table says; zero-count pairs cost nothing.
//
// When every row was staged that is all: half k mod 2 and the tables of k's parity are not
// written again before round k+2, which no rank enters before all have arrived at k+1, that is,
// before all are through with k. A rank whose buffer is read in place must not return before its
// readers are done, so when any row was read in place every rank waits until all are done and
// returns the first fault a reader published (a range that is not mapped, a read the kernel
// refused): one meeting more, paid only by large calls.
//
// A row too large for its region whose owner may not be read (ptrace restrictions, or a refusal
// earlier in the group) gets kNotSupported on every rank, so that a caller like the MPI shim can
// do the call another way. Ranks that find themselves in different PID namespaces (separate
// containers) at a call that reads in place go once more with every row staged, and never read
// in place again.
#include <cstring>

#include "client/libohio/on_node_alltoall.h"
#include "client/libohio/single_copy.h"
#include "shm/plan/local_vector_plan.h"
#include "shm/plan/vector_disagreement.h"
#include "shm/plan/vector_plan.h"
#include "shm/segment_change.h"

namespace ohio {
namespace {

// An offer for a rank that sends nothing: never read, but not "cannot offer" (0).
const uint8_t kNothingToRead = 0;

Status SizeMismatch(uint32_t source, uint32_t reader, uint64_t sent, uint64_t expected) {
  return Status(Code::kSizeMismatch, VectorDisagreementText({true, source, reader, sent, expected}));
}

}  // namespace

Status OnNodeAlltoall::Alltoallv(const VectorCall& call, uint32_t* next_round) {
  rounds_this_call_ = 0;
  const uint32_t k = (*next_round)++;
  const uint32_t me = shape_->rank_at(0, local_);
  CountEntry* table = segment_->count_table(local_, k);
  const VectorRow counts =
      WriteVectorRow(*shape_, vector_keys_.data(), call.send_counts, call.send_displs, call.recv_counts, table);
  // A refusal is set in an earlier call, which every rank has finished: all ranks see it alike.
  const bool readable = SingleCopyPossible() && header_->single_copy_refused.load(std::memory_order_relaxed) == 0;
  StagedRow row = StagedRow::kNotStaged;
  if (StagesVectorRow(*shape_, counts, vector_region_, readable ? SingleCopyThreshold(waiter_->oversubscribed()) : ~uint64_t{0})) {
    row = StagedRowOf(counts, vector_piece_slot_);
    uint8_t* region = VectorRegion(k, local_);
    StageVectorRow(*shape_, vector_piece_slot_, row, table, [&](uint64_t src, uint64_t dst, uint64_t len) {
      std::memcpy(region + dst, call.send + src, len);
    });
  }
  RoundEntry& entry = EntryFor(segment_->slot(local_), k);
  entry.row_staged.store(static_cast<uint32_t>(row), std::memory_order_relaxed);
  entry.count_digest.store(counts.digest, std::memory_order_relaxed);
  entry.row_bytes.store(counts.bytes, std::memory_order_relaxed);
  const bool staged = row != StagedRow::kNotStaged;
  // The table and the digest share are in a staged row's copy-in, as an alltoall's plan is in its.
  if (staged) report_->Lap(Stage::kCopyIn);
  const void* offer = staged || !readable ? nullptr : call.send != nullptr ? call.send : &kNothingToRead;
  Arrive(k, kVectorBytes, 0, 1, offer);
  if (Status s = MeetEveryone(k); !s.ok()) return s;
  // One look at every rank's entry for what the call needs before copying: the digest's sum, the
  // rows read in place, the first of them that may not be read, the call's bytes (for the stats).
  uint64_t digest = 0;
  uint64_t call_bytes = 0;
  uint32_t read_in_place = 0;
  uint32_t unreadable = ranks_;
  for (uint32_t l = 0; l < ranks_; ++l) {
    const RoundEntry& e = EntryFor(segment_->slot(l), k);
    digest += e.count_digest.load(std::memory_order_relaxed);
    call_bytes += e.row_bytes.load(std::memory_order_relaxed);
    if (static_cast<StagedRow>(e.row_staged.load(std::memory_order_relaxed)) != StagedRow::kNotStaged) continue;
    ++read_in_place;
    if (unreadable == ranks_ && e.send_address.load(std::memory_order_relaxed) == 0) unreadable = l;
  }
  Status verdict = Verdict(k);
  if (verdict.ok() && digest != 0) verdict = CountsDisagree(k);
  if (verdict.ok() && unreadable < ranks_) {
    const RoundEntry& e = EntryFor(segment_->slot(unreadable), k);
    verdict = Status(Code::kNotSupported, "rank " + std::to_string(shape_->rank_at(0, unreadable)) + " sends " +
                                              std::to_string(e.row_bytes.load(std::memory_order_relaxed)) +
                                              " bytes in this alltoallv, more than its share of the group's shared "
                                              "buffers (" + std::to_string(vector_region_) +
                                              " bytes), and may not have its memory read (ptrace restrictions, "
                                              "or the node's ranks in separate PID namespaces), which alltoallv "
                                              "on one node then needs");
  }
  if (!verdict.ok()) {
    Done(k, false);
    return verdict;
  }
  if (read_in_place != 0 && !OnePidNamespace()) {
    // A pid in a slot names nothing, or another process, in another PID namespace. Every rank
    // sees the same slots: all stop here alike and go once more with every row staged.
    NeverReadInPlace(k);
    Done(k, false);
    const uint64_t rounds_before = rounds_this_call_;
    Status again = Alltoallv(call, next_round);
    rounds_this_call_ += rounds_before;
    return again;
  }
  bool faulted = false;
  // Each rank starts with the next one, so that no send buffer has every reader at once (counted
  // round without a division per sender: a small call is a few hundred cycles in all).
  for (uint32_t i = 0, l = local_; i < ranks_ && !faulted; ++i, l = l + 1 == ranks_ ? 0 : l + 1) {
    const uint32_t src = shape_->rank_at(0, l);
    const uint64_t expected = call.recv_counts[src];
    const RankSlot* slot = segment_->slot(l);
    const auto row = static_cast<StagedRow>(EntryFor(slot, k).row_staged.load(std::memory_order_relaxed));
    if (row == StagedRow::kPieceSlots && expected <= vector_piece_slot_) {
      // The digest has checked that the sender sends what this rank expects.
      const uint8_t* piece = VectorRegion(k, l) + me * vector_piece_slot_;
      if (expected != 0) std::memcpy(call.recv + call.recv_displs[src], piece, expected);
      continue;
    }
    const CountEntry sent = segment_->count_table(l, k)[me];
    if (sent.bytes != expected) {
      // The digest let a disagreement through (odds 2^-64): copy nothing of it, and say so.
      RecordFault(k, VectorFault::kSizeMismatch, src, sent.bytes, expected);
      faulted = true;
      continue;
    }
    if (sent.bytes == 0) continue;
    uint8_t* to = call.recv + call.recv_displs[src];
    if (row == StagedRow::kPacked) {
      std::memcpy(to, VectorRegion(k, l) + sent.displacement, sent.bytes);
      continue;
    }
    if (l == local_) {
      std::memcpy(to, call.send + sent.displacement, sent.bytes);
      continue;
    }
    const pid_t pid = static_cast<pid_t>(slot->pid.load(std::memory_order_relaxed));
    const uint64_t address = EntryFor(slot, k).send_address.load(std::memory_order_relaxed);
    std::string why;
    switch (ReadFromRank(pid, address + sent.displacement, to, sent.bytes, &why)) {
      case ReadOutcome::kDone:
        break;
      case ReadOutcome::kGone:
        // It died after arriving: its daemon is closing the group; take that error.
        return waiter_->Wait([] { return false; }, "ohiod", "close the group of a rank that died");
      case ReadOutcome::kBadAddress:
        RecordFault(k, VectorFault::kUnreadable, src, sent.displacement, sent.bytes);
        faulted = true;
        break;
      case ReadOutcome::kRefused:
        SayRefusedOnce(pid, why);
        header_->single_copy_refused.store(k, std::memory_order_seq_cst);
        RecordFault(k, VectorFault::kRefused, src, 0, sent.bytes);
        faulted = true;
        break;
    }
  }
  report_->Lap(read_in_place == 0 ? Stage::kCopyOutOnNode : Stage::kReadPeers);
  vector_bytes_ = call_bytes;
  if (read_in_place == 0) {
    Done(k, false);
    return faulted ? VectorOutcome(k) : Status::Ok();
  }
  Done(k, true);
  // The others read this rank's send buffer until they are done: it must not change before.
  Status s = waiter_->WaitForRanks([this, k] { return segment_->AllDone(k); }, "the other ranks",
                           "finish reading this rank's send buffer");
  report_->Lap(Stage::kAwaitReaders);
  if (!s.ok()) return s;
  return VectorOutcome(k);
}

uint8_t* OnNodeAlltoall::VectorRegion(uint32_t k, uint32_t l) const {
  return segment_->ssb() + (k & 1) * half_bytes_ + l * vector_region_;
}

Status OnNodeAlltoall::CountsDisagree(uint32_t k) const {
  const VectorDisagreement d = FirstVectorDisagreement(*shape_, segment_->count_table(0, k));
  if (!d.found) return Status(Code::kProtocol, "the count digests of this alltoallv disagree but its tables agree");
  return SizeMismatch(d.source, d.reader, d.sent, d.expected);
}

void OnNodeAlltoall::RecordFault(uint32_t k, VectorFault kind, uint32_t source, uint64_t sent, uint64_t expected) {
  RankSlot* me = segment_->slot(local_);
  me->fault_kind.store(static_cast<uint32_t>(kind), std::memory_order_relaxed);
  me->fault_source.store(source, std::memory_order_relaxed);
  me->fault_sent.store(sent, std::memory_order_relaxed);
  me->fault_expected.store(expected, std::memory_order_relaxed);
  // Before this rank's done (a seq_cst store), so whoever sees it done sees the fault.
  me->fault_round.store(k, std::memory_order_release);
}

Status OnNodeAlltoall::VectorOutcome(uint32_t k) const {
  for (uint32_t l = 0; l < ranks_; ++l) {
    const RankSlot* slot = segment_->slot(l);
    if (slot->fault_round.load(std::memory_order_acquire) != k) continue;
    const uint32_t reader = shape_->rank_at(0, l);
    const uint32_t source = slot->fault_source.load(std::memory_order_relaxed);
    const uint64_t sent = slot->fault_sent.load(std::memory_order_relaxed);
    const uint64_t expected = slot->fault_expected.load(std::memory_order_relaxed);
    switch (static_cast<VectorFault>(slot->fault_kind.load(std::memory_order_relaxed))) {
      case VectorFault::kSizeMismatch:
        return SizeMismatch(source, reader, sent, expected);
      case VectorFault::kUnreadable:
        return Status(Code::kInvalidArgument, "rank " + std::to_string(reader) + " could not read " +
                                                  std::to_string(expected) + " bytes of rank " +
                                                  std::to_string(source) + "'s send buffer at displacement " +
                                                  std::to_string(sent) +
                                                  ": not mapped (a count or displacement is wrong)");
      case VectorFault::kRefused:
      case VectorFault::kNone:
        return Status(Code::kNotSupported, "the kernel refused rank " + std::to_string(reader) +
                                               " a read of rank " + std::to_string(source) +
                                               "'s memory, which alltoallv on one node needs");
    }
  }
  return Status::Ok();
}

void OnNodeAlltoall::CountVector(const Status& result, std::chrono::nanoseconds took) {
  const uint64_t messages = uint64_t{ranks_} * ranks_;
  Record(messages == 0 ? 0 : vector_bytes_ / messages, vector_bytes_, result, took);
}

}  // namespace ohio
