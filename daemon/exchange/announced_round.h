// Announced rounds (everything larger than an eager round): when this node's ranks have all
// arrived, it sends ROUND_READY (with its M) to every other node; once it holds every node's, it
// knows whether all agree and, if so, posts its puts (PlanPuts) into the peers' SRBs as credits
// allow, while peers' puts land in its own SRB and are published in delivery order. With v3 a
// delivery d >= 2 reuses the half of d-2: its sender may put it only after this node's ranks
// have copied d-2 out and this node has sent a CREDIT. ROUND_READY also grants deliveries 0 and
// 1 (v3) or all of them (v1, v2: the SRB holds the whole round).
//
// A node whose own ranks disagree or opted out, or whose alltoallv part would take too many
// rounds, runs its round as an announced one without puts: its ROUND_READY says why.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/exchange/round_protocol.h"

namespace ohio {

class AnnouncedRound : public RoundProtocol {
 public:
  using RoundProtocol::RoundProtocol;

  // The round's index in its call: which slice Plan puts (the ranks plan the same).
  void SetRoundInCall(uint64_t round_in_call) { round_in_call_ = round_in_call; }
  // Plans the round's slice of the call and announces the round (ROUND_READY).
  void Plan() override;
  bool Progress(uint32_t consumed_by_all) override;
  bool complete() const override;
  // A peer's put of this round landed: its delivery index.
  void OnArrived(uint32_t delivery);

 private:
  bool PostAnnounced();

  uint64_t round_in_call_ = 0;
  std::vector<Put> puts_;
  std::vector<Delivery> deliveries_;
  std::vector<bool> arrived_;  // by delivery
  uint32_t credited_ = 0;      // deliveries this node has granted so far this round
};

}  // namespace ohio
