#include "daemon/exchange/exchange.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "shm/round_stamps.h"
#include "shm/vector_disagreement.h"
#include "shm/vector_plan.h"
#include "shm/vector_staging.h"

namespace ohio {
namespace {

bool After(uint32_t a, uint32_t b) { return !RoundReached(b, a); }
bool AtLeast(uint32_t a, uint32_t b) { return RoundReached(a, b); }

}  // namespace

Exchange::Exchange(const GroupShape& shape, uint32_t node, Algorithm algo, std::vector<std::string> node_names,
                   std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
                   const Segment* segment, uint32_t tag, LeaderTable leaders)
    : shape_(shape),
      node_(node),
      algo_(algo),
      node_names_(std::move(node_names)),
      key_(key),
      transport_(transport),
      segment_(segment),
      tag_(tag),
      leaders_(std::move(leaders)),
      peers_(shape.nodes()),
      plan_ssb_(ssb_bytes),
      plan_srb_(srb_bytes),
      heard_(shape.nodes()),
      last_heard_(shape.nodes(), 0),
      last_ready_(shape.nodes(), 0) {
  for (const std::string& name : node_names_) peer_ids_.push_back(transport->PeerFor(name));
}

void Exchange::SetPeer(uint32_t node, const PeerGroupInfo& info) {
  if (node == node_ || node >= peers_.size()) return;
  if (!peers_[node]) ++known_peers_;
  peers_[node] = info;
  if (rank_gone_) SendTo(node, *rank_gone_);
  plan_ssb_ = std::min(plan_ssb_, info.ssb_bytes);
  plan_srb_ = std::min(plan_srb_, info.srb_bytes);
  if (!bootstrapped()) return;
  // Where eager puts land depends on every node's buffers: only now can those that came
  // before be read.
  layout_ = PlanEagerLayout(shape_, plan_ssb_, plan_srb_);
  vector_plan_ = VectorRoundPlan{};  // planned for the layout before, if any
  hypercube_plan_ = HypercubePlanCache{};
  cube_block_cap_ = VectorCubeBlockCap(shape_, layout_, leaders_);
  for (const auto& [from, delivery] : early_) OnArrived(from, delivery);
  early_.clear();
}

std::optional<uint32_t> Exchange::NodeIndex(PeerId peer) const {
  auto it = std::find(peer_ids_.begin(), peer_ids_.end(), peer);
  if (it == peer_ids_.end()) return std::nullopt;
  return static_cast<uint32_t>(it - peer_ids_.begin());
}

void Exchange::SendTo(uint32_t node, ExchangeMessage m) {
  m.tag = peers_[node]->tag;
  m.key = key_;
  const ExchangeMessage::Encoded bytes = m.Encode();
  transport_->Send(peer_ids_[node], bytes.data(), bytes.size());
}

Exchange::Heard& Exchange::HeardOf(uint32_t node, uint32_t round) {
  Heard& h = heard_[node][round & 1];
  if (h.round != round) h = Heard{round};
  return h;
}

bool Exchange::Accept(uint32_t node, uint32_t round) {
  if (After(round, last_heard_[node])) last_heard_[node] = round;
  // This round and the next; anything older belongs to a round that is over here.
  return AtLeast(round, round_) && !After(round, round_ + 1);
}

void Exchange::SendReady(bool disagree, bool skipped, uint32_t reason) {
  ready_sent_ = true;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n == node_) continue;
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kRoundReady;
    m.sizes_disagree = disagree;
    m.skipped = skipped;
    m.round = round_;
    m.bytes_per_rank = bytes_per_rank_;
    m.delivery = reason;
    SendTo(n, m);
  }
}

void Exchange::BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_skip,
                          uint64_t round_in_call) {
  round_ = round;
  active_ = true;
  bytes_per_rank_ = bytes_per_rank;
  local_disagree_ = local_disagree;
  local_skip_ = local_skip;
  agreed_ = false;
  announced_ok_ = false;
  ready_sent_ = false;
  hypercube_halted_ = false;
  error_.reset();
  posted_ = delivered_ = credited_ = 0;
  const bool local_ok = !local_disagree && !local_skip;
  vector_ = bytes_per_rank == kVectorBytes;
  vector_part_ = vector_ ? static_cast<uint32_t>(round_in_call) : 0;
  if (vector_part_ == 0) vector_rounds_in_call_ = 1;
  too_large_ = false;
  count_digest_ = 0;
  naming_pair_ = tables_posted_ = false;
  vector_cube_fits_ = false;
  if (vector_ && local_ok) PlanVectorRound();
  eager_ = local_ok && (vector_ ? !too_large_ : FitsEager(shape_, layout_, bytes_per_rank));
  leader_ = !local_ok  ? Leader::kPairwise
            : vector_ ? VectorLeader()
                      : RoundLeader(shape_, algo_, layout_, leaders_, bytes_per_rank, eager_);
  if (vector_cube()) {
    PlanVectorCubeRound();
  } else if (eager_ && vector_) {
    // PlanVectorRound aimed puts_ and deliveries_.
  } else if (hypercube()) {
    PlanHypercubeRound();
  } else if (eager_) {
    if (eager_plan_.bytes_per_rank != bytes_per_rank) {
      eager_plan_.bytes_per_rank = bytes_per_rank;
      eager_plan_.puts = PlanEagerPuts(shape_, algo_, node_, layout_, bytes_per_rank);
      eager_plan_.deliveries = PlanEagerDeliveries(shape_, node_, layout_, bytes_per_rank);
    }
    puts_ = &eager_plan_.puts;
    deliveries_ = &eager_plan_.deliveries;
  }
  if (eager_) {
    // Before any of the round's blocks is published: where they land depends on it.
    segment_->header()->eager_leader[round & 1].store(EagerLeaderWord(round, leader()), std::memory_order_relaxed);
    auto* h = reinterpret_cast<EagerHeader*>(segment_->header()->eager_out[round & 1]);
    const bool first = vector_ && vector_part_ == 0;
    *h = EagerHeader{kEagerHeaderMagic,
                     round,
                     bytes_per_rank,
                     (first && !vector_plan_.fits ? kEagerVectorStaged : 0u) |
                         (first && vector_cube_fits_ ? kEagerVectorCubeFits : 0u),
                     node_,
                     MonotonicNs(),
                     count_digest_,
                     first ? vector_plan_.stream_rounds : 0u,
                     {}};
    // The SRB held a whole announced round: peers say when their ranks are through with it.
    if (after_announced_) SendReady(false, false);
  } else {
    announced_puts_.clear();
    announced_deliveries_.clear();
    if (local_ok && !vector_) {
      auto staging = PlanGroupStaging(shape_, algo_, plan_ssb_, plan_srb_, bytes_per_rank,
                                      segment_->header()->plan_min_slice_bytes);
      if (!staging.ok()) {
        error_ = staging.status().message();
      } else {
        // Which slice, rows and nodes this round of the call carries: the ranks plan the same.
        const RoundCover cover = staging->cover(round_in_call);
        announced_puts_ = PlanPuts(shape_, algo_, node_, cover, plan_srb_);
        announced_deliveries_ = PlanDeliveries(shape_, algo_, node_, cover, plan_srb_);
      }
    }
    puts_ = &announced_puts_;
    deliveries_ = &announced_deliveries_;
    credited_ = algo_ == Algorithm::kV3 ? std::min<uint32_t>(2, deliveries_->size()) : deliveries_->size();
    SendReady(local_disagree, local_skip, too_large_ ? ExchangeMessage::kReadyTooLarge : 0);
  }
  put_posted_.assign(puts_->size(), false);
  arrived_.assign(deliveries_->size(), false);
  if (hypercube()) {
    inbox_landed_.assign(puts_->size(), false);
    inboxes_landed_ = inbox_prefix_ = 0;
    const uint32_t early = std::exchange(early_inboxes_[round & 1], 0);
    for (uint32_t k = 0; k < puts_->size(); ++k) {
      if (early >> k & 1) ReadInbox(k);
    }
  }
  ReactToMixedSigns();
  CheckAgreement();
}

Leader Exchange::VectorLeader() const {
  // Only a call's first round, which checks the counts: the stream rounds that may follow a
  // pairwise one are pairwise too.
  return eager_ && vector_part_ == 0 && vector_cube_next_ && cube_block_cap_ != 0 ? Leader::kHypercube
                                                                                  : Leader::kPairwise;
}

void Exchange::PlanVectorCubeRound() {
  const uint32_t n = shape_.nodes();
  const uint64_t stride = BruckInboxStride(n, layout_.srb_half);
  cube_inboxes_.Reset(n, stride);
  cube_puts_.clear();
  cube_deliveries_.clear();
  for (uint32_t k = 0; k < BruckRounds(n); ++k) {
    Put p;
    p.dest = BruckAhead(n, node_, 1u << k);
    p.step = k;
    p.srb_offset = k * stride;
    cube_puts_.push_back(p);
    // Inbox k ends the journey of the blocks from the nodes whose distance's highest bit is k.
    for (uint32_t slot = 0; slot < VectorCubeFinalSlots(n, k); ++slot) {
      Delivery d;
      d.source = BruckBehind(n, node_, VectorCubeIndexAt(slot, k));
      d.step = k;
      cube_deliveries_.push_back(d);
    }
  }
  puts_ = &cube_puts_;
  deliveries_ = &cube_deliveries_;
}

void Exchange::GatherVectorCube(uint32_t k, const uint8_t* ssb, const uint8_t* srb) {
  const uint32_t n = shape_.nodes();
  const uint32_t parity = round_ & 1;
  uint8_t* line = segment_->cube_out(round_) + k * VectorCubeLineBytes(n);
  // A node's own part that does not fit, or any inbox's flag: headers only from now on.
  const bool is_void = cube_inboxes_.VoidBefore(k, !vector_cube_fits_);
  const auto* out = reinterpret_cast<const EagerHeader*>(segment_->header()->eager_out[parity]);
  EagerHeader h{kEagerHeaderMagic, round_, kVectorBytes, is_void ? kEagerVectorCubeVoid : 0u, node_,
                out->begun_ns, cube_inboxes_.Partial(k, count_digest_), 0, {}};
  h.count_digest_tail = cube_inboxes_.Tail(k, count_digest_);
  std::memcpy(line, &h, sizeof(h));
  pieces_.clear();
  if (is_void) {
    pieces_.push_back({line, kEagerHeaderBytes});
    return;
  }
  pieces_.push_back({line, VectorCubeLineBytes(n)});
  auto* table = reinterpret_cast<uint32_t*>(line + kEagerHeaderBytes);
  // Pieces that follow each other in memory go as one (forwarded blocks of one inbox do).
  auto append = [this](const uint8_t* at, uint64_t bytes) {
    if (bytes == 0) return;
    LocalPiece& last = pieces_.back();
    if (static_cast<const uint8_t*>(last.base) + last.bytes == at) {
      last.bytes += bytes;
    } else {
      pieces_.push_back({at, bytes});
    }
  };
  // This node's own blocks are its pairwise puts' (at most the cap each: vector_cube_fits_).
  auto own_put = [this](uint32_t dest) -> const Put& { return vector_plan_.puts[vector_plan_.put_of_dest[dest]]; };
  PlanVectorCubeMessage(
      cube_inboxes_, n, node_, k, table, [&](uint32_t dest) { return own_put(dest).bytes; },
      [&](uint32_t dest) {
        for (const SsbPiece& piece : own_put(dest).pieces) append(ssb + piece.ssb_offset, piece.bytes);
      },
      [&](uint64_t offset, uint64_t bytes) { append(srb + offset, bytes); });
}

void Exchange::VectorCubeVerdict() {
  const uint32_t steps = static_cast<uint32_t>(cube_puts_.size());
  // Every node's share and flag, summed along the messages: the same on every node.
  const bool again = cube_inboxes_.VoidBefore(steps, !vector_cube_fits_) || cube_inboxes_.Total(count_digest_) != 0;
  // A call that did not fit, or whose counts disagree, goes again pairwise, which stages what
  // does not fit or names the pair; the next call tries the hypercube once every node's part
  // fits again (VectorVerdict).
  if (again) vector_cube_next_ = false;
  vector_rounds_in_call_ = again ? 2 : 1;
  segment_->header()->vector_streamed[round_ & 1].store(uint64_t{round_} << 32 | (again ? kVectorCallGoesAgain : 0),
                                                        std::memory_order_relaxed);
}

void Exchange::PlanHypercubeRound() {
  if (hypercube_plan_.bytes_per_rank != bytes_per_rank_) {
    HypercubePlanCache& c = hypercube_plan_;
    c = HypercubePlanCache{};
    c.bytes_per_rank = bytes_per_rank_;
    const uint64_t stride = BruckInboxStride(shape_.nodes(), layout_.srb_half);
    for (uint32_t k = 0; k < BruckRounds(shape_.nodes()); ++k) {
      const BruckMessage message = PlanBruckMessage(shape_, bytes_per_rank_, node_, k);
      Put p;
      p.dest = message.to;
      p.step = k;
      p.bytes = message.bytes;
      p.srb_offset = k * stride;
      c.puts.push_back(p);
      c.gathers.push_back(PlanBruckGather(shape_, bytes_per_rank_, node_, k, layout_.srb_half));
    }
    c.deliveries = PlanBruckDeliveries(shape_, bytes_per_rank_, node_, layout_.srb_half);
  }
  puts_ = &hypercube_plan_.puts;
  deliveries_ = &hypercube_plan_.deliveries;
}

void Exchange::PlanVectorRound() {
  if (vector_part_ == 0) {
    UpdateVectorRoundPlan(shape_, node_, layout_, segment_->count_table(0, round_), &vector_plan_);
    too_large_ = !vector_plan_.stageable;
    count_digest_ = vector_plan_.digest;
    puts_ = &vector_plan_.puts;
    deliveries_ = &vector_plan_.deliveries;
    // Its puts are then one block per other node, from the regions of its ranks' rows.
    vector_cube_fits_ = cube_block_cap_ != 0 && vector_plan_.fits;
    for (const Put& p : vector_plan_.puts) vector_cube_fits_ = vector_cube_fits_ && p.bytes <= cube_block_cap_;
    return;
  }
  // The counts the first round checked: the ranks write the same ones every round of a call.
  // Only the nodes whose part did not fit the first round stream it (round 0 went in the first
  // round); the others' puts carry the header alone.
  const NodeCounts counts{vector_plan_.counts.data(), shape_.size()};
  PlanVectorStreamPuts(shape_, node_, layout_, counts, vector_part_, &stream_puts_);
  if (!staged_nodes_[node_]) {
    for (Put& p : stream_puts_) {
      p.pieces.clear();
      p.bytes = 0;
    }
  }
  PlanVectorStreamDeliveries(shape_, node_, layout_, counts, vector_part_, &stream_deliveries_);
  for (Delivery& d : stream_deliveries_) {
    if (!staged_nodes_[d.source]) d.bytes = 0;
  }
  puts_ = &stream_puts_;
  deliveries_ = &stream_deliveries_;
}

void Exchange::EndRound() {
  after_announced_ = !eager_ && announced_ok_;
  // Complete as a hypercube means every inbox landed, or every node's M was heard.
  after_hypercube_ = hypercube();
  // Pairwise eager puts of this parity seen from now on belong to the round after next.
  pairwise_eager_seen_[round_ & 1] = false;
  active_ = false;
  ++round_;
}

void Exchange::TellRankGone(uint32_t rank, bool left) {
  ExchangeMessage m;
  m.type = ExchangeMessage::Type::kRankGone;
  m.delivery = rank;
  m.left = left;
  rank_gone_ = m;
  for (uint32_t node = 0; node < shape_.nodes(); ++node) {
    if (node != node_ && peers_[node]) SendTo(node, m);
  }
}

void Exchange::OnMessage(uint32_t from, const ExchangeMessage& m) {
  if (from == node_ || from >= shape_.nodes()) return;
  if (m.type == ExchangeMessage::Type::kRoundReady && After(m.round, last_ready_[from])) last_ready_[from] = m.round;
  if (!Accept(from, m.round)) return;
  Heard& h = HeardOf(from, m.round);
  if (m.type == ExchangeMessage::Type::kRoundReady) {
    h.known = true;
    h.bytes_per_rank = m.bytes_per_rank;
    h.disagree = m.sizes_disagree;
    h.skipped = m.skipped;
    h.too_large = m.delivery == ExchangeMessage::kReadyTooLarge;
    h.mixed = m.delivery == ExchangeMessage::kReadyMixed;
    if (active_ && m.round == round_) {
      ReactToMixedSigns();
      CheckAgreement();
    }
  } else {
    h.credit = std::max(h.credit, m.delivery + 1);
  }
}

void Exchange::OnArrived(uint32_t from, uint32_t delivery) {
  if (from == node_ || from >= shape_.nodes()) return;
  if (!bootstrapped()) {
    // A peer that met every node before this one did may already be sending.
    early_.push_back({from, delivery});
    return;
  }
  if (IsBruckImm(delivery)) {
    OnHypercubeArrived(from, delivery & 1);
    return;
  }
  if (IsEagerImm(delivery)) {
    const uint32_t parity = delivery & 1;
    // A node running this round pairwise while this one runs it as a hypercube: its M cannot
    // be this node's, and its header may be unreadable under hypercube inboxes.
    pairwise_eager_seen_[parity] = true;
    if (active_ && hypercube() && (round_ & 1) == parity) ReactToMixedSigns();
    EagerHeader h;
    std::memcpy(&h, segment_->srb() + EagerSlotOffset(layout_, node_, from, parity), sizeof(h));
    if (h.magic != kEagerHeaderMagic || (h.round & 1) != parity || h.source_node != from) return;
    if (!Accept(from, h.round)) return;
    Heard& heard = HearHeader(from, h);
    heard.count_digest = h.count_digest;
    heard.staged = (h.flags & kEagerVectorStaged) != 0;
    heard.cube_fits = (h.flags & kEagerVectorCubeFits) != 0;
    heard.stream_rounds = h.stream_rounds;
    heard.tables = heard.tables || (h.flags & kEagerVectorTables) != 0;
    if (active_ && h.round == round_) CheckAgreement();
    if (active_ && h.round == round_) NameVectorPair();
    return;
  }
  if (!active_ || eager_ || delivery >= arrived_.size()) return;
  arrived_[delivery] = true;
  while (delivered_ < deliveries_->size() && arrived_[delivered_]) ++delivered_;
}

Exchange::Heard& Exchange::HearHeader(uint32_t from, const EagerHeader& h) {
  Heard& heard = HeardOf(from, h.round);
  heard.known = true;
  heard.data = true;
  heard.bytes_per_rank = h.bytes_per_rank;
  heard.skipped = (h.flags & kEagerSkipped) != 0;
  heard.begun_ns = h.begun_ns;
  heard.landed_ns = MonotonicNs();
  return heard;
}

void Exchange::OnHypercubeArrived(uint32_t from, uint32_t parity) {
  const uint32_t k = BruckRoundFrom(shape_.nodes(), node_, from);
  if (k >= BruckRounds(shape_.nodes())) return;  // no step of the hypercube comes from there
  if (active_ && hypercube() && (round_ & 1) == parity) {
    ReadInbox(k);
    return;
  }
  // The next round's (a sender finished this one first), or one of a round under way here
  // that does not run as a hypercube (the round fails: its nodes disagree on M).
  if (!active_ || (round_ & 1) != parity) early_inboxes_[parity] |= 1u << k;
}

bool Exchange::ReadInbox(uint32_t k) {
  if (inbox_landed_[k]) return false;
  const uint32_t n = shape_.nodes();
  const uint32_t from = BruckSenderTo(n, node_, k);
  const uint64_t at = (round_ & 1) * layout_.srb_half + k * BruckInboxStride(n, layout_.srb_half);
  EagerHeader h;
  std::memcpy(&h, segment_->srb() + at, sizeof(h));
  // A message of a round that failed may land late: the round's own brings its own put.
  if (h.magic != kEagerHeaderMagic || h.round != round_ || h.source_node != from) return false;
  Accept(from, h.round);
  HearHeader(from, h);
  const uint32_t flags_allowed = vector_cube() ? kEagerVectorCubeVoid : 0u;
  if (h.bytes_per_rank != bytes_per_rank_ || (h.flags & ~flags_allowed) != 0) {
    // Its blocks are laid for another M: never published nor forwarded.
    ReactToMixedSigns();
    CheckAgreement();
    return false;
  }
  if (vector_cube() && !cube_inboxes_.Land(k, h, segment_->srb() + at)) {
    // Its sizes cannot be its blocks': nothing of it is read, and the round stops here.
    hypercube_halted_ = agreed_ = true;
    error_code_ = Code::kProtocol;
    error_ = "node " + node_names_[from] + "'s hypercube message of step " + std::to_string(k) +
             " lists more bytes than its inbox holds";
    return false;
  }
  inbox_landed_[k] = true;
  ++inboxes_landed_;
  while (inbox_prefix_ < inbox_landed_.size() && inbox_landed_[inbox_prefix_]) ++inbox_prefix_;
  if (vector_cube() && inboxes_landed_ == inbox_landed_.size()) VectorCubeVerdict();
  return true;
}

bool Exchange::MixedSign(uint32_t node) const {
  const Heard& h = heard_[node][round_ & 1];
  return h.round == round_ && h.known &&
         (h.bytes_per_rank != bytes_per_rank_ || h.disagree || h.skipped || h.too_large);
}

void Exchange::ReactToMixedSigns() {
  if (!active_) return;
  bool asked = false, other_m = false;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n == node_) continue;
    const Heard& h = heard_[n][round_ & 1];
    asked |= h.round == round_ && h.known && h.mixed;
    other_m |= MixedSign(n);
  }
  if (hypercube() && other_m) hypercube_halted_ = true;  // the round fails whatever else comes
  if (ready_sent_) return;
  if (hypercube() && (asked || other_m || pairwise_eager_seen_[round_ & 1])) {
    SendReady(false, false, ExchangeMessage::kReadyMixed);
  } else if (asked) {
    // Not a hypercube here: this node's M, once, so that the nodes that run one learn it.
    SendReady(local_disagree_, local_skip_, too_large_ ? ExchangeMessage::kReadyTooLarge : 0);
  }
}

void Exchange::OnPutDone(uint64_t cookie) {
  uint32_t& n = in_flight_[put_cookie::RoundLow(cookie) & 1];
  if (n > 0) --n;
}

void Exchange::ForgetPutsTo(PeerId peer) {
  // Which puts to it are still out is not tracked one by one: none of this group's will come
  // back, and the group fails with the connection.
  if (std::find(peer_ids_.begin(), peer_ids_.end(), peer) != peer_ids_.end()) in_flight_ = {0, 0};
}

void Exchange::CheckAgreement() {
  if (agreed_ || !active_) return;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n != node_ && !HeardOf(n, round_).known) return;
  }
  std::map<uint64_t, std::vector<uint32_t>> by_bytes;
  std::vector<uint32_t> split, skipping, too_large;
  uint64_t digest_sum = 0;
  // Alltoallv, the call's first round: which nodes' parts did not fit (they stream theirs; the
  // others' came whole in this round), and the most stream rounds any of those needs.
  const bool first = vector_ && vector_part_ == 0;
  bool staged = false;
  uint32_t max_stream_rounds = 0;
  bool all_cube_fit = true;  // every node's part would fit a hypercube
  if (first) staged_nodes_.assign(shape_.nodes(), false);
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    const Heard* h = n == node_ ? nullptr : &HeardOf(n, round_);
    if (first && (h ? h->staged : !vector_plan_.fits)) {
      staged = true;
      staged_nodes_[n] = true;
      max_stream_rounds = std::max(max_stream_rounds, h ? h->stream_rounds : vector_plan_.stream_rounds);
    }
    by_bytes[h ? h->bytes_per_rank : bytes_per_rank_].push_back(n);
    if (h ? h->disagree : local_disagree_) split.push_back(n);
    if (h ? h->skipped : local_skip_) skipping.push_back(n);
    if (h ? h->too_large : too_large_) too_large.push_back(n);
    digest_sum += h ? h->count_digest : count_digest_;
    all_cube_fit = all_cube_fit && (h ? h->cube_fits : vector_cube_fits_);
  }
  if (vector_cube() && by_bytes.size() == 1 && split.empty() && skipping.empty() && too_large.empty()) {
    // Every node runs this alltoallv (a hypercube node hears them all only when told its M):
    // the verdict is the sums' once the last inbox lands.
    return;
  }
  if (vector_ && by_bytes.size() == 1 && split.empty() && skipping.empty() && too_large.empty()) {
    // The verdict needs every node's share of the digest, which rides with its data: a
    // ROUND_READY without a reason (an eager round after an announced one) precedes it.
    for (uint32_t n = 0; n < shape_.nodes(); ++n) {
      if (n != node_ && !HeardOf(n, round_).data) return;
    }
  }
  agreed_ = true;
  if (!skipping.empty()) {
    // Opting out wins over any size question: every rank falls back together.
    std::string nodes;
    for (uint32_t n : skipping) nodes += (nodes.empty() ? "" : ",") + node_names_[n];
    error_code_ = Code::kSkipped;
    error_ = "a rank on node" + std::string(skipping.size() > 1 ? "s " : " ") + nodes + " opted out of this alltoall";
    return;
  }
  error_code_ = Code::kSizeMismatch;
  if (by_bytes.size() == 1 && split.empty()) {
    if (vector_) VectorVerdict(too_large, digest_sum, staged, max_stream_rounds, all_cube_fit);
    announced_ok_ = !eager_ && !error_;
    return;
  }
  if (error_) return;
  std::string message = "ranks disagree on the bytes per rank of this alltoall:";
  std::string separator = " ";  // before the next part: the first follows the colon
  if (by_bytes.size() > 1) {
    for (const auto& [bytes, nodes] : by_bytes) {
      message += separator + (bytes == kVectorBytes ? "an alltoallv" : std::to_string(bytes)) + " on node" +
                 (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size(); ++i) message += (i ? "," : "") + node_names_[nodes[i]];
      separator = "; ";
    }
  }
  for (uint32_t n : split) {
    message += separator + "node " + node_names_[n] + "'s own ranks disagree";
    separator = "; ";
  }
  error_ = message;
}

void Exchange::VectorVerdict(const std::vector<uint32_t>& too_large, uint64_t digest_sum, bool staged,
                             uint32_t max_stream_rounds, bool all_cube_fit) {
  if (!too_large.empty()) {
    std::string nodes;
    for (uint32_t n : too_large) nodes += (nodes.empty() ? "" : ",") + node_names_[n];
    error_code_ = Code::kNotSupported;
    error_ = "alltoallv across nodes is served in at most " + std::to_string(kMaxVectorStreamRounds) +
             " rounds of the group's shared buffers; the part of node" + (too_large.size() > 1 ? "s " : " ") + nodes +
             " would take more";
    return;
  }
  // Every node's share is in: they sum to zero only if every pair of ranks agrees.
  if (digest_sum != 0) {
    if (VectorTablesFitSlots(shape_, layout_)) {
      naming_pair_ = true;  // the round fails once the tables have named the pair
      return;
    }
    error_ = "ranks disagree on the counts of this alltoallv: some rank sends another a number of bytes it does "
             "not expect (MPI's rule: sendcounts[j] on rank i equals recvcounts[i] on rank j)";
    return;
  }
  if (vector_part_ != 0) return;
  // Every node saw every node's flag: the next call tries the hypercube on all or on none.
  vector_cube_next_ = all_cube_fit;
  // Written for every first round, so that no word of a round 2^32 rounds back can pass for it.
  // This round carried stream round 0 of the parts that did not fit.
  const uint32_t streamed = staged && max_stream_rounds > 0 ? max_stream_rounds - 1 : 0;
  vector_rounds_in_call_ = 1 + streamed;
  const uint64_t own = staged_nodes_[node_] ? kVectorOwnPartStaged : 0;
  const uint64_t word = staged ? kVectorSomePartStreams | own | streamed : 0;
  segment_->header()->vector_streamed[round_ & 1].store(uint64_t{round_} << 32 | word, std::memory_order_relaxed);
}

bool Exchange::PostVectorTables() {
  // They land over the block this round put in each peer's slot, and go with the header line
  // its puts gathered: only once those have left.
  if (!naming_pair_ || tables_posted_ || posted_ != puts_->size() || in_flight_[round_ & 1] != 0) return false;
  uint8_t* header = segment_->header()->eager_out[round_ & 1];
  reinterpret_cast<EagerHeader*>(header)->flags |= kEagerVectorTables;
  const LocalPiece pieces[2] = {{header, kEagerHeaderBytes},
                                {segment_->count_table(0, round_), VectorTablesBytes(shape_, node_)}};
  for (uint32_t i = 0; i < puts_->size(); ++i) {
    const Put& p = (*puts_)[i];
    const PeerGroupInfo& peer = *peers_[p.dest];
    transport_->Put(peer_ids_[p.dest], pieces, 2, peer.srb_key,
                    peer.srb_offset + p.srb_offset + (round_ & 1) * layout_.srb_half,
                    EncodeImm(peer.tag, VectorTablesImmDelivery(round_)), put_cookie::Make(tag_, round_, true, i, true));
    ++in_flight_[round_ & 1];
  }
  tables_posted_ = true;
  NameVectorPair();
  return true;
}

void Exchange::NameVectorPair() {
  if (!naming_pair_ || !tables_posted_) return;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n != node_ && !HeardOf(n, round_).tables) return;
  }
  const VectorDisagreement d = FirstVectorDisagreementOf(shape_, [&](uint32_t rank) {
    const uint32_t n = shape_.node_of(rank);
    const CountEntry* tables =
        n == node_ ? segment_->count_table(0, round_)
                   : reinterpret_cast<const CountEntry*>(segment_->srb() + EagerSlotOffset(layout_, node_, n, round_) +
                                                         kEagerHeaderBytes);
    return tables + uint64_t{shape_.local_index(rank)} * shape_.size();
  });
  naming_pair_ = false;
  // The text a group on one node gives for the same tables; not found: the digests collided
  // (odds 2^-64), as on one node.
  error_ = d.found ? VectorDisagreementText(d) : "the count digests of this alltoallv disagree but its tables agree";
}

void Exchange::Post(const Put& p, uint32_t index, bool eager) {
  const uint8_t* ssb = segment_->ssb() + (eager ? (round_ & 1) * layout_.ssb_half : 0);
  pieces_.clear();
  if (eager) pieces_.push_back({segment_->header()->eager_out[round_ & 1], kEagerHeaderBytes});
  for (const SsbPiece& piece : p.pieces) pieces_.push_back({ssb + piece.ssb_offset, piece.bytes});
  const PeerGroupInfo& peer = *peers_[p.dest];
  const uint64_t srb_offset = p.srb_offset + (eager ? (round_ & 1) * layout_.srb_half : 0);
  const uint32_t delivery = eager ? EagerImmDelivery(round_) : p.delivery;
  transport_->Put(peer_ids_[p.dest], pieces_.data(), pieces_.size(), peer.srb_key, peer.srb_offset + srb_offset,
                  EncodeImm(peer.tag, delivery), put_cookie::Make(tag_, round_, eager, index));
  put_posted_[index] = true;
  ++posted_;
  ++in_flight_[round_ & 1];
}

bool Exchange::EagerCredit(uint32_t node) const {
  // A peer's ROUND_READY for this round, or (unless the round before was announced and used
  // the whole SRB) anything it said about the round before: its ranks were through with the
  // half this round lands in.
  if (AtLeast(last_ready_[node], round_)) return true;
  return !after_announced_ && (round_ == 1 || after_hypercube_ || AtLeast(last_heard_[node], round_ - 1));
}

bool Exchange::DirectWindowFull() const {
  // Both parities: an eager round is over once its puts are posted and its blocks delivered,
  // so the next one starts while the last one's puts may still be in flight (slow completions
  // under Soft-RoCE showed 3 with a window of 2 when only this round's were counted).
  return leader_ == Leader::kDirect && puts_in_flight() >= std::max<uint32_t>(leaders_.direct_window, 1);
}

bool Exchange::PostEager() {
  bool changed = false;
  for (uint32_t i = 0; i < puts_->size(); ++i) {
    if (DirectWindowFull()) break;
    if (put_posted_[i] || !EagerCredit((*puts_)[i].dest)) continue;
    Post((*puts_)[i], i, true);
    changed = true;
  }
  return changed;
}

void Exchange::PublishEager() {
  // Only blocks whose header carries this node's M: a rank may copy those out whatever the
  // round's verdict turns out to be. Alltoallv: only once the counts are known to agree, or a
  // rank would read pieces where its counts, not the sender's, put them.
  if (vector_ && (!agreed_ || error_ || naming_pair_)) return;
  while (delivered_ < deliveries_->size()) {
    const Heard& h = HeardOf((*deliveries_)[delivered_].source, round_);
    if (!h.data || h.skipped || h.bytes_per_rank != bytes_per_rank_) break;
    ++delivered_;
  }
}

bool Exchange::PostHypercube() {
  bool changed = false;
  const uint32_t parity = round_ & 1;
  const uint8_t* ssb = segment_->ssb() + parity * layout_.ssb_half;
  const uint8_t* srb = segment_->srb() + parity * layout_.srb_half;
  // Step k forwards what inboxes 0..k-1 brought.
  while (posted_ < puts_->size() && posted_ <= inbox_prefix_ && !hypercube_halted_ && !error_) {
    const uint32_t k = posted_;
    const Put& p = (*puts_)[k];
    // After a round that used the whole SRB, the receiver says when its ranks are through.
    if (after_announced_ && !AtLeast(last_ready_[p.dest], round_)) break;
    if (vector_) {
      GatherVectorCube(k, ssb, srb);
    } else {
      pieces_.clear();
      pieces_.push_back({segment_->header()->eager_out[parity], kEagerHeaderBytes});
      for (const BruckPiece& piece : hypercube_plan_.gathers[k]) {
        pieces_.push_back({(piece.forwarded ? srb : ssb) + piece.offset, piece.bytes});
      }
    }
    const PeerGroupInfo& peer = *peers_[p.dest];
    const uint32_t delivery = vector_ ? VectorCubeImmDelivery(parity) : BruckImmDelivery(parity);
    transport_->Put(peer_ids_[p.dest], pieces_.data(), pieces_.size(), peer.srb_key,
                    peer.srb_offset + parity * layout_.srb_half + p.srb_offset, EncodeImm(peer.tag, delivery),
                    put_cookie::Make(tag_, round_, true, k, false, vector_));
    put_posted_[k] = true;
    ++posted_;
    ++in_flight_[parity];
    changed = true;
  }
  return changed;
}

void Exchange::PublishHypercube() {
  if (vector_) {
    // All at once: the counts are known to agree only once every inbox is in. A call that goes
    // again publishes them too, so that its ranks wake and read the verdict.
    if (inboxes_landed_ == inbox_landed_.size() && !error_) delivered_ = deliveries_->size();
    return;
  }
  while (delivered_ < deliveries_->size() && inbox_landed_[(*deliveries_)[delivered_].step]) ++delivered_;
}

bool Exchange::PostAnnounced() {
  bool changed = false;
  for (uint32_t i = 0; i < puts_->size(); ++i) {
    if (DirectWindowFull()) break;
    if (put_posted_[i]) continue;
    const Put& p = (*puts_)[i];
    const bool credited = algo_ != Algorithm::kV3 || p.delivery < 2 || HeardOf(p.dest, round_).credit > p.delivery;
    if (!credited) continue;
    Post(p, i, false);
    changed = true;
  }
  return changed;
}

bool Exchange::Progress(uint32_t consumed_by_all) {
  if (!active_) return false;
  if (eager_) {
    const uint32_t before = delivered_;
    bool changed = hypercube() ? PostHypercube() : PostEager();
    changed = PostVectorTables() || changed;
    if (hypercube()) {
      PublishHypercube();
    } else {
      PublishEager();
    }
    return changed || delivered_ != before;
  }
  if (!agreed_ || error_) return false;
  bool changed = PostAnnounced();
  // v3: delivery d lands where d-2 was; grant it once every rank has copied d-2 out.
  while (credited_ < deliveries_->size() && consumed_by_all + 1 >= credited_) {
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kCredit;
    m.round = round_;
    m.delivery = credited_;
    SendTo((*deliveries_)[credited_].source, m);
    ++credited_;
    changed = true;
  }
  return changed;
}

bool Exchange::complete() const {
  if (!active_) return false;
  if (hypercube()) {
    // Its messages read inboxes the round after next overwrites: over once they have left.
    if (in_flight_[round_ & 1] != 0) return false;
    return (posted_ == puts_->size() && inboxes_landed_ == inbox_landed_.size()) || (agreed_ && error_);
  }
  if (!agreed_) return false;
  if (eager_) return posted_ == puts_->size() && (error_ || delivered_ == deliveries_->size());
  if (error_) return in_flight_[round_ & 1] == 0;
  return in_flight_[round_ & 1] == 0 && posted_ == puts_->size() && delivered_ == deliveries_->size();
}

void Exchange::PeerTimes(uint64_t* latest_begun_ns, uint64_t* mean_trip_ns) const {
  uint64_t latest = 0, trips = 0, count = 0;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n == node_) continue;
    const Heard& h = heard_[n][round_ & 1];
    if (h.round != round_ || !h.data) continue;
    latest = std::max(latest, h.begun_ns);
    trips += h.landed_ns - h.begun_ns;
    ++count;
  }
  *latest_begun_ns = latest;
  *mean_trip_ns = count == 0 ? 0 : trips / count;
}

std::string Exchange::Waiting() const {
  if (hypercube() && !ready_sent_) {
    // A hypercube node hears only from its log2 N senders (BruckSenderTo).
    std::string missing;
    for (uint32_t k = 0; k < inbox_landed_.size(); ++k) {
      if (inbox_landed_[k]) continue;
      const uint32_t from = BruckSenderTo(shape_.nodes(), node_, k);
      missing += (missing.empty() ? "" : ",") + node_names_[from] + " (step " + std::to_string(k) + ")";
    }
    if (!missing.empty()) return "hypercube messages from node(s) " + missing;
    if (posted_ < puts_->size()) return "credit to send to its peers";
    return "its own sends to complete";
  }
  std::set<std::string> silent, data;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n == node_) continue;
    const Heard& h = heard_[n][round_ & 1];
    if (h.round != round_ || !h.known) silent.insert(node_names_[n]);
  }
  for (uint32_t d = delivered_; d < deliveries_->size(); ++d) data.insert(node_names_[(*deliveries_)[d].source]);
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  if (!silent.empty()) return "the ranks of node(s) " + join(silent);
  if (naming_pair_ && tables_posted_) return "the count tables of the other nodes";
  if (!data.empty()) return "data from node(s) " + join(data);
  if (posted_ < puts_->size()) return "credit to send to its peers";
  if (in_flight_[round_ & 1] != 0) return "its own sends to complete";
  return "its own ranks";
}

}  // namespace ohio
