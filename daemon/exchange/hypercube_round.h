// Hypercube rounds (the inter-node table chooses it for the call's M and it fits, see
// RoundInterNodeAlgorithm): eager rounds whose node exchange is shm/plan/bruck_plan.h's: in step k this node
// sends one message (header first, from eager_out) to node + 2^k (XOR 2^k for a power of two),
// gathered from its SSB half and from the inboxes of earlier steps, into that node's inbox k;
// it sends step k once inboxes 0..k-1 have landed. Blocks are published as their inbox lands
// (its header carries this node's M). All inboxes landed means every node had arrived at the
// round, which is the credit for the next one. The round completes only once this node's
// messages have left: they read inboxes that the round after next overwrites. A sign that not
// every node runs the hypercube with this M (ExchangeMessage::kReadyMixed) turns the round into
// one where every node tells every node its M, and the verdict is taken as in announced rounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/exchange/across_nodes_verdict.h"
#include "daemon/exchange/round_protocol.h"
#include "shm/plan/bruck_plan.h"

namespace ohio {

class HypercubeRound : public RoundProtocol {
 public:
  HypercubeRound(RoundState* state, AcrossNodesVerdict* verdict) : RoundProtocol(state), verdict_(*verdict) {}

  void Plan() override;
  void Start() override;
  bool Progress(uint32_t consumed_by_all) override;
  bool complete() const override;
  std::string Waiting() const override;
  // Signs that not every node runs this round as a hypercube with this M: what was heard of the
  // round so far, and pairwise eager puts seen in its SRB half. If any, tells every node this
  // node's M (kReadyMixed), once a round.
  void ReactToMixedSigns() override;
  // Reads inbox k's header once its message landed; false if the message is not (yet) the
  // round's.
  bool ReadInbox(uint32_t k);
  // The group's buffers are known now: a plan made before is void.
  void ForgetPlan() { plan_ = PlanCache{}; }

 protected:
  // Step k's message into the round state's pieces: header first, gathered from the round's
  // SSB half `ssb` and SRB half `srb`.
  virtual void Gather(uint32_t k, const uint8_t* ssb, const uint8_t* srb);
  // Header flags a message of the round may carry.
  virtual uint32_t FlagsAllowed() const { return 0; }
  // Inbox k's message, its header checked, is the round's: false if it cannot be read.
  virtual bool Land(uint32_t, const EagerHeader&, const uint8_t*) { return true; }
  // Every inbox landed.
  virtual void AllLanded() {}
  virtual void Publish();

  AcrossNodesVerdict& verdict_;
  bool halted_ = false;  // a node runs another M: no more messages this round
  std::vector<bool> inbox_landed_;
  uint32_t inboxes_landed_ = 0;

 private:
  bool PostSteps();
  bool MixedSign(uint32_t node) const;

  uint32_t inbox_prefix_ = 0;  // inboxes 0..inbox_prefix_-1 have all landed
  struct PlanCache {
    uint64_t bytes_per_rank = ~uint64_t{0};
    std::vector<Put> puts;  // one per step: dest, srb_offset of the inbox's header, no pieces
    std::vector<std::vector<BruckPiece>> gathers;  // by step
    std::vector<Delivery> deliveries;
  } plan_;
};

}  // namespace ohio
