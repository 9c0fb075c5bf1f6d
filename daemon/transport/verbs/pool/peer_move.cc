#include "daemon/transport/verbs/pool/peer_move.h"

namespace ohio {

void PeerMove::Start(bool to_rc, Clock::time_point now) {
  Reset();
  phase_ = Phase::kDraining;
  to_rc_ = to_rc;
  since_ = now;
}

void PeerMove::Answer(bool to_rc, Clock::time_point now) {
  Reset();
  phase_ = Phase::kReplying;
  to_rc_ = to_rc;
  since_ = now;
}

void PeerMove::NoticePosted(Clock::time_point now) {
  since_ = now;
  if (phase_ == Phase::kDraining) phase_ = Phase::kAwaitingReply;
  if (phase_ == Phase::kReplying) phase_ = Phase::kAwaitingFirst;
}

bool PeerMove::TimedOut(Clock::time_point now, std::chrono::milliseconds give_up_after) const {
  return (phase_ == Phase::kAwaitingReply || phase_ == Phase::kAwaitingFirst) && now - since_ > give_up_after;
}

bool PeerMove::MayWriteOverRc(bool ud_service) const {
  const bool answered_to_ud = !to_rc_ && (phase_ == Phase::kReplying || phase_ == Phase::kAwaitingFirst);
  return !ud_service && !answered_to_ud;
}

MoveStep PeerMove::OnNotice(const MoveNoticeKind& notice, bool ud_service, size_t expected, bool we_go_first,
                            bool* abandon_ours) {
  *abandon_ours = false;
  // A move to RC comes over UD, a move to UD over RC.
  if (notice.to_rc != ud_service) return MoveStep::kWrongService;
  if (notice.reply) {
    // Over RC, the answer of every rail, so that whatever each rail carried before it is in.
    if (phase_ != Phase::kAwaitingReply || ++replies_in_ < expected) return MoveStep::kWait;
    return notice.refused ? MoveStep::kRefused : MoveStep::kFinish;
  }
  if (++notices_in_ < expected) return MoveStep::kWait;
  notices_in_ = 0;
  if (phase_ == Phase::kAwaitingReply) {
    if (we_go_first) return MoveStep::kKeepOurs;
    *abandon_ours = true;
  } else if (phase_ == Phase::kDraining) {
    *abandon_ours = true;
  } else if (moving()) {
    return MoveStep::kConflict;
  }
  return MoveStep::kAnswer;
}

}  // namespace ohio
