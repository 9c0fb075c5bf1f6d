// Which peers get an RC queue pair when a node may keep only `capacity` of them per rail, decided
// from measured traffic apart from the verbs calls that carry it out. An HCA caches a bounded
// number of queue pairs' state, and a node with one RC queue pair per peer node (4,095 at 4,096
// nodes) thrashes that cache; the peers outside the pool share one UD queue pair, on which a put
// costs a datagram per MTU and the receiver's copy out of it. So the pool goes to the peers that
// would cost the most on UD, as adaptive transport selection does (Takagi et al.).
//
// At the end of each interval the planner is told what was sent to every peer (bytes and puts),
// keeps a smoothed cost per peer (the datagrams its traffic would take on UD, weighed over past
// intervals), and answers with the moves to make. A peer enters while the pool has room; once it
// is full, a peer outside displaces the cheapest one inside only if it costs `displace_ratio`
// times as much, and neither has moved within `settle_intervals`: the hysteresis that keeps two
// peers of nearly equal traffic from trading places every interval, since a move takes a queue
// pair's set-up and both ends' agreement. A peer that sent nothing for `idle_intervals` leaves
// the pool even with no one waiting, so that its queue pair is not held for nothing, unless
// there are no more peers than places.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

struct RcPoolOptions {
  static constexpr uint32_t kUnlimited = UINT32_MAX;
  uint32_t capacity = 256;        // RC queue pairs per rail; 0: every peer on UD
  uint32_t mtu = 4096;            // the UD path's payload per datagram
  double keep = 0.5;              // weight of the past in the smoothed cost (0: this interval alone)
  double displace_ratio = 1.5;    // what an outsider must cost, over the member it displaces
  uint32_t settle_intervals = 2;  // a peer that moved stays put this long
  uint32_t idle_intervals = 8;    // a member that sent nothing this long leaves
  uint32_t max_moves = 16;        // moves per interval, at most
};

// What was sent to one peer in the interval.
struct PeerTraffic {
  PeerId peer = 0;
  uint64_t bytes = 0;
  uint64_t puts = 0;
};

struct RcPoolMove {
  PeerId peer = 0;
  bool to_rc = false;  // false: to UD
  bool operator==(const RcPoolMove& o) const { return peer == o.peer && to_rc == o.to_rc; }
};

class RcPoolPlan {
 public:
  explicit RcPoolPlan(RcPoolOptions options);

  // Peers start on UD (or on RC with an unlimited pool, today's transport); a peer removed (its
  // node gone) frees its place.
  void AddPeer(PeerId peer);
  void RemovePeer(PeerId peer);
  // Where the peer is now, as the transport has it (added if new): a move the plan asked for
  // may not have happened (the other end refused, or is still moving), and the other end may
  // have moved the pair itself. A peer found elsewhere than planned counts as just moved.
  void Place(PeerId peer, bool rc);

  // The interval's traffic (peers not named sent nothing); the moves to make, demotions first
  // so that a promotion never finds the pool over capacity. Applied at once to what InRc says.
  std::vector<RcPoolMove> EndInterval(const std::vector<PeerTraffic>& traffic);

  bool InRc(PeerId peer) const;
  uint32_t rc_peers() const { return rc_peers_; }
  uint64_t promotions() const { return promotions_; }
  uint64_t demotions() const { return demotions_; }
  // The smoothed cost the plan weighs a peer by: datagrams per interval on UD.
  double Cost(PeerId peer) const;

 private:
  struct PeerState {
    bool rc = false;
    double cost = 0;
    uint32_t since_move = 0;  // intervals since it last moved
    uint32_t idle = 0;        // intervals in a row with nothing sent
  };
  void Move(PeerId peer, PeerState& s, bool to_rc, std::vector<RcPoolMove>* moves);

  RcPoolOptions options_;
  std::map<PeerId, PeerState> peers_;
  uint32_t rc_peers_ = 0;
  uint64_t promotions_ = 0;
  uint64_t demotions_ = 0;
};

}  // namespace ohio
