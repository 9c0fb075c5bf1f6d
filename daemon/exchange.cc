#include "daemon/exchange.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

namespace ohio {

Exchange::Exchange(const GroupShape& shape, uint32_t node, Algorithm algo, std::vector<std::string> node_names,
                   std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport)
    : shape_(shape),
      node_(node),
      algo_(algo),
      node_names_(std::move(node_names)),
      key_(key),
      transport_(transport),
      peers_(shape.nodes()),
      plan_ssb_(ssb_bytes),
      plan_srb_(srb_bytes) {
  for (const std::string& name : node_names_) peer_ids_.push_back(transport->PeerFor(name));
}

void Exchange::SetPeer(uint32_t node, const PeerGroupInfo& info) {
  if (node == node_ || node >= peers_.size()) return;
  if (!peers_[node]) ++known_peers_;
  peers_[node] = info;
  plan_ssb_ = std::min(plan_ssb_, info.ssb_bytes);
  plan_srb_ = std::min(plan_srb_, info.srb_bytes);
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

void Exchange::BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_skip,
                          uint64_t round_in_call, const uint8_t* ssb, uint32_t tag) {
  round_ = round;
  active_ = true;
  bytes_per_rank_ = bytes_per_rank;
  local_disagree_ = local_disagree;
  local_skip_ = local_skip;
  ssb_ = ssb;
  tag_ = tag;
  agreed_ = false;
  error_.reset();
  puts_.clear();
  deliveries_.clear();
  posted_ = done_ = delivered_ = credited_ = 0;
  for (auto it = readies_.begin(); it != readies_.end();) it = it->first < round ? readies_.erase(it) : std::next(it);
  for (auto it = credits_.begin(); it != credits_.end();) it = it->first < round ? credits_.erase(it) : std::next(it);
  readies_[round].resize(shape_.nodes());
  credits_[round].resize(shape_.nodes());
  if (!local_disagree && !local_skip) {
    auto staging = PlanGroupStaging(shape_, algo_, plan_ssb_, plan_srb_, bytes_per_rank);
    if (!staging.ok()) {
      error_ = staging.status().message();
    } else {
      const uint64_t slice = staging->length(round_in_call);
      puts_ = PlanPuts(shape_, algo_, node_, slice, plan_srb_);
      deliveries_ = PlanDeliveries(shape_, algo_, node_, slice, plan_srb_);
    }
  }
  put_posted_.assign(puts_.size(), false);
  arrived_.assign(deliveries_.size(), false);
  credited_ = algo_ == Algorithm::kV3 ? std::min<uint32_t>(2, deliveries_.size()) : deliveries_.size();
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n == node_) continue;
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kRoundReady;
    m.sizes_disagree = local_disagree;
    m.skipped = local_skip;
    m.round = round;
    m.bytes_per_rank = bytes_per_rank;
    SendTo(n, m);
  }
  CheckAgreement();
}

void Exchange::OnMessage(uint32_t from, const ExchangeMessage& m) {
  if (from == node_ || from >= shape_.nodes()) return;
  // A peer is at most one round ahead: it cannot finish a round without our puts.
  if (m.round < round_ || m.round > round_ + 1) return;
  if (m.type == ExchangeMessage::Type::kRoundReady) {
    auto& r = readies_[m.round];
    r.resize(shape_.nodes());
    r[from] = Ready{m.bytes_per_rank, m.sizes_disagree, m.skipped};
    if (active_ && m.round == round_) CheckAgreement();
  } else {
    auto& c = credits_[m.round];
    c.resize(shape_.nodes());
    c[from] = std::max(c[from], m.delivery + 1);
  }
}

void Exchange::CheckAgreement() {
  if (agreed_ || !active_) return;
  const auto& r = readies_[round_];
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n != node_ && !r[n]) return;
  }
  std::map<uint64_t, std::vector<uint32_t>> by_bytes;
  std::vector<uint32_t> split, skipping;
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    const uint64_t m = n == node_ ? bytes_per_rank_ : r[n]->bytes_per_rank;
    const bool disagree = n == node_ ? local_disagree_ : r[n]->disagree;
    by_bytes[m].push_back(n);
    if (disagree) split.push_back(n);
    if (n == node_ ? local_skip_ : r[n]->skipped) skipping.push_back(n);
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
  if (by_bytes.size() == 1 && split.empty()) return;
  if (error_) return;
  std::string message = "ranks disagree on the bytes per rank of this alltoall:";
  if (by_bytes.size() > 1) {
    for (const auto& [bytes, nodes] : by_bytes) {
      message += " " + std::to_string(bytes) + " on node" + (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size(); ++i) message += (i ? "," : "") + node_names_[nodes[i]];
      message += ";";
    }
    message.pop_back();
  }
  for (uint32_t n : split) message += "; node " + node_names_[n] + "'s own ranks disagree";
  error_ = message;
}

bool Exchange::Progress(uint32_t consumed_by_all) {
  if (!active_ || !agreed_ || error_) return false;
  bool changed = false;
  const auto& credits = credits_[round_];
  for (uint32_t i = 0; i < puts_.size(); ++i) {
    if (put_posted_[i]) continue;
    const Put& p = puts_[i];
    const bool credited = algo_ != Algorithm::kV3 || p.delivery < 2 || credits[p.dest] > p.delivery;
    if (!credited) continue;
    pieces_.clear();
    for (const SsbPiece& piece : p.pieces) pieces_.push_back({ssb_ + piece.ssb_offset, piece.bytes});
    const PeerGroupInfo& peer = *peers_[p.dest];
    transport_->Put(peer_ids_[p.dest], pieces_.data(), pieces_.size(), peer.srb_key, peer.srb_offset + p.srb_offset,
                    EncodeImm(peer.tag, p.delivery), PutCookie(tag_, round_, i));
    put_posted_[i] = true;
    ++posted_;
    changed = true;
  }
  // v3: delivery d lands where d-2 was; grant it once every rank has copied d-2 out.
  while (credited_ < deliveries_.size() && consumed_by_all + 1 >= credited_) {
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kCredit;
    m.round = round_;
    m.delivery = credited_;
    SendTo(deliveries_[credited_].source, m);
    ++credited_;
    changed = true;
  }
  return changed;
}

void Exchange::OnArrived(uint32_t delivery) {
  if (!active_ || delivery >= deliveries_.size()) return;
  arrived_[delivery] = true;
  while (delivered_ < deliveries_.size() && arrived_[delivered_]) ++delivered_;
}

void Exchange::OnPutDone(uint32_t round_low, uint32_t index) {
  if (active_ && (round_ & 0xff) == round_low && index < puts_.size()) ++done_;
}

void Exchange::ForgetPutsTo(PeerId peer) {
  for (uint32_t i = 0; i < puts_.size(); ++i) {
    if (put_posted_[i] && peer_ids_[puts_[i].dest] == peer) ++done_;
  }
  done_ = std::min(done_, posted_);
}

bool Exchange::complete() const {
  if (!active_) return false;
  if (error_) return posted_ == done_ && agreed_;
  return agreed_ && done_ == puts_.size() && delivered_ == deliveries_.size();
}

std::string Exchange::Waiting() const {
  std::set<std::string> ready, data;
  const auto it = readies_.find(round_);
  for (uint32_t n = 0; n < shape_.nodes(); ++n) {
    if (n != node_ && (it == readies_.end() || !it->second[n])) ready.insert(node_names_[n]);
  }
  for (uint32_t d = delivered_; d < deliveries_.size(); ++d) data.insert(node_names_[deliveries_[d].source]);
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  if (!ready.empty()) return "the ranks of node(s) " + join(ready);
  if (!data.empty()) return "data from node(s) " + join(data);
  if (done_ < puts_.size()) return "its own sends to complete";
  return "its own ranks";
}

}  // namespace ohio
