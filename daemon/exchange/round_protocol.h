// How one kind of inter-node round runs: which puts it makes and which deliveries it waits for,
// when it may post them, when a landed block may be published to the ranks, and when the round
// is over. The Exchange picks one per round (daemon/exchange/exchange.h); what peers said and
// the verdict live in the RoundState every protocol shares.
#pragma once

#include <cstdint>
#include <string>

#include "daemon/exchange/round_state.h"

namespace ohio {

class RoundProtocol {
 public:
  explicit RoundProtocol(RoundState* state) : s_(*state) {}
  virtual ~RoundProtocol() = default;
  RoundProtocol(const RoundProtocol&) = delete;
  RoundProtocol& operator=(const RoundProtocol&) = delete;

  // Aims the round state's puts and deliveries at the round's (BeginRound, before the eager
  // header is written); announced rounds also announce themselves here.
  virtual void Plan() = 0;
  // Once the puts are known and their flags reset: what landed before the round began.
  virtual void Start() {}
  // Posts what credits allow and publishes what landed; true if anything changed.
  virtual bool Progress(uint32_t consumed_by_all) = 0;
  virtual bool complete() const = 0;
  virtual std::string Waiting() const { return s_.Waiting(false); }
  // A peer's header of the round under way landed in its eager slot.
  virtual void OnPeerHeader() {}
  // Something was heard that may show the nodes do not all run this round alike. Only a node
  // that runs a hypercube doubts; every other node answers a node that asked (kReadyMixed) with
  // its own M, once a round, so that the nodes that run one learn it.
  virtual void ReactToMixedSigns();

 protected:
  // Whether node `n` asked, this round, to be told every node's M.
  bool Asked(uint32_t n) const;

  RoundState& s_;
};

}  // namespace ohio
