#include "daemon/engine/nonblocking_alltoall.h"

#include <sys/uio.h>

#include <algorithm>
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

bool NonblockingAlltoall::AnyStarted() const {
  const uint32_t done = segment_->header()->nonblocking_done.load(std::memory_order_acquire);
  for (uint32_t l = 0; l < ranks_; ++l) {
    if (segment_->slot(l)->nonblocking_started.load(std::memory_order_acquire) != done) return true;
  }
  return false;
}

NonblockingAlltoall::~NonblockingAlltoall() { FreeStaging(); }

bool NonblockingAlltoall::Advance(DaemonCounters* counters, StagingLedger* ledger, uid_t owner,
                                  uint64_t slice_bytes) {
  if (call_ == 0) {
    const uint32_t call = next_call();
    if (!AllStarted(call)) return false;
    call_ = call;
    if (Status s = Begin(call); !s.ok()) {
      Finish(s, counters);
      return true;
    }
    // As much of the call as one slice takes, if the uid's share has room for it.
    uint64_t total = 0;
    for (uint32_t src = 0; src < ranks_ && total < kSliceBytes; ++src) {
      for (uint32_t dst = 0; dst < ranks_ && total < kSliceBytes; ++dst) total += PieceBytes(src, dst);
    }
    const uint64_t want = std::min(total, kSliceBytes);
    ledger_ = ledger;
    staging_uid_ = owner;
    const uint64_t granted = ledger->Take(owner, want, kStagingFloorBytes);
    staging_.resize(granted);
    batches_.emplace(ranks_, [this](uint32_t src, uint32_t dst) { return PieceBytes(src, dst); }, granted);
  }
  bool done = false;
  Status s = MoveSlice(slice_bytes, &done);
  if (!s.ok()) {
    Finish(s, counters);
  } else if (done) {
    Finish(Status::Ok(), counters);
  }
  return true;
}

Status NonblockingAlltoall::Begin(uint32_t call) {
  const uint32_t entry = call % kNonblockingDepth;
  moved_ = 0;
  if (Status s = SameKind(call); !s.ok()) return s;
  vector_ = segment_->slot(0)->nonblocking[entry].tables_address.load(std::memory_order_relaxed) != 0;
  if (vector_) {
    if (Status s = ReadTables(call); !s.ok()) return s;
    return PairsAgree();
  }
  auto bytes_of = [this, entry](uint32_t l) {
    return segment_->slot(l)->nonblocking[entry].bytes_per_rank.load(std::memory_order_relaxed);
  };
  m_ = bytes_of(0);
  if (Status s = NodeVerdict(ranks_, bytes_of, [this](uint32_t l) { return shape_->rank_at(0, l); }); !s.ok()) {
    return s;
  }
  // A row's and a piece's place in a buffer must be an address: the rank's own pointer
  // arithmetic could not reach past 2^64 either.
  if (m_ != 0 && uint64_t{ranks_} > ~uint64_t{0} / m_) {
    return Status(Code::kInvalidArgument, "a nonblocking alltoall of " + std::to_string(m_) + " bytes per rank to " +
                                              std::to_string(ranks_) + " ranks is larger than an address space");
  }
  return Status::Ok();
}

uint64_t NonblockingAlltoall::PieceBytes(uint32_t src, uint32_t dst) const {
  return vector_ ? Table(shape_->local_index(src), kSendBytes, dst) : m_;
}

uint64_t NonblockingAlltoall::SendAt(uint32_t src, uint32_t dst) const {
  const uint32_t l = shape_->local_index(src);
  const uint64_t base = segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].send_address.load(std::memory_order_relaxed);
  // Wrapping like the rank's own pointer arithmetic would: an offset "before" the buffer.
  return base + (vector_ ? Table(l, kSendAt, dst) : uint64_t{dst} * m_);
}

uint64_t NonblockingAlltoall::RecvAt(uint32_t src, uint32_t dst) const {
  const uint32_t l = shape_->local_index(dst);
  const uint64_t base = segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].recv_address.load(std::memory_order_relaxed);
  return base + (vector_ ? Table(l, kRecvAt, src) : uint64_t{src} * m_);
}

Status NonblockingAlltoall::MoveSlice(uint64_t slice_bytes, bool* done) {
  if (!batches_->Next(&chunks_, slice_bytes)) {
    *done = true;
    return Status::Ok();
  }
  reads_.resize(ranks_);
  writes_.resize(ranks_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    reads_[l].clear();
    writes_[l].clear();
  }
  uint8_t* at = staging_.data();
  auto add = [&](uint32_t src, uint32_t dst, uint64_t offset, uint64_t length) {
    if (length == 0) return;
    reads_[shape_->local_index(src)].push_back({SendAt(src, dst) + offset, at, length});
    writes_[shape_->local_index(dst)].push_back({RecvAt(src, dst) + offset, at, length});
    at += length;
  };
  for (const PairChunk& c : chunks_) {
    add(c.a, c.b, c.offset, batches_->Forward(c));
    add(c.b, c.a, c.offset, batches_->Backward(c));
  }
  // Every piece of the slice is read before any is written: a rank may pass the same buffer
  // for both (pair_batches.h).
  if (Status s = RunPieces(false); !s.ok()) return s;
  if (Status s = RunPieces(true); !s.ok()) return s;
  moved_ += static_cast<uint64_t>(at - staging_.data());
  // Known now, not at another pass: a call of one slice ends in the pass that moved it.
  *done = batches_->Finished();
  return Status::Ok();
}

Status NonblockingAlltoall::RunPieces(bool writing) {
  for (uint32_t l = 0; l < ranks_; ++l) {
    std::vector<Piece>& pieces = writing ? writes_[l] : reads_[l];
    if (pieces.empty()) continue;
    // In the order of the rank's memory, so that pieces side by side there go in one system call.
    std::sort(pieces.begin(), pieces.end(), [](const Piece& x, const Piece& y) { return x.remote < y.remote; });
    local_.clear();
    remote_.clear();
    uint64_t bytes = 0;
    for (const Piece& p : pieces) {
      local_.push_back({p.local, p.length});
      remote_.push_back({reinterpret_cast<void*>(p.remote), p.length});
      bytes += p.length;
    }
    auto memory = Memory(l);
    if (!memory.ok()) return memory.status();
    const ssize_t n = memory.value()->Transfer(local_, remote_, writing);
    if (n != static_cast<ssize_t>(bytes)) {
      return Refused(l, *memory.value(), writing, writing ? "receive buffer" : "send buffer",
                     bytes, pieces.front().remote);
    }
  }
  return Status::Ok();
}

void NonblockingAlltoall::Finish(const Status& outcome, DaemonCounters* counters) {
  if (outcome.ok()) {
    counters->collectives_served.fetch_add(1, std::memory_order_relaxed);
    counters->rounds.fetch_add(1, std::memory_order_relaxed);
    counters->bytes_local.fetch_add(moved_, std::memory_order_relaxed);
  } else {
    counters->collectives_failed.fetch_add(1, std::memory_order_relaxed);
    counters->CountError(outcome.code());
  }
  Publish(call_, outcome);
  call_ = 0;
  batches_.reset();
  FreeStaging();
}

void NonblockingAlltoall::FreeStaging() {
  if (ledger_ == nullptr) return;
  ledger_->Give(staging_uid_, staging_.size());
  ledger_ = nullptr;
  // Given back to the system, not kept at the group's largest call.
  std::vector<uint8_t>().swap(staging_);
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
  return DescribeRanks(missing) + " did not start nonblocking alltoall " + std::to_string(call) + " within " +
         std::to_string(timeout.count()) + " ms of the others";
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
  return Status(Code::kInvalidArgument, "ranks started different collectives as nonblocking call " +
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
