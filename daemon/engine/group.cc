#include "daemon/engine/group.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "shm/round_verdict.h"

namespace ohio {

std::string KeyHex(const GroupKey& key) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : key) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

Result<std::unique_ptr<Group>> Group::Create(GroupSpec spec, GroupShape shape, uid_t owner, InterNodePolicy internode,
                                             SelectionPolicy selection, uint64_t ssb_bytes, uint64_t srb_bytes, uint64_t min_slice_bytes,
                                             uint32_t timeout_ms,
                                             std::optional<uint32_t> tag, std::shared_ptr<TagPool> tags,
                                             Transport* transport, std::shared_ptr<SegmentCache> cache,
                                             std::optional<RegisteredSegment> reused) {
  std::unique_ptr<Group> g(new Group());
  g->spec_ = std::move(spec);
  g->shape_ = std::move(shape);
  g->key_hex_ = KeyHex(g->spec_.key);
  g->owner_ = owner;
  g->internode_ = std::move(internode);
  g->selection_ = std::move(selection);
  g->timeout_ = std::chrono::milliseconds(timeout_ms);
  g->created_at_ = Clock::now();
  const uint32_t locals = g->shape_.ppn(g->spec_.node);
  g->members_.resize(locals);
  const SegmentLayout layout = ComputeSegmentLayout(locals, g->shape_.size(), ssb_bytes, srb_bytes);
  g->cache_key_ = SegmentCacheKey{owner, locals, g->shape_.size(), ssb_bytes, srb_bytes};
  if (reused) {
    // Handed back by the destructor whatever happens next.
    g->cache_ = std::move(cache);
    g->srb_key_ = reused->region_key;
    g->segment_ = std::move(reused->segment);
    if (Status s = g->segment_.ResetControlState(layout); !s.ok()) return s;
  } else {
    auto segment = Segment::Create("ohio-group-" + g->key_hex_.substr(0, 8), layout);
    if (!segment.ok()) return segment.status();
    g->segment_ = std::move(segment).value();
  }
  g->doorbell_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (g->doorbell_fd_ < 0) return SystemError("eventfd for the group doorbell", errno);
  SegmentHeader* h = g->segment_.header();
  h->group_size = g->shape_.size();
  h->local_ranks = locals;
  h->timeout_ms = timeout_ms;
  h->design = static_cast<uint32_t>(g->spec_.design);
  h->plan_ssb_bytes = ssb_bytes;
  h->plan_srb_bytes = srb_bytes;
  h->plan_min_slice_bytes = min_slice_bytes;
  g->min_slice_bytes_ = min_slice_bytes;
  if (g->shape_.nodes() == 1) {
    g->rounds_ = std::make_unique<RoundDriver>(*g, &g->segment_, ssb_bytes, srb_bytes, min_slice_bytes, nullptr);
    // Alive now: the ranks' first calls need not ask the kernel before the first watch tick.
    h->daemon_seen_ns.store(MonotonicNs(), std::memory_order_relaxed);
    h->started.store(1, std::memory_order_release);
    return g;
  }
  g->tag_ = *tag;
  g->tags_ = std::move(tags);
  if (!reused) {
    // The whole segment, once: peers write into its SRB, and the transport reads puts from its
    // SSB (v1: the ranks' send buffers inside it) without copying them first.
    auto key = transport->RegisterRegion(g->segment_.header(), g->segment_.bytes());
    if (!key.ok()) return key.status();
    g->srb_key_ = key.value();
    g->cache_ = std::move(cache);
    g->cache_->Registered(g->segment_.bytes());
  }
  g->rounds_ = std::make_unique<RoundDriver>(*g, &g->segment_, ssb_bytes, srb_bytes, min_slice_bytes, transport);
  return g;
}

Group::~Group() {
  rounds_.reset();  // it points into the segment
  if (srb_key_ != 0) cache_->Return(cache_key_, RegisteredSegment{std::move(segment_), srb_key_});
  if (tags_) tags_->Release(tag_);
  if (doorbell_fd_ >= 0) close(doorbell_fd_);
}

uint64_t Group::rounds_completed() const {
  if (spans_nodes()) return segment_.header()->finished_round.load(std::memory_order_acquire);
  // Ranks on one node count their own rounds: done by all of them.
  uint32_t done = segment_.slot(0)->done_round.load(std::memory_order_acquire);
  for (uint32_t l = 1; l < local_ranks(); ++l) {
    const uint32_t d = segment_.slot(l)->done_round.load(std::memory_order_acquire);
    if (!RoundReached(d, done)) done = d;
  }
  return done;
}

bool Group::failed() const {
  return segment_.header()->state.load(std::memory_order_acquire) == static_cast<uint32_t>(GroupState::kFailed);
}

std::string Group::failure() const {
  const char* m = segment_.header()->group_error;
  std::string why(m, strnlen(m, kErrorMessageBytes));
  const std::string closed = "; the group is closed";
  if (why.size() >= closed.size() && why.compare(why.size() - closed.size(), closed.size(), closed) == 0) {
    why.resize(why.size() - closed.size());
  }
  return why;
}

Code Group::failure_code() const {
  return static_cast<Code>(segment_.header()->group_error_code.load(std::memory_order_relaxed));
}

}  // namespace ohio
