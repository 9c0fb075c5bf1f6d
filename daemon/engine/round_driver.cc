#include "daemon/engine/round_driver.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "daemon/engine/group.h"
#include "shm/round_verdict.h"
#include "shm/segment_change.h"

namespace ohio {
namespace {

void CopyMessage(char* dst, const std::string& message) {
  const size_t n = std::min(message.size(), kErrorMessageBytes - 1);
  std::memcpy(dst, message.data(), n);
  dst[n] = '\0';
}

}  // namespace

RoundDriver::RoundDriver(const Group& group, Segment* segment, uint64_t ssb_bytes, uint64_t srb_bytes,
                         uint64_t min_slice_bytes, Transport* transport)
    : group_(group),
      segment_(segment),
      timeout_(group.timeout_ms()),
      plan_min_slice_bytes_(min_slice_bytes),
      nonblocking_(std::make_unique<NonblockingAlltoall>(segment, &group.shape(), group.spec().node)) {
  if (transport == nullptr) return;
  const GroupSpec& spec = group.spec();
  exchange_ = std::make_unique<Exchange>(group.shape(), spec.node, spec.design, spec.node_names, spec.key,
                                         ssb_bytes, srb_bytes, transport, segment, group.tag(),
                                         group.internode_table());
  across_nodes_nonblocking_ = std::make_unique<NonblockingAcrossNodesAlltoall>(
      segment, &group.shape(), spec.design, spec.node, nonblocking_.get());
}

RoundDriver::~RoundDriver() = default;

bool RoundDriver::failed() const { return group_.failed(); }

uint32_t RoundDriver::local_ranks() const { return group_.local_ranks(); }

void RoundDriver::OnLanded(PeerId peer, const DecodedPut& put) {
  if (auto from = exchange_->NodeIndex(peer)) exchange_->OnArrived(*from, put.delivery);
}

void RoundDriver::OnMessage(PeerId peer, const ExchangeMessage& m, DaemonCounters* counters) {
  if (m.key != group_.spec().key) return;
  auto from = exchange_->NodeIndex(peer);
  if (!from) return;
  if (m.type == ExchangeMessage::Type::kRankGone) {
    RankGoneOnNode(*from, m.delivery, m.left, counters);
  } else {
    exchange_->OnMessage(*from, m);
  }
}

bool RoundDriver::OnPeerDown(PeerId peer, const std::string& message, DaemonCounters* counters) {
  if (!spans_nodes() || !exchange_->NodeIndex(peer)) return false;
  // Its puts to that node will never complete either: forgotten now, or the group, once its
  // ranks leave, would drain forever and keep its segment.
  exchange_->ForgetPutsTo(peer);
  if (failed()) return false;
  Fail(Code::kGroupFailed, message, counters);
  return true;
}

uint32_t RoundDriver::nodes() const { return group_.shape().nodes(); }

bool RoundDriver::drained() const {
  return failed() ? exchange_->puts_in_flight() == 0 : !exchange_->sends_pending();
}

bool RoundDriver::AdvanceNonblocking(DaemonCounters* counters, StagingLedger* ledger, uint64_t slice_bytes) {
  return nonblocking_->Advance(counters, ledger, group_.owner(), slice_bytes);
}

bool RoundDriver::busy() const {
  return !failed() && spans_nodes() && (phase_ == Phase::kReleased || waiting_since_.has_value());
}

bool RoundDriver::ranks_may_wait_on_engine() const {
  return !failed() && spans_nodes() && !latest_round_nonblocking_;
}

bool RoundDriver::started_calls_pending() const { return !failed() && spans_nodes() && nonblocking_->AnyStarted(); }

void RoundDriver::SetPeer(uint32_t node, const PeerGroupInfo& info) {
  if (!exchange_ || exchange_->bootstrapped()) return;
  exchange_->SetPeer(node, info);  // also when failed: a rank gone is told to the node met now
  // Like the buffer sizes, the smallest of every node's: each node hears all the others', so
  // all arrive at the same. A daemon that predates the minimum sends 0 and plans without one.
  plan_min_slice_bytes_ = std::min(plan_min_slice_bytes_, info.min_slice_bytes);
  if (!exchange_->bootstrapped()) return;
  SegmentHeader* h = segment_->header();
  h->plan_min_slice_bytes = plan_min_slice_bytes_;
  h->plan_ssb_bytes = exchange_->plan_ssb_bytes();
  h->plan_srb_bytes = exchange_->plan_srb_bytes();
  h->started.store(1, std::memory_order_release);
  Notify();
}

void RoundDriver::Notify() {
  if (SignalChange(segment_->header()) && ranks_woken_ != nullptr) ranks_woken_->fetch_add(1, std::memory_order_relaxed);
}

std::string RoundDriver::DescribeLocals(const std::vector<uint32_t>& locals) const {
  std::vector<uint32_t> ranks;
  ranks.reserve(locals.size());
  for (uint32_t l : locals) ranks.push_back(group_.group_rank(l));
  return DescribeRanks(ranks);
}

void RoundDriver::PublishRoundError(Code code, const std::string& message) {
  SegmentHeader* h = segment_->header();
  CopyMessage(h->round_error, message);
  h->round_error_code.store(static_cast<uint32_t>(code), std::memory_order_relaxed);
  h->failed_round.store(round_, std::memory_order_relaxed);
  h->released_round.store(round_, std::memory_order_release);
  round_failed_ = true;
  Notify();
}

void RoundDriver::Fail(Code code, const std::string& message, DaemonCounters* counters) {
  if (failed()) return;
  counters->CountError(code);
  counters->groups_failed.fetch_add(1, std::memory_order_relaxed);
  Close(code, message);
}

void RoundDriver::Close(Code code, const std::string& message) {
  SegmentHeader* h = segment_->header();
  if (failed()) return;
  CopyMessage(h->group_error, message);
  h->group_error_code.store(static_cast<uint32_t>(code), std::memory_order_relaxed);
  h->state.store(static_cast<uint32_t>(GroupState::kFailed), std::memory_order_release);
  Notify();
}

std::optional<std::string> RoundDriver::Depart(uint32_t l, const std::string& why, bool clean, DaemonCounters* counters) {
  if (failed()) return std::nullopt;
  departed_.resize(local_ranks());
  departed_clean_.resize(local_ranks());
  departed_[l] = why;
  departed_clean_[l] = clean;
  // Nothing more is moved into it, whatever its process does next.
  nonblocking_->Detach(l);
  if (!spans_nodes()) {
    // Its ranks settle rounds among themselves, so nothing here knows whether the others are
    // about to wait for it; and every later round would. Past its last arrival nobody needs
    // it: a round whose ranks have all arrived completes without the daemon. A rank that
    // leaves between calls is how a job ends: that closes the group without counting a failure.
    const bool idle = RankIdle(l);
    if (idle && clean) {
      Close(Code::kGroupFailed, why + "; the group is closed");
      return std::nullopt;
    }
    Fail(Code::kGroupFailed, why + (idle ? "" : " during an alltoall") + "; the group is closed", counters);
    if (!idle) counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
    return why + "; the group is closed";
  }
  const bool idle = RankIdle(l);
  // Leaving between calls is how a job ends; the others may still be finishing the last one.
  if (idle && clean) return std::nullopt;
  // A rank whose connection dropped will never call again: every node's next call would wait
  // for it until the timeout and then blame the wrong thing. Fail now, here and on every
  // other node of the group.
  const std::string message = why + (idle ? "" : " during an alltoall") + "; the group is closed";
  Fail(Code::kGroupFailed, message, counters);
  if (!idle) counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
  exchange_->TellRankGone(group_.group_rank(l), clean);
  return message;
}

void RoundDriver::FailedOnNode(const std::string& node, const Status& why, DaemonCounters* counters) {
  if (failed()) return;
  failure_told_ = true;
  Fail(why.code(), "group " + group_.key_hex() + " has failed on node " + node + ": " + why.message() + "; the group is closed",
       counters);
}

bool RoundDriver::TakeFailureToTell() {
  if (failure_told_ || !spans_nodes() || !failed()) return false;
  failure_told_ = true;
  return !exchange_->told_rank_gone();
}

void RoundDriver::RankGoneOnNode(uint32_t node, uint32_t rank, bool left, DaemonCounters* counters) {
  if (failed()) return;
  failure_told_ = true;
  Fail(Code::kGroupFailed,
       "rank " + std::to_string(rank) + " on node " + exchange_->node_name(node) + " " +
           (left ? "left the group" : "disconnected from ohiod without leaving the group") + "; the group is closed",
       counters);
}

bool RoundDriver::RankIdle(uint32_t l) const {
  const RankSlot* s = segment_->slot(l);
  // A nonblocking call it started that is not complete yet is a call under way.
  const bool nonblocking_idle = RoundReached(segment_->header()->nonblocking_done.load(std::memory_order_acquire),
                                         s->nonblocking_started.load(std::memory_order_acquire));
  if (!nonblocking_idle) return false;
  if (!spans_nodes()) {
    return
           s->arrived_round.load(std::memory_order_acquire) == s->done_round.load(std::memory_order_acquire);
  }
  if (phase_ == Phase::kFilling) return !ArrivedAt(l, round_);
  return segment_->Done(l, round_);
}

bool RoundDriver::Watch(Clock::time_point now, DaemonCounters* counters) {
  segment_->header()->daemon_seen_ns.store(MonotonicNs(), std::memory_order_relaxed);
  FoldCallStats(counters);
  if (failed()) return false;
  if (auto stalled = nonblocking_->Stalled(now, timeout_)) {
    Fail(Code::kTimeout, *stalled + "; the group is closed", counters);
    return true;
  }
  const uint32_t n = local_ranks();
  // The round the furthest rank has arrived at, and who has not arrived there yet.
  uint32_t front = segment_->slot(0)->arrived_round.load(std::memory_order_acquire);
  for (uint32_t l = 1; l < n; ++l) {
    const uint32_t a = segment_->slot(l)->arrived_round.load(std::memory_order_acquire);
    if (!RoundReached(front, a)) front = a;
  }
  std::vector<uint32_t> missing;
  for (uint32_t l = 0; l < n; ++l) {
    if (segment_->slot(l)->arrived_round.load(std::memory_order_acquire) != front) missing.push_back(l);
  }
  if (missing.empty() || front != watched_round_) {
    watched_round_ = missing.empty() ? 0 : front;
    watched_since_ = now;
    return false;
  }
  if (now - watched_since_ < timeout_) return false;
  FailNotEntered(missing, front, counters);
  return true;
}

void RoundDriver::FoldCallStats(DaemonCounters* counters) {
  const CallStats& st = segment_->header()->stats;
  auto take = [](const std::atomic<uint64_t>& now, uint64_t* seen) {
    const uint64_t v = now.load(std::memory_order_relaxed);
    const uint64_t delta = v - *seen;
    *seen = v;
    return delta;
  };
  counters->collectives_served.fetch_add(take(st.calls, &folded_.calls), std::memory_order_relaxed);
  counters->collectives_failed.fetch_add(take(st.failed, &folded_.failed), std::memory_order_relaxed);
  for (size_t code = 0; code < 16; ++code) {
    const uint64_t n = take(st.failed_by_code[code], &folded_.failed_by_code[code]);
    if (n != 0) counters->errors[static_cast<size_t>(KindOf(static_cast<Code>(code)))].fetch_add(n, std::memory_order_relaxed);
  }
  counters->rounds.fetch_add(take(st.rounds, &folded_.rounds), std::memory_order_relaxed);
  counters->bytes_local.fetch_add(take(st.bytes_local, &folded_.bytes_local), std::memory_order_relaxed);
  for (size_t c = 0; c < kLatencySizeClasses; ++c) {
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      const uint64_t count = take(st.latency_count[c][b], &folded_.latency_count[c][b]);
      if (count != 0) counters->latency.Add(c, b, count, 0);
    }
    const uint64_t sum = take(st.latency_sum_ns[c], &folded_.latency_sum_ns[c]);
    if (sum != 0) counters->latency.Add(c, 0, 0, sum);
  }
  for (size_t f = 0; f < kHandedBackFunctions; ++f) {
    for (size_t r = 0; r < kHandBackReasons; ++r) {
      counters->handed_back[f][r].fetch_add(take(st.handed_back[f][r], &folded_.handed_back[f][r]),
                                            std::memory_order_relaxed);
    }
  }
}

bool RoundDriver::Advance(Clock::time_point now, DaemonCounters* counters) {
  if (failed()) return false;
  if (!spans_nodes()) return false;
  bool changed = DrainNonblocking(counters);
  changed |= PublishFinished();
  if (phase_ == Phase::kFilling) {
    changed |= FillNonblocking(now, counters);
    if (failed()) return true;
    if (!Begin(now, counters)) return changed;
    if (failed() || phase_ == Phase::kFilling) return true;
    latest_round_nonblocking_ = across_nodes_nonblocking_->moving();
    changed = true;  // and its puts go out in this same pass
  }
  changed |= AdvanceExchange(now, counters);
  if (failed()) return true;
  // What landed in this pass is copied out in it, as a rank waiting for it would.
  return DrainNonblocking(counters) || changed;
}

bool RoundDriver::FillNonblocking(Clock::time_point now, DaemonCounters* counters) {
  Result<bool> arrived = across_nodes_nonblocking_->Fill(round_);
  if (!arrived.ok()) {
    FailNonblocking(arrived.status(), counters);
    return true;
  }
  if (arrived.value() || across_nodes_nonblocking_->moving()) return arrived.value();
  // Some ranks started a call and the others have not: the group's timeout applies as to a round.
  if (auto stalled = nonblocking_->Stalled(now, timeout_)) {
    Fail(Code::kTimeout, *stalled + "; the group is closed", counters);
    counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

bool RoundDriver::DrainNonblocking(DaemonCounters* counters) {
  Result<bool> changed = across_nodes_nonblocking_->Drain();
  if (changed.ok()) return changed.value();
  FailNonblocking(changed.status(), counters);
  return true;
}

void RoundDriver::FailNonblocking(const Status& why, DaemonCounters* counters) {
  Fail(why.code(), why.message() + "; the group is closed", counters);
  counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
  // The other nodes' rounds would wait for this node's part until their timeout.
  if (auto rank = across_nodes_nonblocking_->culprit()) exchange_->TellRankGone(*rank, false);
}

bool RoundDriver::ArrivedAt(uint32_t l, uint32_t round) const {
  // A rank may be a round ahead: an eager round its node's ranks settled among themselves
  // (they disagreed, or one opted out) ends for them before it ends here.
  return segment_->Arrived(l, round);
}

void RoundDriver::FailNotEntered(const std::vector<uint32_t>& missing, uint32_t round, DaemonCounters* counters) {
  Fail(Code::kTimeout,
       DescribeLocals(missing) + " did not enter the alltoall within " + std::to_string(timeout_.count()) +
           " ms of the first rank (round " + std::to_string(round) + "); the group is closed",
       counters);
  counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
}

bool RoundDriver::Begin(Clock::time_point now, DaemonCounters* counters) {
  const uint32_t n = local_ranks();
  uint32_t arrived = 0;
  for (uint32_t l = 0; l < n; ++l) arrived += ArrivedAt(l, round_);
  if (arrived == 0) return false;
  if (!call_started_) call_started_ = now;
  if (arrived < n) {
    std::vector<uint32_t> missing;
    for (uint32_t l = 0; l < n; ++l) {
      if (ArrivedAt(l, round_)) continue;
      missing.push_back(l);
      if (l < departed_.size() && !departed_[l].empty()) {
        Fail(Code::kGroupFailed, departed_[l] + "; the group is closed", counters);
        counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
        if (spans_nodes()) exchange_->TellRankGone(group_.group_rank(l), departed_clean_[l]);
        return true;
      }
    }
    if (!waiting_since_) waiting_since_ = now;
    if (now - *waiting_since_ < timeout_) return false;
    FailNotEntered(missing, round_, counters);
    return true;
  }
  // Every local rank is in: they must agree on the message size before anything moves.
  const Status verdict = NodeVerdict(
      n, [this](uint32_t l) { return EntryFor(segment_->slot(l), round_).bytes_per_rank.load(std::memory_order_relaxed); },
      [this](uint32_t l) { return group_.group_rank(l); });
  const bool opt_out = verdict.code() == Code::kOptedOut;
  const bool disagree = verdict.code() == Code::kSizeMismatch;
  segment_->header()->delivered.store(0, std::memory_order_relaxed);
  published_delivered_ = 0;
  const RoundEntry& e0 = EntryFor(segment_->slot(0), round_);
  RoundStamps& st = segment_->header()->stamps[round_ & 1];
  st.round.store(round_, std::memory_order_relaxed);
  for (auto* t : {&st.posted_ns, &st.written_ns, &st.landed_ns, &st.peers_begun_ns, &st.trip_ns}) {
    t->store(0, std::memory_order_relaxed);
  }
  st.begun_ns.store(MonotonicNs(), std::memory_order_release);
  exchange_->BeginRound(round_, e0.bytes_per_rank.load(std::memory_order_relaxed), disagree, opt_out,
                        e0.round_in_call.load(std::memory_order_relaxed));
  if (!verdict.ok()) {
    PublishRoundError(verdict.code(), verdict.message());
    if (disagree) counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
  } else if (!exchange_->eager()) {
    // Ranks of an eager round meet by themselves and wait for blocks, not for a release.
    segment_->header()->released_round.store(round_, std::memory_order_release);
    Notify();
  }
  phase_ = Phase::kReleased;
  released_at_ = now;
  waiting_since_.reset();
  return true;
}

bool RoundDriver::PublishFinished() {
  SegmentHeader* h = segment_->header();
  const uint32_t finished = h->finished_round.load(std::memory_order_relaxed);
  const uint32_t next = finished + 1;
  // Over here (or the round under way is past it), its puts left, its ranks through copying.
  if (next == round_ || exchange_->in_flight(next) != 0) return false;
  if (!segment_->AllDone(next)) return false;
  h->finished_round.store(next, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // paired with AcrossNodesAlltoall::AwaitFinished's
  // Only a rank that waits for this round (or an earlier one) to finish needs waking; one asleep
  // for its next round's blocks would be woken for nothing.
  for (uint32_t l = 0; l < local_ranks(); ++l) {
    const uint32_t awaited = segment_->slot(l)->awaiting_finished.load(std::memory_order_seq_cst);
    if (awaited != 0 && RoundReached(next, awaited)) {
      Notify();
      break;
    }
  }
  return true;
}

bool RoundDriver::AdvanceExchange(Clock::time_point now, DaemonCounters* counters) {
  bool changed = false;
  const bool eager = exchange_->eager();
  if (exchange_->error() && !round_failed_) {
    PublishRoundError(exchange_->error_code(), *exchange_->error());
    if (exchange_->error_code() != Code::kOptedOut) counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
    changed = true;
  }
  const uint32_t n = local_ranks();
  uint32_t consumed = UINT32_MAX;
  bool all_done = true;
  for (uint32_t l = 0; l < n; ++l) {
    const RankSlot* s = segment_->slot(l);
    consumed = std::min(consumed, s->consumed.load(std::memory_order_acquire));
    all_done &= segment_->Done(l, round_);
  }
  changed |= exchange_->Progress(consumed);
  const uint64_t in_flight = exchange_->puts_in_flight();
  if (in_flight > counters->puts_in_flight_peak.load(std::memory_order_relaxed)) {
    counters->puts_in_flight_peak.store(in_flight, std::memory_order_relaxed);  // the engine thread alone writes it
  }
  StampSends();
  if (exchange_->delivered() != published_delivered_) {
    published_delivered_ = exchange_->delivered();
    SegmentHeader* h = segment_->header();
    if (exchange_->all_delivered()) StampLanded();
    if (eager) {
      h->eager_landed[round_ & 1].store(uint64_t{round_} << 32 | published_delivered_, std::memory_order_release);
    } else {
      h->delivered.store(published_delivered_, std::memory_order_release);
    }
    // Ranks that spin see the store; sleeping ones are woken for it unless this is a part of an
    // eager round on a node whose ranks share its cores (set_wake_for_each_eager_block).
    if (!eager || wake_for_each_eager_block_ || exchange_->all_delivered()) Notify();
    changed = true;
  }
  // An eager round is over once its blocks are out and in: its ranks copy out on their own,
  // and the next round uses the other halves.
  if ((eager || all_done) && exchange_->complete() && (!exchange_->error() || round_failed_)) {
    return FinishRound(now, counters);
  }
  if (now - released_at_ >= timeout_) {
    // Not told to the other nodes: every node of a stalled round reaches its own timeout about
    // now, each naming what it waited for, and a tell could beat the node that knows better.
    failure_told_ = true;
    Fail(Code::kTimeout,
         "round " + std::to_string(round_) + " did not complete within " + std::to_string(timeout_.count()) +
             " ms: node " + exchange_->node_name(group_.spec().node) + " was waiting for " +
             (!exchange_->complete() ? exchange_->Waiting() : "its own ranks to copy out") + "; the group is closed",
         counters);
    return true;
  }
  return changed;
}

void RoundDriver::StampSends() {
  RoundStamps& st = segment_->header()->stamps[round_ & 1];
  if (st.posted_ns.load(std::memory_order_relaxed) == 0 && exchange_->all_posted()) {
    st.posted_ns.store(MonotonicNs(), std::memory_order_relaxed);
  }
}

void RoundDriver::OnPutDone(const DecodedPut& put) {
  exchange_->OnPutDone(put);
  // The round's puts may complete after it ended here (an eager round ends once its blocks are
  // out and in): the stamps go by the put's parity.
  RoundStamps& st = segment_->header()->stamps[put.parity];
  if (exchange_->in_flight(put.parity) == 0 && st.posted_ns.load(std::memory_order_relaxed) != 0 &&
      st.written_ns.load(std::memory_order_relaxed) == 0) {
    st.written_ns.store(MonotonicNs(), std::memory_order_relaxed);
  }
}

void RoundDriver::StampLanded() {
  RoundStamps& st = segment_->header()->stamps[round_ & 1];
  uint64_t latest_begun = 0, trip = 0;
  exchange_->PeerTimes(&latest_begun, &trip);
  st.peers_begun_ns.store(latest_begun, std::memory_order_relaxed);
  st.trip_ns.store(trip, std::memory_order_relaxed);
  // Published before the ranks learn of the last block (the release store that follows).
  st.landed_ns.store(MonotonicNs(), std::memory_order_relaxed);
}

bool RoundDriver::FinishRound(Clock::time_point now, DaemonCounters* counters) {
  const uint32_t n = local_ranks();
  if (!round_failed_) {
    const RoundEntry& e0 = EntryFor(segment_->slot(0), round_);
    const uint64_t m = e0.bytes_per_rank.load(std::memory_order_relaxed);
    const bool vector = m == kVectorBytes;
    // An alltoallv's ranks learn how many rounds their call takes from its first round's
    // verdict, which the exchange took.
    const uint32_t rounds_in_call =
        vector ? exchange_->vector_rounds_in_call() : e0.rounds_in_call.load(std::memory_order_relaxed);
    if (e0.round_in_call.load(std::memory_order_relaxed) + 1 == rounds_in_call) {
      counters->collectives_served.fetch_add(1, std::memory_order_relaxed);
      counters->bytes_local.fetch_add(vector ? exchange_->vector_local_bytes() : uint64_t{n} * n * m,
                                      std::memory_order_relaxed);
      // Alltoallv: latency by the mean message this node sent.
      const uint64_t message = vector ? exchange_->vector_sent_bytes() / (uint64_t{n} * group_.shape().size()) : m;
      if (call_started_) counters->latency.Record(message, now - *call_started_);
      call_started_.reset();
    }
    counters->rounds.fetch_add(1, std::memory_order_relaxed);
  } else {
    // The call ends with the round's error.
    const auto code = static_cast<Code>(segment_->header()->round_error_code.load(std::memory_order_relaxed));
    if (code != Code::kOptedOut) counters->CountError(code);
    call_started_.reset();
  }
  round_failed_ = false;
  exchange_->EndRound();
  ++round_;
  phase_ = Phase::kFilling;
  PublishFinished();
  return true;
}



}  // namespace ohio
