#include "daemon/control/group_registry.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "daemon/control/control_request.h"
#include "daemon/ops/table_disagreement.h"
#include "shm/plan/buffer_sizing.h"
#include "shm/plan/exchange_plan.h"
#include "shm/tables/internode_choice.h"
#include "shm/plan/staging.h"

namespace ohio {
namespace {

std::string Who(const PeerCredentials& c) {
  return "pid " + std::to_string(c.pid) + ", uid " + std::to_string(c.uid);
}

std::string HintText(uint64_t hint) {
  return hint == 0 ? std::string("the configured sizes") : "calls of up to " + std::to_string(hint) + " bytes per rank";
}

std::string InterNodeAsked(std::optional<InterNodeAlgorithm> l) {
  return l ? std::string(InterNodeAlgorithmName(*l)) + " (OHIO_INTERNODE_ALGORITHM)" : std::string("auto (the daemons' table)");
}

// The rank's address space with its user's rights, or why ohiod may not touch it: that only
// fails the group's nonblocking calls, which are the only ones the daemon moves in the
// ranks' memory (a rank's own copies are its own).
RankMemoryAccess OpenRankMemory(const PeerCredentials& who) {
  auto opened = RankMemory::Open(who.pid, who.pidfd, who.uid, who.gid);
  if (opened.ok()) return RankMemoryAccess{std::move(opened).value(), ""};
  spdlog::warn("{}: nonblocking calls will not be moved: {}", Who(who), opened.status().message());
  return RankMemoryAccess{nullptr, opened.status().message()};
}

// The ranks of the node of `rank_node` that holds the most, among `nodes` nodes; 0 if a rank is
// placed on none of them (GroupShape::Make says which). Memory the size of the nodes only.
uint32_t MostRanksOnOneNode(const std::vector<uint32_t>& rank_node, size_t nodes) {
  std::vector<uint32_t> ranks(nodes, 0);
  uint32_t most = 0;
  for (uint32_t node : rank_node) {
    if (node >= nodes) return 0;
    most = std::max(most, ++ranks[node]);
  }
  return most;
}

}  // namespace

Result<Membership> GroupRegistry::Join(const control::JoinGroup& join, const PeerCredentials& who,
                                       control::Error::Code* refusal) {
  *refusal = control::Error::INVALID_ARGUMENT;
  auto spec = ValidateJoin(join, config_);
  if (!spec.ok()) return spec.status();
  // Before anything is made for the group: its other nodes are called as soon as it is, and a
  // user must not have root's daemon call addresses of the user's choosing.
  if (Status known = peers_.CheckKnown(spec->node_names); !known.ok()) {
    spdlog::warn("refusing a join of {}: {}", Who(who), known.message());
    return known;
  }
  std::lock_guard<std::mutex> lock(mu_);
  DropUnjoined();
  std::shared_ptr<Group> group;
  auto it = groups_.find(spec->key);
  if (it != groups_.end()) {
    group = it->second;
    if (group->owner() != who.uid) {
      *refusal = control::Error::PERMISSION;
      return Status(Code::kRefused, "group " + group->key_hex() + " belongs to another user");
    }
    const GroupSpec& have = group->spec();
    if (have.node_names != spec->node_names || have.rank_node != spec->rank_node) {
      *refusal = control::Error::GROUP_MISMATCH;
      return Status(Code::kRefused, "rank " + std::to_string(join.rank()) +
                                        " describes group " + group->key_hex() +
                                        " differently (size or rank placement) from the ranks that joined before");
    }
    if (have.design != spec->design) {
      *refusal = control::Error::GROUP_MISMATCH;
      return Status(Code::kRefused, std::string("rank ") + std::to_string(join.rank()) + " asks for design " +
                                        NodeLevelDesignName(spec->design) + " but the group uses " +
                                        NodeLevelDesignName(have.design));
    }
    if (have.internode != spec->internode) {
      *refusal = control::Error::GROUP_MISMATCH;
      return Status(Code::kRefused, "rank " + std::to_string(join.rank()) + " asks for inter-node algorithm " +
                                        InterNodeAsked(spec->internode) + " but the ranks that joined before asked for " +
                                        InterNodeAsked(have.internode));
    }
    if (have.bytes_per_rank_hint != spec->bytes_per_rank_hint) {
      *refusal = control::Error::GROUP_MISMATCH;
      return Status(Code::kRefused, "rank " + std::to_string(join.rank()) + " asks for buffers sized for " +
                                        HintText(spec->bytes_per_rank_hint) + " but the group's are sized for " +
                                        HintText(have.bytes_per_rank_hint));
    }
    if (group->failed()) {
      // This rank is told now: it counts as gone, and the group is forgotten once all are.
      Member& late = group->members()[group->shape().local_index(join.rank())];
      if (!late.attached) late.departed = true;
      ForgetIfAllGone(group);
      *refusal = control::Error::GROUP_FAILED;
      return Status(Code::kGroupFailed, "group " + group->key_hex() + " has failed (" + group->failure() +
                                            "); its ranks must leave before the key is reused");
    }
  } else {
    const bool multinode = spec->node_names.size() > 1;
    // Whether the group's smallest round fits the SSB is judged before its shape is built:
    // the shape's memory, the size of the group, was most of the cost of a join refused for
    // it (a million ranks: tens of milliseconds of the control thread every user shares).
    const uint32_t max_ppn = MostRanksOnOneNode(spec->rank_node, spec->node_names.size());
    // A group on one node stages its rounds in two halves (one per round parity).
    const uint64_t min_ssb = multinode ? MinSsbBytes(max_ppn, join.size()) : MinLocalSsbBytes(max_ppn, join.size());
    if (max_ppn != 0 && config_.ssb_bytes < min_ssb) {
      *refusal = control::Error::NO_MEMORY;
      return Status(Code::kNoMemory, "a group of " + std::to_string(join.size()) + " ranks with up to " +
                                         std::to_string(max_ppn) + " per node needs an SSB of at least " +
                                         std::to_string(min_ssb) + " bytes" + (multinode ? "" : " (two halves)") +
                                         "; ohiod is configured with ssb_bytes = " + std::to_string(config_.ssb_bytes));
    }
    auto shape = GroupShape::Make(static_cast<uint32_t>(spec->node_names.size()), spec->rank_node);
    if (!shape.ok()) return shape.status();
    *refusal = control::Error::NO_MEMORY;
    const uint64_t min_srb = MinSrbBytes(shape.value(), spec->design);
    if (multinode && config_.srb_bytes < min_srb) {
      return Status(Code::kNoMemory, std::string("with ") + NodeLevelDesignName(spec->design) + " a group of " +
                                         std::to_string(join.size()) + " ranks needs an SRB of at least " +
                                         std::to_string(min_srb) + " bytes per node; ohiod is configured with srb_bytes = " +
                                         std::to_string(config_.srb_bytes));
    }
    std::optional<uint32_t> tag;
    if (multinode) {
      tag = tags_->Allocate();
      if (!tag) {
        return Status(Code::kNoMemory, "ohiod serves at most " + std::to_string(kMaxGroupTags) +
                                           " groups spanning several nodes at once");
      }
    }
    const uint32_t ppn = shape->ppn(spec->node);
    const uint32_t ranks = join.size();
    auto segment_bytes = [ppn, ranks](BufferSizes b) {
      return ComputeSegmentLayout(ppn, ranks, b.ssb, b.srb).segment_bytes;
    };
    const Group* outgrown = OutgrownExempt(spec.value(), who.uid);
    InterNodePolicy internode = ChooseInterNodePolicy(config_, spec->internode);
    BufferSizes sizes =
        SizeBuffers(shape.value(), spec->design, spec->bytes_per_rank_hint, config_.ssb_bytes, config_.srb_bytes,
                    LargestHypercubeBytes(internode.table, shape.value(), spec->bytes_per_rank_hint));
    if (spec->bytes_per_rank_hint != 0) {
      // A hint asks for speed: give a hinted group smaller buffers rather than refuse it.
      sizes = ShrinkUntil(sizes, BufferSizes{min_ssb, multinode ? min_srb : 0}, [&](BufferSizes b) {
        const uint64_t need = segment_bytes(b);
        return bytes_in_use_ + staging_->staging_total() + need <= config_.memory_limit &&
               OverUserLimits(who.uid, need, outgrown).empty();
      });
    }
    const uint64_t need = segment_bytes(sizes);
    const uint64_t staging = staging_->staging_total();
    if (bytes_in_use_ + staging + need > config_.memory_limit) {
      if (tag) tags_->Release(*tag);
      return Status(Code::kNoMemory, "the group needs " + std::to_string(need) + " bytes of shared memory but " +
                                         std::to_string(bytes_in_use_ + staging) + " of memory_limit = " +
                                         std::to_string(config_.memory_limit) + " are in use by " +
                                         std::to_string(groups_.size()) + " groups" +
                                         (staging != 0 ? " (" + std::to_string(staging) +
                                                             " staging their nonblocking calls)"
                                                       : ""));
    }
    if (const std::string over = OverUserLimits(who.uid, need, outgrown); !over.empty()) {
      if (tag) tags_->Release(*tag);
      spdlog::warn("refusing a group of uid {}: {}", who.uid, over);
      return Status(Code::kNoMemory, over);
    }
    // A group spanning nodes takes a cached segment of its uid and layout if one is free;
    // otherwise the cache gives up what the new one's memory and registration need.
    std::optional<RegisteredSegment> reused;
    if (multinode) reused = cache_->Take(SegmentCacheKey{who.uid, ppn, ranks, sizes.ssb, sizes.srb});
    const bool took_cached = reused.has_value();
    if (!reused) cache_->Trim(multinode ? need : 0, config_.memory_limit - bytes_in_use_ - staging - need);
    auto created = Group::Create(spec.value(), std::move(shape).value(), who.uid, std::move(internode), selection_,
                                 sizes.ssb, sizes.srb, config_.min_slice_bytes,
                                 timeout_ms_.load(std::memory_order_relaxed), tag, tags_, transport_, cache_,
                                 std::move(reused));
    if (!created.ok()) {
      if (tag) tags_->Release(*tag);
      return created.status();
    }
    group = std::move(created).value();
    bytes_in_use_ += group->segment_bytes();
    users_[who.uid].bytes += group->segment_bytes();
    ++users_[who.uid].groups;
    groups_created_.fetch_add(1, std::memory_order_relaxed);
    CountSegments(who.uid);
    groups_[spec->key] = group;
    if (outgrown != nullptr) replaced_.insert(outgrown->spec().key);
    engine_->AddGroup(group);
    if (multinode) on_new_multinode_group_(group);
    if (std::string note; lifecycle_log_.Allow(who.uid, &note)) {
      spdlog::info("group {}: created for {} ranks, {} on this node, {} bytes of shared memory sized for {} (uid {}){}{}",
                   group->key_hex(), join.size(), group->local_ranks(), group->segment_bytes(),
                   HintText(spec->bytes_per_rank_hint), who.uid, took_cached ? ", a cached segment" : "", note);
    }
  }
  const uint32_t local = group->shape().local_index(join.rank());
  Member& m = group->members()[local];
  if (m.attached || m.departed) {
    *refusal = control::Error::INVALID_ARGUMENT;
    return Status(Code::kInvalidArgument, "rank " + std::to_string(join.rank()) + " of group " + group->key_hex() +
                                              " has already joined (pid " + std::to_string(m.pid) + ")");
  }
  m.attached = true;
  m.pid = who.pid;
  group->Attached(local, OpenRankMemory(who));
  if (group->AllJoined() && !group->placement().decided) {
    // Only now are all the ranks' CPUs known. Pages touched before (the header and slots, a
    // rank's copy-in of a first call that cannot complete before all have joined) are moved;
    // pages the verbs transport has pinned while registering the segment stay where they are.
    std::vector<pid_t> pids;
    for (const Member& member : group->members()) {
      if (member.attached) pids.push_back(member.pid);
    }
    group->set_placement(PlaceSegment(group->key_hex(), numa_.nodes, numa_.rails, pids, group->header(),
                                      group->segment_bytes()));
    if (group->placement().plan.node) ++(group->placement().bound ? numa_counts_.bound : numa_counts_.refused);
    // Before the group's first put, which needs every local rank's data: the transport picks
    // the rail of the group's puts to each peer at the first (verbs: the nearest rail).
    if (group->spans_nodes()) transport_->PreferRails(group->srb_key(), group->placement().plan.rail_tiers);
  }
  spdlog::debug("group {}: rank {} joined ({})", group->key_hex(), join.rank(), Who(who));
  return Membership{group, local};
}

const Group* GroupRegistry::OutgrownExempt(const GroupSpec& spec, uid_t uid) const {
  if (!spec.replaces) return nullptr;
  const auto it = groups_.find(*spec.replaces);
  if (it == groups_.end() || it->second->owner() != uid || replaced_.count(it->first) != 0) return nullptr;
  const std::optional<GroupKey>& before = it->second->spec().replaces;
  if (before && groups_.count(*before) != 0) return nullptr;
  return it->second.get();
}

std::string GroupRegistry::OverUserLimits(uid_t uid, uint64_t need, const Group* outgrown) const {
  const auto it = users_.find(uid);
  UserUse use = it == users_.end() ? UserUse{} : it->second;
  if (outgrown != nullptr) use.groups -= 1;
  const uint64_t staging = staging_->staging_of(uid);
  const std::string who = "uid " + std::to_string(uid);
  if (use.groups + 1 > config_.user_max_groups) {
    return who + " already has " + std::to_string(use.groups) + " groups on node " + config_.node_name +
           "; user-max-groups = " + std::to_string(config_.user_max_groups);
  }
  const uint64_t allowed = config_.memory_limit * config_.user_memory_percent / 100;
  if (use.bytes + staging + need > allowed) {
    return "the group needs " + std::to_string(need) + " bytes of shared memory but " + who + " already uses " +
           std::to_string(use.bytes + staging) + " in " + std::to_string(use.groups) + " groups" +
           (staging != 0 ? " (" + std::to_string(staging) + " staging its nonblocking calls)" : "") +
           "; one uid may use " +
           std::to_string(allowed) + " (user-memory-percent = " + std::to_string(config_.user_memory_percent) +
           " of memory_limit = " + std::to_string(config_.memory_limit) + ")";
  }
  return "";
}

void GroupRegistry::Forget(std::map<GroupKey, std::shared_ptr<Group>>::iterator it) {
  const std::shared_ptr<Group>& g = it->second;
  bytes_in_use_ -= g->segment_bytes();
  auto user = users_.find(g->owner());
  if (user != users_.end()) {
    user->second.bytes -= g->segment_bytes();
    if (--user->second.groups == 0) users_.erase(user);
  }
  CountSegments(g->owner());
  replaced_.erase(it->first);
  groups_.erase(it);
}

void GroupRegistry::CountSegments(uid_t uid) {
  const auto it = users_.find(uid);
  staging_->SetSegments(uid, it == users_.end() ? 0 : it->second.bytes);
}

void GroupRegistry::DropUnjoined() {
  const auto now = Group::Clock::now();
  for (auto it = groups_.begin(); it != groups_.end();) {
    const std::shared_ptr<Group> g = it->second;
    if (g->AllJoined() || now - g->created_at() < std::chrono::milliseconds(g->timeout_ms())) {
      ++it;
      continue;
    }
    std::string missing;
    for (uint32_t l = 0; l < g->members().size(); ++l) {
      const Member& m = g->members()[l];
      if (!m.attached && !m.departed) missing += (missing.empty() ? "" : ",") + std::to_string(g->group_rank(l));
    }
    const std::string why = "rank(s) " + missing + " never joined on node " + config_.node_name + " within " +
                            std::to_string(g->timeout_ms()) + " ms; the group is dropped and its memory released";
    spdlog::warn("group {}: {} (uid {})", g->key_hex(), why, g->owner());
    engine_->FailGroup(g, Status(Code::kTimeout, why));
    engine_->RemoveGroup(g);
    ++it;
    Forget(std::prev(it));
  }
}

void GroupRegistry::Depart(const Membership& m, bool clean, const PeerCredentials& who) {
  std::lock_guard<std::mutex> lock(mu_);
  Member& member = m.group->members()[m.local];
  member.attached = false;
  member.departed = true;
  if (!clean && m.group->first_gone_without_leaving().empty()) {
    m.group->first_gone_without_leaving() = m.group->Departure(m.local, false, Who(who));
  }
  engine_->MemberGone(m.group, m.local, clean, Who(who));
  ForgetIfAllGone(m.group);
}

void GroupRegistry::ForgetIfAllGone(const std::shared_ptr<Group>& group) {
  const auto& members = group->members();
  const bool anyone_left = std::any_of(members.begin(), members.end(), [](const Member& x) { return x.attached; });
  if (anyone_left) return;
  // Failed, or failing: a rank that went without leaving fails the group in the engine, which
  // may not have run since (the last ranks' connections closing in one pass of this thread).
  const std::string failure = group->failed() ? group->failure() : group->first_gone_without_leaving();
  // A group that failed (at setup, say) before all its local ranks joined stays until they
  // have: each is then told why at its join, where it would otherwise make a fresh group of
  // the key that waits for the other nodes until the timeout. DropUnjoined forgets it at the
  // latest.
  if (!failure.empty() && !group->AllJoined()) return;
  auto it = groups_.find(group->spec().key);
  if (it != groups_.end() && it->second == group) {
    if (!failure.empty() && group->spans_nodes()) {
      failed_.Remember(group->spec().key, group->owner(),
                       "group " + group->key_hex() + " has failed on node " + config_.node_name + ": " + failure,
                       Group::Clock::now() + std::chrono::milliseconds(group->timeout_ms()));
    }
    Forget(it);
    engine_->RemoveGroup(group);
    if (std::string note; lifecycle_log_.Allow(group->owner(), &note)) {
      spdlog::info("group {}: closed, all local ranks gone{}", group->key_hex(), note);
    }
  }
}

Result<PeerGroupInfo> GroupRegistry::DescribeForPeer(const peer::OpenGroupRequest& req) {
  if (req.key().size() != 16) return Status(Code::kRefused, "a group key is 16 bytes");
  GroupKey key;
  std::copy(req.key().begin(), req.key().end(), key.begin());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    // Failed here and forgotten once its ranks here had left: the asking node's rank came late.
    if (auto why = failed_.Told(key, req.owner_uid(), Group::Clock::now())) return Status(Code::kGroupFailed, *why);
    return Status(Code::kNoDaemon, "no rank of group " + KeyHex(key) + " has joined on node " + config_.node_name + " yet");
  }
  const Group& g = *it->second;
  const GroupSpec& spec = g.spec();
  const bool same = std::equal(spec.node_names.begin(), spec.node_names.end(), req.node_names().begin(),
                               req.node_names().end()) &&
                    std::equal(spec.rank_node.begin(), spec.rank_node.end(), req.rank_node().begin(),
                               req.rank_node().end());
  if (!same) {
    return Status(Code::kRefused, "node " + config_.node_name + "'s ranks describe group " + g.key_hex() +
                                      " differently (nodes or rank placement) from node " + req.from_node() + "'s");
  }
  if (req.algorithm() != NodeLevelDesignName(spec.design)) {
    return Status(Code::kRefused, "node " + config_.node_name + " runs group " + g.key_hex() + " with " +
                                      NodeLevelDesignName(spec.design) + ", node " + req.from_node() + " with " +
                                      req.algorithm());
  }
  // Both tables every node of the group must share: a difference fails the group here too, at
  // once, so this node's ranks learn it now, and whichever node asks the other first, both tell
  // their ranks the same.
  const struct {
    const ComparedTable& what;
    const std::string& source;
    const std::string& digest;
    const std::string& their_source;
    const std::string& their_digest;
  } compared[] = {
      {kInterNodeTableCompared, g.internode_policy().source, g.internode_policy().digest, req.internode_source(),
       req.internode_digest()},
      {kSelectionTableCompared, g.selection_policy().source, g.selection_policy().digest, req.selection_source(),
       req.selection_digest()},
  };
  for (const auto& c : compared) {
    if (c.their_digest == c.digest) continue;
    const auto from = std::find(spec.node_names.begin(), spec.node_names.end(), req.from_node());
    if (from == spec.node_names.end()) {
      return Status(Code::kRefused, "node " + req.from_node() + " is not among the nodes of group " + g.key_hex());
    }
    const std::string why =
        TableDisagreement(c.what, g.key_hex(), spec.node_names, NodeTable{spec.node, c.source, c.digest},
                          NodeTable{static_cast<uint32_t>(from - spec.node_names.begin()), c.their_source, c.their_digest});
    engine_->FailGroup(it->second, Status(Code::kGroupFailed, why));
    return Status(Code::kGroupFailed, why);
  }
  if (req.owner_uid() != g.owner()) {
    return Status(Code::kRefused, "group " + g.key_hex() + " belongs to uid " + std::to_string(g.owner()) +
                                      " on node " + config_.node_name + " but to uid " +
                                      std::to_string(req.owner_uid()) + " on node " + req.from_node());
  }
  if (!g.spans_nodes()) {
    return Status(Code::kRefused, "group " + g.key_hex() + " has failed on node " + config_.node_name);
  }
  // A node that meets the group late (a rank here died first) is told why, and the group
  // fails there with that cause instead of a refusal.
  if (g.failed()) {
    return Status(Code::kGroupFailed,
                  "group " + g.key_hex() + " has failed on node " + config_.node_name + ": " + g.failure());
  }
  return PeerGroupInfo{g.tag(),       g.srb_key(),         g.srb_offset(), g.ssb_bytes(),
                       g.srb_bytes(), g.min_slice_bytes(), g.opened_here()};
}

void GroupRegistry::FailedOnPeer(const peer::GroupFailedRequest& req) {
  if (req.key().size() != 16) return;
  GroupKey key;
  std::copy(req.key().begin(), req.key().end(), key.begin());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(key);
  if (it == groups_.end() || !it->second->spans_nodes()) return;
  const std::vector<std::string>& nodes = it->second->spec().node_names;
  if (req.from_node() == config_.node_name || std::find(nodes.begin(), nodes.end(), req.from_node()) == nodes.end()) {
    return;
  }
  // A code this daemon does not know (or none) is told as the group's failure.
  const bool known = req.code() > static_cast<uint32_t>(Code::kOk) && req.code() <= static_cast<uint32_t>(Code::kOptedOut);
  engine_->FailedOnPeer(it->second, req.from_node(),
                        Status(known ? static_cast<Code>(req.code()) : Code::kGroupFailed, req.reason()));
}

std::vector<GroupInfo> GroupRegistry::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  DropUnjoined();
  std::vector<GroupInfo> out;
  for (const auto& [key, g] : groups_) {
    GroupInfo i;
    i.key_hex = g->key_hex();
    i.size = g->shape().size();
    i.local_ranks = g->local_ranks();
    for (const Member& m : g->members()) i.attached += m.attached ? 1 : 0;
    i.owner = g->owner();
    i.rounds = g->rounds_completed();
    i.segment_bytes = g->segment_bytes();
    i.failed = g->failed();
    i.algorithm = NodeLevelDesignName(g->spec().design);
    i.internode = g->internode_policy().source;
    i.internode_digest = g->internode_policy().digest;
    i.selection = g->selection_policy().source;
    i.selection_digest = g->selection_policy().digest;
    i.node_names = g->spec().node_names;
    for (uint32_t n = 0; n < g->shape().nodes(); ++n) i.ranks_per_node.push_back(g->shape().ppn(n));
    i.ssb_bytes = g->ssb_bytes();
    i.srb_bytes = g->spans_nodes() ? g->srb_bytes() : 0;
    i.bytes_per_rank_hint = g->spec().bytes_per_rank_hint;
    i.timeout_ms = g->timeout_ms();
    i.placement = g->placement();
    out.push_back(i);
  }
  return out;
}

void GroupRegistry::OpenSelectionNotice() {
  auto notice = SelectionNotice::Create(selection_generation_);
  if (!notice.ok()) {
    spdlog::warn("no selection notice for clients ({}): every communicator joins a group at its first call",
                 notice.status().message());
    return;
  }
  notice_ = std::move(notice).value();
}

void GroupRegistry::set_selection_policy(SelectionPolicy policy) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool changed = policy.digest != selection_.digest;
  selection_ = std::move(policy);
  if (!changed) return;
  ++selection_generation_;
  if (notice_.fd() >= 0) notice_.Publish(selection_generation_);
}

GroupRegistry::SelectionOffer GroupRegistry::selection_offer() {
  std::lock_guard<std::mutex> lock(mu_);
  return SelectionOffer{selection_.text, selection_.digest, selection_generation_};
}

SelectionPolicy GroupRegistry::selection_policy() {
  std::lock_guard<std::mutex> lock(mu_);
  return selection_;
}

GroupRegistry::NumaCounts GroupRegistry::numa_counts() {
  std::lock_guard<std::mutex> lock(mu_);
  return numa_counts_;
}

uint64_t GroupRegistry::bytes_in_use() {
  std::lock_guard<std::mutex> lock(mu_);
  DropUnjoined();
  return bytes_in_use_;
}

}  // namespace ohio
