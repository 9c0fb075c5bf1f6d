// An alltoallv's first round runs as a hypercube (shm/plan/vector_cube.h) when the inter-node table runs
// hypercubes for the group (whatever N: XOR pairing or the rotation, as for an alltoall) and the
// call before ended with every node's part fitting one (every node learns that alike: from a
// hypercube call's sums, or from the flags of every header of a pairwise call's first round):
// its messages carry their blocks' sizes, and the count digest and a "does not fit" flag are
// summed along them. Blocks are published only once the last inbox landed; if the sum or the
// flag says the call cannot be read, the ranks learn it goes again (kVectorCallGoesAgain), and
// it does, as a pairwise call.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/exchange/hypercube_round.h"
#include "daemon/exchange/vector_call.h"
#include "shm/plan/vector_cube.h"

namespace ohio {

class VectorCubeRound : public HypercubeRound {
 public:
  VectorCubeRound(RoundState* state, AcrossNodesVerdict* verdict, VectorCall* call)
      : HypercubeRound(state, verdict), call_(*call) {}

  void Plan() override;

 protected:
  // Step k's message: its header line and size table written into the segment, its pieces
  // gathered from the round's SSB half `ssb` and SRB half `srb`.
  void Gather(uint32_t k, const uint8_t* ssb, const uint8_t* srb) override;
  uint32_t FlagsAllowed() const override { return kEagerVectorCubeVoid; }
  bool Land(uint32_t k, const EagerHeader& h, const uint8_t* inbox) override;
  // Whether the ranks may read the call or it goes again.
  void AllLanded() override;
  // All at once: the counts are known to agree only once every inbox is in.
  void Publish() override;

 private:
  VectorCall& call_;
  // What the inboxes said (this node's own blocks are the call's pairwise puts, by destination).
  VectorCubeInboxes inboxes_;
  std::vector<Put> puts_;  // one per step: dest, srb_offset of the inbox, no pieces
  std::vector<Delivery> deliveries_;
};

}  // namespace ohio
