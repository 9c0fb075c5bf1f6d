#include "client/libohio/group_handle.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/host_cpus.h"
#include "common/spin_mode.h"

namespace ohio {
namespace {

// While a collective waits, a running daemon gets this long past its own timeout to say what
// went wrong before the rank gives up on it (a stopped one none: client/libohio/round_waiter.h).
constexpr std::chrono::milliseconds kDaemonGrace{10000};
// How long one look of IalltoallWait sleeps on the group's futex (woken at once when the call
// completes) before it looks again at the group, the daemon and the deadline.
constexpr std::chrono::microseconds kWaitSlice{100000};

std::chrono::microseconds MicrosecondsFromEnvironment(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return std::chrono::microseconds(v == nullptr ? fallback : std::strtol(v, nullptr, 10));
}

// How this rank waits, from the CPUs ohiod counts for the node (what this host offers, from a
// daemon that does not say) and the group's ranks on it plus ohiod: with more than
// kMostWantingPerCpu of them per CPU it sleeps at once unless OHIO_SPIN_US says otherwise; with
// more of them than CPUs it yields often while it spins.
RoundWaiter MakeWaiter(SegmentHeader* header, const ControlConnection& connection, double node_cpus,
                       bool across_nodes) {
  const double cpus = node_cpus > 0 ? node_cpus : HostCpus();
  const SpinMode mode = ChooseSpinMode(cpus, header->local_ranks + 1);
  return RoundWaiter(header, connection.fd(), connection.daemon_pid(),
                     MicrosecondsFromEnvironment("OHIO_SPIN_US", mode == SpinMode::kSleep ? 0 : 200),
                     MicrosecondsFromEnvironment("OHIO_SPIN_MAX_US", 1000), std::chrono::milliseconds(header->timeout_ms),
                     kDaemonGrace, mode != SpinMode::kOwnCore, across_nodes);
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
  g->rank_ = join.rank();
  const SegmentHeader* h = g->segment_.header();
  if (h->local_ranks != g->shape_.ppn(g->node_) || g->local_ >= h->local_ranks ||
      g->local_ != g->shape_.local_index(join.rank())) {
    return Status(Code::kProtocol, "ohiod's view of the group's placement differs from this rank's");
  }
  auto algo = ParseNodeLevelDesign(joined->reply.algorithm());
  if (!algo) return Status(Code::kProtocol, "ohiod chose an unknown algorithm '" + joined->reply.algorithm() + "'");
  g->design_ = *algo;
  g->selection_table_ = joined->reply.selection_table();
  g->transport_ = joined->reply.transport();
  g->waiter_ = MakeWaiter(g->segment_.header(), *connection, joined->reply.node_cpus(), g->spans_nodes());
  return g;
}

GroupHandle::~GroupHandle() {
  if (stages_.enabled()) std::fputs(stages_.Render(rank_).c_str(), stderr);
  if (doorbell_fd_ >= 0) close(doorbell_fd_);
}

Status GroupHandle::AwaitGroupStart() {
  // The sizes every node plans with are known only once the daemons of every node have met.
  SegmentHeader* h = segment_.header();
  if (on_node_ || across_nodes_) return Status::Ok();
  Status s = waiter_.Wait([h] { return h->started.load(std::memory_order_acquire) != 0; }, "ohiod",
                          "bring the group's nodes together");
  if (!s.ok()) return s;
  if (shape_.nodes() == 1) {
    on_node_ = std::make_unique<OnNodeAlltoall>(&segment_, &shape_, design_, local_, &waiter_, &stages_);
  } else {
    across_nodes_ = std::make_unique<AcrossNodesAlltoall>(&segment_, &shape_, design_, node_, local_, &waiter_, doorbell_fd_,
                                                    &stages_);
  }
  nonblocking_ = std::make_unique<NonblockingAlltoalls>(&segment_, local_, &waiter_, doorbell_fd_, spans_nodes());
  return Status::Ok();
}

Status GroupHandle::AwaitGroupStartToMoveData() {
  if (Status s = AwaitGroupStart(); !s.ok()) return s;
  // At the first call that moves data, not at the join: a communicator whose calls the MPI
  // library runs (its set-up reads the table through AwaitGroupStart) never commits its SSB
  // and SRB, and its first call does not wait for them.
  if (!populated_) segment_.Populate();
  populated_ = true;
  return Status::Ok();
}

Status GroupHandle::SettleNonblocking() {
  const uint32_t last = nonblocking_->last_started();
  if (on_node_ || last == settled_call_) return Status::Ok();
  if (Status s = nonblocking_->Await(last); !s.ok()) return s;
  settled_call_ = last;
  next_round_ = segment_.slot(local_)->arrived_round.load(std::memory_order_acquire) + 1;
  across_nodes_->AfterDaemonRounds();
  return Status::Ok();
}

Status GroupHandle::Finish(Status s) {
  // Errors every rank reached alike, about the call and not the group.
  const bool call_only = s.code() == Code::kSizeMismatch || s.code() == Code::kOptedOut ||
                         s.code() == Code::kNoMemory || s.code() == Code::kNotSupported ||
                         s.code() == Code::kInvalidArgument;
  if (!s.ok() && !call_only) {
    broken_ = s;
  }
  // A daemon still stopped when the group's timeout passed is not waited for again: leaving
  // the group then costs no second timeout (client/libohio/control_connection.h).
  if (s.code() == Code::kTimeout && waiter_.DaemonStopped()) connection_->GiveUp(s);
  return s;
}

Status GroupHandle::Check() const {
  if (!broken_.ok()) return broken_;
  if (waiter_.GroupFailed()) return waiter_.GroupError();
  // A group on one node goes on without its daemon: its ranks meet in the segment alone, and a
  // call that needs the daemon (a nonblocking one) finds it gone in its own wait. Deciding here
  // would let one rank stop at a call the others go into.
  if (on_node_ != nullptr) return Status::Ok();
  // Every rank of a group crosses from "seen lately" to asking the kernel at the same moment
  // (three ticks after the daemon's last look), so they decide alike as often as they would
  // asking the kernel every time, which costs a system call per call.
  if (!waiter_.DaemonSeenLately() && waiter_.DaemonGone()) {
    return Status(Code::kDaemonLost, "the connection to ohiod closed");
  }
  return Status::Ok();
}

bool GroupHandle::Usable() const {
  // Check()'s order and rules, answered as a bool.
  return broken_.ok() && !waiter_.GroupFailed() &&
         (on_node_ != nullptr || waiter_.DaemonSeenLately() || !waiter_.DaemonGone());
}

Status GroupHandle::Selection(const std::string** table, const std::string** transport) {
  if (!broken_.ok()) return broken_;
  if (Status s = AwaitGroupStart(); !s.ok()) return broken_ = s;
  *table = &selection_table_;
  *transport = &transport_;
  return Status::Ok();
}

void GroupHandle::CountHandedBack(size_t function, HandBackReason reason, uint64_t calls) {
  if (local_ != 0) return;
  // Single writer (this rank): a relaxed load and store, as the segment's other call counts.
  std::atomic<uint64_t>& n = segment_.header()->stats.handed_back[function][static_cast<size_t>(reason)];
  n.store(n.load(std::memory_order_relaxed) + calls, std::memory_order_relaxed);
}

Status GroupHandle::OptOut() {
  if (!broken_.ok()) return broken_;
  if (Status s = AwaitGroupStart(); !s.ok()) return broken_ = s;
  if (Status s = SettleNonblocking(); !s.ok()) return Finish(s);
  return Finish(on_node_ ? on_node_->OptOut(&next_round_) : across_nodes_->OptOut(&next_round_));
}

Status GroupHandle::RefuseArguments(Status why) {
  // The opt-out's own outcome (kOptedOut, or the group's failure, kept in broken_ by Finish for
  // the next call) matters less to this caller than what was wrong with its call.
  OptOut();
  return why;
}

Status GroupHandle::Alltoall(const void* send, void* recv, uint64_t bytes_per_rank) {
  if (!broken_.ok()) return broken_;
  if (bytes_per_rank > 0 && (send == nullptr || recv == nullptr)) {
    return RefuseArguments(Status(Code::kInvalidArgument, "send and recv must not be NULL"));
  }
  if (bytes_per_rank == kOptOutBytes) {
    return RefuseArguments(Status(Code::kInvalidArgument, "bytes_per_rank is too large"));
  }
  if (Status s = AwaitGroupStartToMoveData(); !s.ok()) return broken_ = s;
  if (Status s = SettleNonblocking(); !s.ok()) return Finish(s);
  const auto* src = static_cast<const uint8_t*>(send);
  auto* dst = static_cast<uint8_t*>(recv);
  const auto start = std::chrono::steady_clock::now();
  Status s = on_node_ ? on_node_->Alltoall(src, dst, bytes_per_rank, &next_round_)
                      : across_nodes_->Alltoall(src, dst, bytes_per_rank, &next_round_);
  const auto took = std::chrono::steady_clock::now() - start;
  waiter_.NoteCall(took);
  if (on_node_) on_node_->Count(bytes_per_rank, s, took);
  return Finish(s);
}

Status GroupHandle::Alltoallv(const VectorCall& call) {
  if (!broken_.ok()) return broken_;
  if (call.send_counts == nullptr || call.send_displs == nullptr || call.recv_counts == nullptr ||
      call.recv_displs == nullptr) {
    return RefuseArguments(Status(Code::kInvalidArgument, "the counts and displacements must not be NULL"));
  }
  if (Status s = AwaitGroupStartToMoveData(); !s.ok()) return broken_ = s;
  if (Status s = SettleNonblocking(); !s.ok()) return Finish(s);
  if (stages_.enabled()) {
    // Keyed by the mean count this rank sends: an alltoallv of every count M is in the row an
    // alltoall of M would be, so the two compare line by line.
    uint64_t sent = 0;
    for (uint32_t j = 0; j < shape_.size(); ++j) sent += call.send_counts[j];
    stages_.Start(sent / shape_.size());
  }
  const auto start = std::chrono::steady_clock::now();
  Status s = on_node_ ? on_node_->Alltoallv(call, &next_round_) : across_nodes_->Alltoallv(call, &next_round_);
  stages_.Stop();
  const auto took = std::chrono::steady_clock::now() - start;
  waiter_.NoteCall(took);
  if (on_node_) on_node_->CountVector(s, took);
  return Finish(s);
}

Status GroupHandle::ReadyForNonblocking() {
  if (Status s = AwaitGroupStartToMoveData(); !s.ok()) return broken_ = s;
  return Check();
}

Status GroupHandle::Ialltoall(const void* send, void* recv, uint64_t bytes_per_rank, uint32_t* call) {
  if (!broken_.ok()) return broken_;
  if (bytes_per_rank > 0 && (send == nullptr || recv == nullptr)) {
    return Status(Code::kInvalidArgument, "send and recv must not be NULL");
  }
  // Those two mean an opt-out and an alltoallv in a round entry (shm/segment_layout.h).
  if (bytes_per_rank >= kVectorBytes) return Status(Code::kInvalidArgument, "bytes_per_rank is too large");
  if (Status s = ReadyForNonblocking(); !s.ok()) return Finish(s);
  return Finish(nonblocking_->Start(static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv), bytes_per_rank, call));
}

Status GroupHandle::Ialltoallv(const VectorCall& vector, uint32_t* call) {
  if (!broken_.ok()) return broken_;
  if (vector.send_counts == nullptr || vector.send_displs == nullptr || vector.recv_counts == nullptr ||
      vector.recv_displs == nullptr) {
    return Status(Code::kInvalidArgument, "the counts and displacements must not be NULL");
  }
  if (Status s = ReadyForNonblocking(); !s.ok()) return Finish(s);
  const uint32_t size = shape_.size();
  std::vector<uint64_t> tables(uint64_t{kNonblockingTables} * size);
  for (uint32_t j = 0; j < size; ++j) {
    tables[kSendBytes * size + j] = vector.send_counts[j];
    tables[kSendAt * size + j] = vector.send_displs[j];
    tables[kRecvBytes * size + j] = vector.recv_counts[j];
    tables[kRecvAt * size + j] = vector.recv_displs[j];
  }
  return Finish(nonblocking_->StartVector(vector.send, vector.recv, std::move(tables), call));
}

Status GroupHandle::NonblockingStanding(uint32_t call) {
  if (Status s = Check(); !s.ok()) return s;
  // Only ohiod moves a nonblocking call, on one node too: once its connection closed, nothing
  // will. Every rank sees the same (the call is published done for all at once, or never).
  if (on_node_ != nullptr && !waiter_.DaemonSeenLately() && waiter_.DaemonGone()) {
    return Status(Code::kDaemonLost, "the connection to ohiod closed before it moved the nonblocking alltoall");
  }
  return nonblocking_->Overdue(call);
}

Status GroupHandle::IalltoallTest(uint32_t call, bool* done, std::chrono::microseconds within) {
  *done = false;
  if (!nonblocking_ || !nonblocking_->Outstanding(call)) {
    return Status(Code::kInvalidArgument, "no nonblocking alltoall " + std::to_string(call) + " is outstanding");
  }
  if (!nonblocking_->Done(call) && (within.count() == 0 || !nonblocking_->AwaitBriefly(call, within))) {
    const Status s = NonblockingStanding(call);
    if (s.ok()) return Status::Ok();
    // Nothing will ever complete it if the group or the daemon is gone, or the daemon did not
    // within the group's timeout. Unless it completed just before: the other ranks saw it done,
    // left, and closed the group in between.
    if (!nonblocking_->Done(call)) {
      *done = true;
      nonblocking_->Outcome(call);
      return Finish(s);
    }
  }
  *done = true;
  return Finish(nonblocking_->Outcome(call));
}

Status GroupHandle::IalltoallWait(uint32_t call) {
  // In looks of a slice each, as a program's MPI_Wait makes them: one deadline for all of them
  // (NonblockingAlltoalls::Overdue), the same whichever way the rank waits.
  for (;;) {
    bool done = false;
    const Status s = IalltoallTest(call, &done, kWaitSlice);
    if (done || !s.ok()) return s;
  }
}

std::map<uint32_t, Status> GroupHandle::SettleIalltoalls() {
  std::map<uint32_t, Status> outcomes;
  if (!nonblocking_) return outcomes;
  for (uint32_t call : nonblocking_->OutstandingCalls()) outcomes.emplace(call, IalltoallWait(call));
  return outcomes;
}

Status GroupHandle::Leave() {
  return connection_->Leave(key_, std::chrono::milliseconds(segment_.header()->timeout_ms));
}

}  // namespace ohio
