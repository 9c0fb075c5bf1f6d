// Eager rounds (shm/plan/eager_plan.h: the call fits half of every SRB): when this node's ranks have
// all arrived, it puts its block to every other node at once, header first (round, M), into
// that node's slot of the SRB half of the round's parity. Receiving a peer's round k is the
// credit for sending it round k+1. Every node learns every node's M from the headers; a node
// whose own ranks disagree or opted out sends ROUND_READY (with the reason) instead of data.
// Blocks whose header carries this node's M are published to the ranks as they land; once
// every node's M is known, a disagreement is the round's error on every node.
//
// From an announced round to an eager one, the SRB held the whole announced round: each node
// sends ROUND_READY for the eager round too, and puts only once it holds the peer's.
//
// Direct rounds (the inter-node table chooses it for the call's M, shm/tables/internode_choice.h): eager or
// announced rounds whose puts go as pairwise ones do, but never more than the table's
// direct_window (ohiod's direct-window) in flight from this node at once, which bounds what any
// node receives at once (RoundState::DirectWindowFull).
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/exchange/round_protocol.h"

namespace ohio {

class EagerRound : public RoundProtocol {
 public:
  using RoundProtocol::RoundProtocol;

  void Plan() override;
  bool Progress(uint32_t consumed_by_all) override;
  bool complete() const override;

 protected:
  // Whether `node` has given this node the credit to put the round into its SRB half.
  bool EagerCredit(uint32_t node) const;
  bool PostEager();
  // Publishes, in order, the blocks landed whose header carries this node's M.
  void PublishLanded();

 private:
  // The puts of the round: planned once per M.
  struct EagerPlanCache {
    uint64_t bytes_per_rank = ~uint64_t{0};
    std::vector<Put> puts;
    std::vector<Delivery> deliveries;
  } plan_;
};

}  // namespace ohio
