// One group's inter-node exchange on this node, round by round; progress engine thread only.
//
// A round: when this node's ranks have all arrived, it sends ROUND_READY (with its M) to
// every other node of the group. Once it holds every node's ROUND_READY it knows whether all
// agree on M; if so it posts its puts (PlanPuts) into the peers' SRBs as credits allow, while
// peers' puts land in its own SRB and are published to the ranks in delivery order. With v3
// a delivery d >= 2 reuses the half of d-2: its sender may put it only after this node's ranks
// have copied d-2 out and this node has sent a CREDIT. ROUND_READY also grants deliveries 0
// and 1 (v3) or all of them (v1, v2: the SRB holds the whole round).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/exchange_message.h"
#include "daemon/transport/transport.h"
#include "shm/exchange_plan.h"

namespace ohio {

struct PeerGroupInfo {
  uint32_t tag = 0;
  uint64_t srb_key = 0;     // the registered region that holds its SRB
  uint64_t srb_offset = 0;  // where the SRB starts in that region
  uint64_t ssb_bytes = 0;
  uint64_t srb_bytes = 0;
};

class Exchange {
 public:
  Exchange(const GroupShape& shape, uint32_t node, Algorithm algo, std::vector<std::string> node_names,
           std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport);

  // --- bootstrap ---
  void SetPeer(uint32_t node, const PeerGroupInfo& info);
  bool bootstrapped() const { return known_peers_ + 1 == shape_.nodes(); }
  uint64_t plan_ssb_bytes() const { return plan_ssb_; }
  uint64_t plan_srb_bytes() const { return plan_srb_; }
  // The group's node whose daemon the transport knows as `peer`.
  std::optional<uint32_t> NodeIndex(PeerId peer) const;
  const std::string& node_name(uint32_t n) const { return node_names_[n]; }

  // --- rounds ---
  // This node's ranks are all in for `round`: M agreed locally unless local_disagree.
  // `tag` is this group's tag here (the one that peers' messages carry in their cookies).
  void BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_skip,
                  uint64_t round_in_call, const uint8_t* ssb, uint32_t tag);
  void OnMessage(uint32_t from, const ExchangeMessage& m);
  void OnArrived(uint32_t delivery);
  void OnPutDone(uint32_t round_low, uint32_t index);
  // Posts what credits allow and sends credits for what the ranks consumed. True if anything
  // changed.
  bool Progress(uint32_t consumed_by_all);

  // Deliveries of the current round landed so far, in order.
  uint32_t delivered() const { return delivered_; }
  // Set once the round cannot succeed (ranks on different nodes disagree on M).
  const std::optional<std::string>& error() const { return error_; }
  Code error_code() const { return error_code_; }
  // Every put of the round has left and every delivery has landed (or the round failed).
  bool complete() const;
  size_t puts_in_flight() const { return posted_ - done_; }
  // Puts of the current round not yet posted or not yet completed: a group whose ranks have
  // all gone must still send them, or its peers would wait for them forever.
  bool sends_pending() const { return active_ && !error_ && (posted_ < puts_.size() || done_ < posted_); }
  // The connection to `peer` broke: puts to it will never complete.
  void ForgetPutsTo(PeerId peer);
  // Who this node still waits on, for timeout messages.
  std::string Waiting() const;

  static uint64_t PutCookie(uint32_t tag, uint32_t round, uint32_t index) {
    return uint64_t{tag} << 40 | uint64_t{round & 0xff} << 32 | index;
  }

 private:
  struct Ready {
    uint64_t bytes_per_rank;
    bool disagree;
    bool skipped;
  };
  void CheckAgreement();
  void SendTo(uint32_t node, ExchangeMessage m);

  const GroupShape& shape_;
  const uint32_t node_;
  const Algorithm algo_;
  const std::vector<std::string> node_names_;
  std::vector<PeerId> peer_ids_;  // by node: the transport's id for its daemon
  const std::array<uint8_t, 16> key_;
  Transport* transport_;
  std::vector<std::optional<PeerGroupInfo>> peers_;
  uint32_t known_peers_ = 0;
  uint64_t plan_ssb_;
  uint64_t plan_srb_;

  uint32_t round_ = 0;
  bool active_ = false;
  uint64_t bytes_per_rank_ = 0;
  bool local_disagree_ = false;
  bool local_skip_ = false;
  Code error_code_ = Code::kSizeMismatch;
  const uint8_t* ssb_ = nullptr;
  uint32_t tag_ = 0;
  std::map<uint32_t, std::vector<std::optional<Ready>>> readies_;  // by round: this one and the next
  std::map<uint32_t, std::vector<uint32_t>> credits_;              // by round: credited deliveries + 1, per node
  bool agreed_ = false;
  std::optional<std::string> error_;
  std::vector<Put> puts_;
  std::vector<LocalPiece> pieces_;  // one put's gather list, reused so that a put allocates nothing
  std::vector<bool> put_posted_;
  uint32_t posted_ = 0;
  uint32_t done_ = 0;
  std::vector<Delivery> deliveries_;
  std::vector<bool> arrived_;
  uint32_t delivered_ = 0;
  uint32_t credited_ = 0;  // deliveries this node has granted so far this round
};

}  // namespace ohio
