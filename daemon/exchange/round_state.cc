#include "daemon/exchange/round_state.h"

#include <algorithm>
#include <set>
#include <utility>

#include "daemon/exchange/wire.h"
#include "shm/round_stamps.h"

namespace ohio {

bool RoundAfter(uint32_t a, uint32_t b) { return !RoundReached(b, a); }
bool RoundAtLeast(uint32_t a, uint32_t b) { return RoundReached(a, b); }

RoundState::RoundState(const GroupShape& shape, uint32_t node, NodeLevelDesign algo, std::vector<std::string> node_names,
                       std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
                       const Segment* segment, uint32_t tag, InterNodeTable internode_table)
    : shape(shape),
      node(node),
      algo(algo),
      node_names(std::move(node_names)),
      key(key),
      transport(transport),
      segment(segment),
      tag(tag),
      internode_table(std::move(internode_table)),
      peers(shape.nodes()),
      plan_ssb(ssb_bytes),
      plan_srb(srb_bytes),
      heard(shape.nodes()),
      last_heard(shape.nodes(), 0),
      last_ready(shape.nodes(), 0) {
  for (const std::string& name : this->node_names) peer_ids.push_back(transport->PeerFor(name));
}

Heard& RoundState::HeardOf(uint32_t n, uint32_t r) {
  Heard& h = heard[n][r & 1];
  if (h.round != r) h = Heard{r};
  return h;
}

Heard& RoundState::HearHeader(uint32_t from, const EagerHeader& h) {
  Heard& said = HeardOf(from, h.round);
  said.known = true;
  said.data = true;
  said.bytes_per_rank = h.bytes_per_rank;
  said.opted_out = (h.flags & kEagerOptedOut) != 0;
  said.begun_ns = h.begun_ns;
  said.landed_ns = MonotonicNs();
  return said;
}

bool RoundState::Accept(uint32_t n, uint32_t r) {
  if (RoundAfter(r, last_heard[n])) last_heard[n] = r;
  // This round and the next; anything older belongs to a round that is over here.
  return RoundAtLeast(r, round) && !RoundAfter(r, round + 1);
}

void RoundState::Begin(uint32_t r, uint64_t m, bool disagree, bool opt_out) {
  round = r;
  active = true;
  bytes_per_rank = m;
  local_disagree = disagree;
  local_opt_out = opt_out;
  agreed = false;
  announced_ok = false;
  ready_sent = false;
  error.reset();
  posted = delivered = 0;
  too_large = false;
  count_digest = 0;
}

void RoundState::End() {
  after_announced = !eager && announced_ok;
  // Complete as a hypercube means every inbox landed, or every node's M was heard.
  after_hypercube = hypercube();
  // Pairwise eager puts of this parity seen from now on belong to the round after next.
  pairwise_eager_seen[round & 1] = false;
  active = false;
  ++round;
}

void RoundState::SendTo(uint32_t n, ExchangeMessage m) {
  m.tag = peers[n]->tag;
  m.key = key;
  const ExchangeMessage::Encoded bytes = m.Encode();
  transport->Send(peer_ids[n], bytes.data(), bytes.size());
}

void RoundState::SendReady(bool disagree, bool opted_out, uint32_t reason) {
  ready_sent = true;
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    if (n == node) continue;
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kRoundReady;
    m.sizes_disagree = disagree;
    m.opted_out = opted_out;
    m.round = round;
    m.bytes_per_rank = bytes_per_rank;
    m.delivery = reason;
    SendTo(n, m);
  }
}

void RoundState::Post(const Put& p, uint32_t index, bool eager_put) {
  const uint8_t* ssb = segment->ssb() + (eager_put ? (round & 1) * layout.ssb_half : 0);
  pieces.clear();
  if (eager_put) pieces.push_back({segment->header()->eager_out[round & 1], kEagerHeaderBytes});
  for (const SsbPiece& piece : p.pieces) pieces.push_back({ssb + piece.ssb_offset, piece.bytes});
  const PeerGroupInfo& peer = *peers[p.dest];
  const uint64_t srb_offset = p.srb_offset + (eager_put ? (round & 1) * layout.srb_half : 0);
  const uint32_t delivery = eager_put ? EagerImmDelivery(round) : p.delivery;
  transport->Put(peer_ids[p.dest], pieces.data(), pieces.size(), peer.srb_key, peer.srb_offset + srb_offset,
                 EncodeImm(peer.tag, delivery), put_cookie::Make(tag, round, eager_put, index));
  put_posted[index] = true;
  ++posted;
  ++in_flight[round & 1];
}

bool RoundState::DirectWindowFull() const {
  // Both parities: an eager round is over once its puts are posted and its blocks delivered,
  // so the next one starts while the last one's puts may still be in flight (slow completions
  // under Soft-RoCE showed 3 with a window of 2 when only this round's were counted).
  return internode == InterNodeAlgorithm::kDirect && puts_in_flight() >= std::max<uint32_t>(internode_table.direct_window, 1);
}

void RoundState::PeerTimes(uint64_t* latest_begun_ns, uint64_t* mean_trip_ns) const {
  uint64_t latest = 0, trips = 0, count = 0;
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    if (n == node) continue;
    const Heard& h = heard[n][round & 1];
    if (h.round != round || !h.data) continue;
    latest = std::max(latest, h.begun_ns);
    trips += h.landed_ns - h.begun_ns;
    ++count;
  }
  *latest_begun_ns = latest;
  *mean_trip_ns = count == 0 ? 0 : trips / count;
}

std::string RoundState::Waiting(bool tables) const {
  std::set<std::string> silent, data;
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    if (n == node) continue;
    const Heard& h = heard[n][round & 1];
    if (h.round != round || !h.known) silent.insert(node_names[n]);
  }
  for (uint32_t d = delivered; d < deliveries->size(); ++d) data.insert(node_names[(*deliveries)[d].source]);
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  if (!silent.empty()) return "the ranks of node(s) " + join(silent);
  if (tables) return "the count tables of the other nodes";
  if (!data.empty()) return "data from node(s) " + join(data);
  if (posted < puts->size()) return "credit to send to its peers";
  if (in_flight[round & 1] != 0) return "its own sends to complete";
  return "its own ranks";
}

}  // namespace ohio
