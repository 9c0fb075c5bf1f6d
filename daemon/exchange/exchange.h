// One group's inter-node exchange on this node, round by round; progress engine thread only.
// The nodes of a group run each round by one of several protocols (eager_round.h, direct
// included; announced_round.h; hypercube_round.h; vector_round.h; vector_cube_round.h), chosen
// alike on every node from the call's M, the group's buffers and the inter-node table. The Exchange
// is what the group's round driver (daemon/engine/round_driver.h) sees: it sorts what peers send
// into the round state they share, takes the verdict, and hands the rest to the round's protocol. The bytes the
// daemons exchange are listed in wire.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/exchange/across_nodes_verdict.h"
#include "daemon/exchange/announced_round.h"
#include "daemon/exchange/eager_round.h"
#include "daemon/exchange/exchange_message.h"
#include "daemon/exchange/hypercube_round.h"
#include "daemon/exchange/put_decoding.h"
#include "daemon/exchange/round_state.h"
#include "daemon/exchange/vector_call.h"
#include "daemon/exchange/vector_cube_round.h"
#include "daemon/exchange/vector_round.h"
#include "daemon/exchange/wire.h"
#include "daemon/transport/transport.h"
#include "shm/tables/internode_choice.h"
#include "shm/segment.h"

namespace ohio {

class Exchange {
 public:
  // `segment` is the group's on this node: eager puts gather their header from it and land
  // their blocks in its SRB; `tag` is the group's tag here (what peers' messages carry);
  // `internode_table` chooses the inter-node algorithm per call (the same table on every node).
  Exchange(const GroupShape& shape, uint32_t node, NodeLevelDesign algo, std::vector<std::string> node_names,
           std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
           const Segment* segment, uint32_t tag, InterNodeTable internode_table);

  // --- bootstrap ---
  void SetPeer(uint32_t node, const PeerGroupInfo& info);
  bool bootstrapped() const { return s_.bootstrapped(); }
  uint64_t plan_ssb_bytes() const { return s_.plan_ssb; }
  uint64_t plan_srb_bytes() const { return s_.plan_srb; }
  // The group's node whose daemon the transport knows as `peer`.
  std::optional<uint32_t> NodeIndex(PeerId peer) const;
  const std::string& node_name(uint32_t n) const { return s_.node_names[n]; }

  // --- rounds ---
  // This node's ranks are all in for `round` (the round after the last one ended): M agreed
  // locally unless local_disagree or local_opt_out.
  void BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_opt_out,
                  uint64_t round_in_call);
  // The round is over here (complete()): the next one may begin.
  void EndRound();
  void OnMessage(uint32_t from, const ExchangeMessage& m);
  // RANK_GONE to every other node: group rank `rank` of this node departed and the group is
  // closed here. Nodes not met yet are told as they are met (SetPeer): one may have met this
  // node already, from its side, and would otherwise wait for the rank until its timeout.
  void TellRankGone(uint32_t rank, bool left);
  // TellRankGone was called: every other node learns the group's end from it.
  bool told_rank_gone() const { return rank_gone_.has_value(); }
  // A put from node `from` landed; `delivery` is its immediate's delivery field.
  void OnArrived(uint32_t from, uint32_t delivery);
  // One of this group's puts completed (put_decoding.h).
  void OnPutDone(const DecodedPut& put);
  // Posts what credits allow and sends credits for what the ranks consumed. True if anything
  // changed.
  bool Progress(uint32_t consumed_by_all);

  bool eager() const { return s_.eager; }
  // The inter-node algorithm of the eager round under way.
  InterNodeAlgorithm internode() const { return s_.internode; }
  // Rounds of the current alltoallv call, once its first round's verdict is in (1 until then).
  uint32_t vector_rounds_in_call() const { return vector_call_.rounds_in_call; }
  // Bytes the current alltoallv call moves between this node's own ranks.
  uint64_t vector_local_bytes() const { return vector_call_.plan.local_bytes; }
  // Bytes the current alltoallv call's ranks on this node send, to every node.
  uint64_t vector_sent_bytes() const { return vector_call_.plan.sent_bytes; }
  // Deliveries of the current round landed (announced) or landed and published (eager) so
  // far, in order.
  uint32_t delivered() const { return s_.delivered; }
  // Set once the round cannot succeed (ranks on different nodes disagree on M).
  const std::optional<std::string>& error() const { return s_.error; }
  Code error_code() const { return s_.error_code; }
  // Every put of the round has been posted (an announced round: and has left) and every
  // delivery has landed, or the round failed and every node's M is known.
  bool complete() const { return s_.active && protocol_->complete(); }
  // Puts of rounds of this parity that have not left yet.
  uint32_t in_flight(uint32_t round) const { return s_.in_flight[round & 1]; }
  size_t puts_in_flight() const { return s_.puts_in_flight(); }
  // Puts of the current round not yet posted, or posted and not yet left: a group whose ranks
  // have all gone must still send them, or its peers would wait for them forever.
  bool sends_pending() const {
    return (s_.active && !s_.error && s_.posted < s_.puts->size()) || puts_in_flight() != 0;
  }
  // The connection to `peer` broke: puts to it will never complete.
  void ForgetPutsTo(PeerId peer);
  // Every put of the current round has been posted.
  bool all_posted() const { return s_.active && s_.posted == s_.puts->size(); }
  // Every delivery of the current round has landed (and, eager, was published).
  bool all_delivered() const { return s_.active && s_.delivered == s_.deliveries->size(); }
  // For the stage report (shm/round_stamps.h), of the current eager round's peers: the latest
  // time one began it, and the mean of (landed here - began there) over them. Zeros when no
  // peer's block landed.
  void PeerTimes(uint64_t* latest_begun_ns, uint64_t* mean_trip_ns) const { s_.PeerTimes(latest_begun_ns, mean_trip_ns); }
  // Who this node still waits on, for timeout messages.
  std::string Waiting() const { return protocol_->Waiting(); }

 private:
  // The protocol the round under way runs, from its M and inter-node algorithm.
  RoundProtocol* ChooseProtocol();
  // The header every eager put and hypercube message of the round carries.
  void WriteEagerHeader();
  // A pairwise eager put's header landed in this node's slot of the SRB half of `parity`.
  void OnEagerHeader(uint32_t from, uint32_t parity);
  // A hypercube message landed in this node's inbox of the SRB half of `parity`.
  void OnHypercubeArrived(uint32_t from, uint32_t parity);

  RoundState s_;
  VectorCall vector_call_;
  EagerRound eager_round_;
  AnnouncedRound announced_round_;
  VectorRound vector_round_;
  AcrossNodesVerdict verdict_;
  HypercubeRound hypercube_round_;
  VectorCubeRound vector_cube_round_;
  RoundProtocol* protocol_ = &announced_round_;  // the round under way's, or the last one's

  std::optional<ExchangeMessage> rank_gone_;  // told to every node met from now on
  std::vector<std::pair<uint32_t, uint32_t>> early_;  // (node, delivery) of puts that landed before
};

}  // namespace ohio
