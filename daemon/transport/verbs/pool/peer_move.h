// One peer's move between the verbs transport's two services (an RC queue pair of the pool, or
// the rail's shared UD queue pair), as a state machine: where the handshake stands, and what a
// notice that arrives asks for. Pure: it decides, and the transport does (move_driver.h makes
// and drops queue pairs, posts the notices, loses the peer). Unit tested without a device.
//
// The node that starts a move (Start) holds its line until nothing of its is in flight on the
// old service (kDraining), posts its notice there and waits for the answer (kAwaitingReply). The
// other end answers on the old service (kReplying until its answer is posted), then holds its
// line until the first thing the starter sends on the new service arrives (kAwaitingFirst). Over
// RC a notice comes on every rail: a step is taken once the notice of every rail is in.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ohio {

// What to do with a move notice (move_notice.h) that arrived, as PeerMove::OnNotice decides.
enum class MoveStep {
  kWait,              // more rails' notices to come, or an answer to no move of ours: nothing yet
  kWrongService,      // it does not fit the service it came on: the peer is lost
  kConflict,          // a move of the peer's while this node answers one of its: the peer is lost
  kRefused,           // the answer to our move to RC is no (its pool is full): ours is abandoned
  kFinish,            // the answer to our move is in: switch to the new service
  kKeepOurs,          // both started the move at once and ours goes on: the peer answers ours
  kAnswer,            // the peer's move, answered (any move of ours abandoned first: abandon_ours)
};

// A notice as far as the state machine reads it.
struct MoveNoticeKind {
  bool to_rc = false;
  bool reply = false;
  bool refused = false;
};

class PeerMove {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kNone, kDraining, kAwaitingReply, kReplying, kAwaitingFirst };

  Phase phase() const { return phase_; }
  bool moving() const { return phase_ != Phase::kNone; }
  bool to_rc() const { return to_rc_; }
  // To UD, as the starter: where our new datagram stream starts (its notice says so).
  uint32_t first_sent() const { return first_sent_; }
  void set_first_sent(uint32_t psn) { first_sent_ = psn; }

  // This node starts a move: it drains the old service before its notice goes.
  void Start(bool to_rc, Clock::time_point now);
  // This node answers the peer's move (its answer is posted next).
  void Answer(bool to_rc, Clock::time_point now);
  // Our last notice on the old service is posted: the starter awaits the answer, the other end
  // the starter's first op on the new service.
  void NoticePosted(Clock::time_point now);
  // The move finished or was abandoned: no move.
  void Reset() { *this = PeerMove{}; }

  // Our notice may go: the move is draining and nothing of ours is in flight (`drained`).
  bool ReadyToNotify(bool drained) const { return phase_ == Phase::kDraining && drained; }
  // The peer has not done its part of the handshake within `give_up_after`: it is lost.
  bool TimedOut(Clock::time_point now, std::chrono::milliseconds give_up_after) const;
  // Our line waits for the new service: everything but the answer we still have to post.
  bool HoldsLine() const { return moving() && phase_ != Phase::kReplying; }
  // Something from the starter arrived on service `rc` (RC, else UD): it ends our move there.
  bool FirstOnNewService(bool rc) const { return phase_ == Phase::kAwaitingFirst && to_rc_ == rc; }
  // Whether the peer may still RDMA-write into our regions: it is on RC (`ud_service` false)
  // and not past its last RC op of a move to UD (its notice, which this node has answered).
  bool MayWriteOverRc(bool ud_service) const;

  // A notice arrived on the service the peer is on now (`ud_service`), which carries one on
  // each of `expected` rails (1 over UD); `we_go_first`: this node's name sorts before the
  // peer's, so its move wins when both start one at once. The counts of notices and answers
  // are kept here; kAnswer sets `abandon_ours` when a move of ours must be abandoned first.
  MoveStep OnNotice(const MoveNoticeKind& notice, bool ud_service, size_t expected, bool we_go_first,
                    bool* abandon_ours);

 private:
  Phase phase_ = Phase::kNone;
  bool to_rc_ = false;
  uint32_t first_sent_ = 0;
  size_t notices_in_ = 0;
  size_t replies_in_ = 0;
  Clock::time_point since_;
};

}  // namespace ohio
