// Alltoallv of a group on one node: counts of any size per pair, read in one copy.
//
// A rank writes its send counts and displacements into its count table in the segment, then
// arrives offering its send buffer. Once everyone has arrived, each rank takes, from every
// sender's table, the bytes that sender sends it: by MPI's rule they must equal what the rank
// expects of that sender, which it alone knows, so no counts are exchanged beyond the tables.
// It reads the bytes straight from the sender's buffer (process_vm_readv), and zero-count pairs
// cost nothing. A pair that disagrees, a range that is not mapped or a read the kernel refuses is
// published in the rank's slot before it is done; every rank waits until all are done (their
// send buffers are being read until then) and returns the first fault published, so all ranks
// fail alike with the same text and the group stays usable.
//
// There is no staged fallback: a group whose ranks cannot read each other's memory gets
// kNotSupported on every rank, so that a caller like the MPI shim can do the call another way.
#include <cstring>

#include "client/local_alltoall.h"
#include "client/single_copy.h"
#include "shm/event_word.h"

namespace ohio {
namespace {

// An offer for a rank that sends nothing: never read, but not "cannot offer" (0).
const uint8_t kNothingToRead = 0;

}  // namespace

Status LocalAlltoall::Alltoallv(const VectorCall& call, uint32_t* next_round) {
  rounds_this_call_ = 0;
  if (header_->single_copy_refused.load(std::memory_order_relaxed) != 0) {
    // Set in an earlier call, which every rank has finished: all ranks see it alike.
    return Status(Code::kNotSupported, "alltoallv on one node reads other ranks' memory, which the kernel refused "
                                       "this group earlier");
  }
  const uint32_t size = ranks_;
  const uint32_t k = (*next_round)++;
  CountEntry* table = segment_->count_table(local_, k);
  for (uint32_t j = 0; j < size; ++j) {
    table[j] = CountEntry{call.send_counts[j], call.send_displs[j], call.recv_counts[j]};
  }
  const void* offer = !SingleCopyPossible() ? nullptr : call.send != nullptr ? call.send : &kNothingToRead;
  Arrive(k, kVectorBytes, 0, 1, offer);
  if (Status s = MeetEveryone(k); !s.ok()) return s;
  if (Status v = Verdict(k); !v.ok()) {
    Done(k, false);
    return v;
  }
  if (const uint32_t l = FirstWithoutOffer(k); l < ranks_) {
    Done(k, false);
    return Status(Code::kNotSupported, "rank " + std::to_string(shape_->rank_at(0, l)) +
                                           " may not have its memory read (ptrace restrictions), which "
                                           "alltoallv on one node needs");
  }
  const uint32_t me = shape_->rank_at(0, local_);
  bool faulted = false;
  // Each rank starts with the next one, so that no send buffer has every reader at once.
  for (uint32_t i = 0; i < ranks_ && !faulted; ++i) {
    const uint32_t l = (local_ + i) % ranks_;
    const uint32_t src = shape_->rank_at(0, l);
    const CountEntry sent = segment_->count_table(l, k)[me];
    const uint64_t expected = call.recv_counts[src];
    if (sent.bytes != expected) {
      RecordFault(k, VectorFault::kSizeMismatch, src, sent.bytes, expected);
      faulted = true;
      continue;
    }
    if (sent.bytes == 0) continue;
    uint8_t* to = call.recv + call.recv_displs[src];
    if (l == local_) {
      std::memcpy(to, call.send + sent.displacement, sent.bytes);
      continue;
    }
    const RankSlot* slot = segment_->slot(l);
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
  report_->Lap(Stage::kReadPeers);
  if (local_ == 0) {
    // For the stats: every table stays as it is until this rank is done, since no rank can
    // leave the call (and write its table for the next one) before that.
    vector_bytes_ = 0;
    for (uint32_t l = 0; l < ranks_; ++l) {
      const CountEntry* t = segment_->count_table(l, k);
      for (uint32_t j = 0; j < size; ++j) vector_bytes_ += t[j].bytes;
    }
  }
  Done(k, true);
  // The others read this rank's send buffer until they are done: it must not change before.
  Status s = waiter_->Wait([this, k] { return segment_->AllDone(k); }, "the other ranks",
                           "finish reading this rank's send buffer");
  report_->Lap(Stage::kAwaitReaders);
  if (!s.ok()) return s;
  return VectorOutcome(k);
}

void LocalAlltoall::RecordFault(uint32_t k, VectorFault kind, uint32_t source, uint64_t sent, uint64_t expected) {
  RankSlot* me = segment_->slot(local_);
  me->fault_kind.store(static_cast<uint32_t>(kind), std::memory_order_relaxed);
  me->fault_source.store(source, std::memory_order_relaxed);
  me->fault_sent.store(sent, std::memory_order_relaxed);
  me->fault_expected.store(expected, std::memory_order_relaxed);
  // Before this rank's done (a seq_cst store), so whoever sees it done sees the fault.
  me->fault_round.store(k, std::memory_order_release);
}

Status LocalAlltoall::VectorOutcome(uint32_t k) const {
  for (uint32_t l = 0; l < ranks_; ++l) {
    const RankSlot* slot = segment_->slot(l);
    if (slot->fault_round.load(std::memory_order_acquire) != k) continue;
    const std::string reader = "rank " + std::to_string(shape_->rank_at(0, l));
    const std::string source = "rank " + std::to_string(slot->fault_source.load(std::memory_order_relaxed));
    const uint64_t sent = slot->fault_sent.load(std::memory_order_relaxed);
    const uint64_t expected = slot->fault_expected.load(std::memory_order_relaxed);
    switch (static_cast<VectorFault>(slot->fault_kind.load(std::memory_order_relaxed))) {
      case VectorFault::kSizeMismatch:
        return Status(Code::kSizeMismatch, source + " sends " + std::to_string(sent) + " bytes to " + reader +
                                               ", which expects " + std::to_string(expected) + " from it");
      case VectorFault::kUnreadable:
        return Status(Code::kInvalidArgument, reader + " could not read " + std::to_string(expected) + " bytes of " +
                                                  source + "'s send buffer at displacement " + std::to_string(sent) +
                                                  ": not mapped (a count or displacement is wrong)");
      case VectorFault::kRefused:
      case VectorFault::kNone:
        return Status(Code::kNotSupported, "the kernel refused " + reader + " a read of " + source +
                                               "'s memory, which alltoallv on one node needs");
    }
  }
  return Status::Ok();
}

void LocalAlltoall::CountVector(const Status& result, std::chrono::nanoseconds took) {
  const uint64_t messages = uint64_t{ranks_} * ranks_;
  Record(messages == 0 ? 0 : vector_bytes_ / messages, vector_bytes_, result, took);
}

}  // namespace ohio
