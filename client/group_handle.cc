#include "client/group_handle.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "shm/copy_plan.h"
#include "shm/exchange_plan.h"
#include "shm/staging.h"

namespace ohio {
namespace {

// While a collective waits, the daemon gets this long past its own timeout to say what went
// wrong before the rank gives up on it.
constexpr std::chrono::milliseconds kDaemonGrace{10000};
std::chrono::microseconds SpinFromEnvironment() {
  const char* v = std::getenv("OHIO_SPIN_US");
  if (v == nullptr) return std::chrono::microseconds(20);
  return std::chrono::microseconds(std::strtoul(v, nullptr, 10));
}

void RunCopies(const std::vector<CopySpan>& spans, const uint8_t* src, uint8_t* dst) {
  for (const CopySpan& s : spans) std::memcpy(dst + s.dst, src + s.src, s.len);
}

}  // namespace

Result<std::unique_ptr<GroupHandle>> GroupHandle::Join(ControlConnection* connection,
                                                       const control::JoinGroup& join) {
  auto joined = connection->Join(join);
  if (!joined.ok()) return joined.status();
  std::unique_ptr<GroupHandle> g(new GroupHandle());
  g->connection_ = connection;
  g->key_ = join.key();
  g->doorbell_fd_ = joined->doorbell_fd;
  auto segment = Segment::Attach(joined->segment_fd);
  if (!segment.ok()) return segment.status();
  g->segment_ = std::move(segment).value();
  auto shape = GroupShape::Make(static_cast<uint32_t>(join.node_names_size()),
                                std::vector<uint32_t>(join.rank_node().begin(), join.rank_node().end()));
  if (!shape.ok()) return shape.status();
  g->shape_ = std::move(shape).value();
  g->node_ = join.rank_node(static_cast<int>(join.rank()));
  g->local_ = joined->reply.local_rank();
  const SegmentHeader* h = g->segment_.header();
  if (h->local_ranks != g->shape_.ppn(g->node_) || g->local_ >= h->local_ranks ||
      g->local_ != g->shape_.local_index(join.rank())) {
    return Status(Code::kProtocol, "ohiod's view of the group's placement differs from this rank's");
  }
  auto algo = ParseAlgorithm(joined->reply.algorithm());
  if (!algo) return Status(Code::kProtocol, "ohiod chose an unknown algorithm '" + joined->reply.algorithm() + "'");
  g->algorithm_ = *algo;
  g->waiter_ = RoundWaiter(g->segment_.header(), connection->fd(), SpinFromEnvironment(),
                           std::chrono::milliseconds(h->timeout_ms) + kDaemonGrace);
  if (g->shape_.nodes() == 1) {
    g->local_alltoall_ =
        std::make_unique<LocalAlltoall>(&g->segment_, &g->shape_, g->algorithm_, g->local_, &g->waiter_);
  } else {
    // Rounds completed before this rank joined (none unless the group is in use: a late join).
    g->next_round_ = std::max<uint32_t>(1, h->ready_round.load(std::memory_order_acquire));
  }
  return g;
}

GroupHandle::~GroupHandle() {
  if (doorbell_fd_ >= 0) close(doorbell_fd_);
}

void GroupHandle::RingIfSleeping() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (segment_.header()->daemon_sleeping.load(std::memory_order_relaxed) != 0) {
    uint64_t one = 1;
    (void)!write(doorbell_fd_, &one, sizeof(one));
  }
}

template <typename CopyIn>
Status GroupHandle::Arrive(uint32_t k, uint64_t bytes_per_rank, uint32_t round, uint32_t rounds, CopyIn copy_in) {
  SegmentHeader* h = segment_.header();
  RankSlot* slot = segment_.slot(local_);
  Status s = waiter_.Wait([h, k] { return h->ready_round.load(std::memory_order_acquire) == k; }, "ohiod",
                          "open the shared send buffer");
  if (!s.ok()) return s;
  copy_in();
  slot->consumed.store(0, std::memory_order_relaxed);
  RoundEntry& e = EntryFor(slot, k);
  e.bytes_per_rank.store(bytes_per_rank, std::memory_order_relaxed);
  e.round_in_call.store(round, std::memory_order_relaxed);
  e.rounds_in_call.store(rounds, std::memory_order_relaxed);
  slot->arrived_round.store(k, std::memory_order_release);
  RingIfSleeping();
  return waiter_.Wait([h, k] { return h->released_round.load(std::memory_order_acquire) == k; }, "ohiod",
                      "complete the alltoall");
}

Status GroupHandle::AwaitGroupStart() {
  // Round 1 is published only once the daemons of every node have met: only then are the
  // sizes every node plans with known.
  SegmentHeader* h = segment_.header();
  if (h->started.load(std::memory_order_acquire) != 0) return Status::Ok();
  return waiter_.Wait([h] { return h->started.load(std::memory_order_acquire) != 0; }, "ohiod",
                      "bring the group's nodes together");
}

Status GroupHandle::RoundError() const {
  const SegmentHeader* h = segment_.header();
  return Status(static_cast<Code>(h->round_error_code.load(std::memory_order_relaxed)),
                std::string(h->round_error, strnlen(h->round_error, kErrorMessageBytes)));
}

Status GroupHandle::Check() const {
  if (!broken_.ok()) return broken_;
  if (waiter_.GroupFailed()) return waiter_.GroupError();
  if (waiter_.DaemonGone()) return Status(Code::kDaemonLost, "the connection to ohiod closed");
  return Status::Ok();
}

Status GroupHandle::Skip() {
  if (!broken_.ok()) return broken_;
  SegmentHeader* h = segment_.header();
  if (Status s = AwaitGroupStart(); !s.ok()) return broken_ = s;
  if (local_alltoall_) {
    Status s = local_alltoall_->Skip(&next_round_);
    if (s.code() != Code::kSkipped && !s.ok()) broken_ = s;
    return s;
  }
  const uint32_t k = next_round_;
  Status s = Arrive(k, kSkipBytes, 0, 1, [] {});
  if (!s.ok()) return broken_ = s;
  Status result;
  if (h->failed_round.load(std::memory_order_acquire) == k) {
    result = RoundError();
  } else {
    result = Status(Code::kProtocol, "ohiod released a round a rank had opted out of");
  }
  RankSlot* slot = segment_.slot(local_);
  slot->done_round.store(k, std::memory_order_release);
  RingIfSleeping();
  ++next_round_;
  return result;
}

Status GroupHandle::Alltoall(const void* send, void* recv, uint64_t bytes_per_rank) {
  if (!broken_.ok()) return broken_;
  if (bytes_per_rank > 0 && (send == nullptr || recv == nullptr)) {
    return Status(Code::kInvalidArgument, "send and recv must not be NULL");
  }
  if (bytes_per_rank == kSkipBytes) return Status(Code::kInvalidArgument, "bytes_per_rank is too large");
  SegmentHeader* h = segment_.header();
  if (Status s = AwaitGroupStart(); !s.ok()) return broken_ = s;
  if (local_alltoall_) {
    Status s = local_alltoall_->Alltoall(static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv),
                                         bytes_per_rank, &next_round_);
    if (!s.ok() && s.code() != Code::kSizeMismatch && s.code() != Code::kSkipped && s.code() != Code::kNoMemory) {
      broken_ = s;
    }
    return s;
  }
  auto staging = PlanGroupStaging(shape_, algorithm_, h->plan_ssb_bytes, h->plan_srb_bytes, bytes_per_rank);
  if (!staging.ok()) return staging.status();
  RankSlot* slot = segment_.slot(local_);
  const auto* src = static_cast<const uint8_t*>(send);
  auto* dst = static_cast<uint8_t*>(recv);
  for (uint64_t round = 0; round < staging->rounds; ++round) {
    const uint32_t k = next_round_;
    Status s = Arrive(k, bytes_per_rank, static_cast<uint32_t>(round), static_cast<uint32_t>(staging->rounds), [&] {
      RunCopies(PlanCopyIn(shape_, algorithm_, node_, local_, staging.value(), round), src, segment_.ssb());
    });
    if (!s.ok()) return broken_ = s;
    auto round_failed = [h, k] { return h->failed_round.load(std::memory_order_acquire) == k; };
    if (!round_failed()) {
      RunCopies(PlanCopyOutLocal(shape_, algorithm_, node_, local_, staging.value(), round), segment_.ssb(), dst);
      if (shape_.nodes() > 1) {
        s = CopyOutDeliveries(staging.value(), round, k, dst);
        if (!s.ok()) return broken_ = s;
      }
    }
    Status round_error;
    if (round_failed()) {
      round_error = RoundError();
    }
    slot->done_round.store(k, std::memory_order_release);
    RingIfSleeping();
    ++next_round_;
    if (!round_error.ok()) return round_error;
  }
  return Status::Ok();
}

Status GroupHandle::CopyOutDeliveries(const Staging& staging, uint64_t round, uint32_t k, uint8_t* dst) {
  SegmentHeader* h = segment_.header();
  RankSlot* slot = segment_.slot(local_);
  const auto deliveries =
      PlanDeliveries(shape_, algorithm_, node_, staging.length(round), h->plan_srb_bytes);
  for (uint32_t d = 0; d < deliveries.size(); ++d) {
    Status s = waiter_.Wait(
        [h, d, k] {
          return h->delivered.load(std::memory_order_acquire) > d || h->failed_round.load(std::memory_order_acquire) == k;
        },
        "ohiod", "receive the other nodes' blocks");
    if (!s.ok()) return s;
    if (h->failed_round.load(std::memory_order_acquire) == k) return Status::Ok();
    RunCopies(PlanCopyOutDelivery(shape_, node_, local_, staging, round, deliveries[d]), segment_.srb(), dst);
    slot->consumed.store(d + 1, std::memory_order_release);
    RingIfSleeping();
  }
  return Status::Ok();
}

Status GroupHandle::Leave() { return connection_->Leave(key_); }

}  // namespace ohio
