// A peer's move between RC and UD as a state machine (daemon/transport/verbs/pool/peer_move.h):
// the starter drains, awaits the answer over every rail, and finishes or is refused; the other
// end answers and holds its line until the starter's first op on the new service; both
// starting at once is settled by name; a move of the peer's while answering one, or a notice on
// the wrong service, loses the peer; only the waiting phases time out.
#include <gtest/gtest.h>

#include <chrono>

#include "daemon/transport/verbs/pool/peer_move.h"

namespace ohio {
namespace {

using Phase = PeerMove::Phase;
using std::chrono::milliseconds;

const PeerMove::Clock::time_point kT0{};
constexpr milliseconds kGiveUp{8000};

MoveNoticeKind Notice(bool to_rc) { return {to_rc, /*reply=*/false, /*refused=*/false}; }
MoveNoticeKind Reply(bool to_rc, bool refused = false) { return {to_rc, /*reply=*/true, refused}; }

// The step a notice takes, and whether the move of ours had to be abandoned for it.
struct Taken {
  MoveStep step;
  bool abandon_ours;
};
Taken Take(PeerMove& m, const MoveNoticeKind& n, bool ud_service, size_t rails, bool we_go_first = true) {
  bool abandon = true;  // OnNotice must say, whatever it held before
  const MoveStep step = m.OnNotice(n, ud_service, rails, we_go_first, &abandon);
  return {step, abandon};
}

TEST(PeerMove, NoMoveHoldsNothingAndNeverTimesOut) {
  PeerMove m;
  EXPECT_FALSE(m.moving());
  EXPECT_FALSE(m.HoldsLine());
  EXPECT_FALSE(m.ReadyToNotify(true));
  EXPECT_FALSE(m.TimedOut(kT0 + milliseconds(1000000), kGiveUp));
  EXPECT_TRUE(m.MayWriteOverRc(/*ud_service=*/false));
  EXPECT_FALSE(m.MayWriteOverRc(/*ud_service=*/true));
}

TEST(PeerMove, StarterToRcDrainsThenAwaitsTheAnswerOfEveryRail) {
  PeerMove m;
  m.Start(/*to_rc=*/true, kT0);
  EXPECT_EQ(m.phase(), Phase::kDraining);
  EXPECT_TRUE(m.HoldsLine());
  EXPECT_FALSE(m.ReadyToNotify(/*drained=*/false));
  EXPECT_TRUE(m.ReadyToNotify(/*drained=*/true));
  // Draining has no deadline: it waits for what is in flight.
  EXPECT_FALSE(m.TimedOut(kT0 + kGiveUp * 2, kGiveUp));

  m.NoticePosted(kT0 + milliseconds(5));
  EXPECT_EQ(m.phase(), Phase::kAwaitingReply);
  EXPECT_FALSE(m.ReadyToNotify(true));
  // The move to RC goes over UD: one answer is all there is.
  EXPECT_EQ(Take(m, Reply(true), /*ud_service=*/true, 1).step, MoveStep::kFinish);
}

TEST(PeerMove, StarterToUdWaitsForTheAnswerOnEveryRailBeforeFinishing) {
  PeerMove m;
  m.Start(/*to_rc=*/false, kT0);
  m.set_first_sent(77);
  m.NoticePosted(kT0);
  EXPECT_EQ(m.first_sent(), 77u);
  EXPECT_EQ(Take(m, Reply(false), /*ud_service=*/false, 3).step, MoveStep::kWait);
  EXPECT_EQ(Take(m, Reply(false), false, 3).step, MoveStep::kWait);
  const Taken last = Take(m, Reply(false), false, 3);
  EXPECT_EQ(last.step, MoveStep::kFinish);
  EXPECT_FALSE(last.abandon_ours);
}

TEST(PeerMove, ARefusedMoveToRcIsToldOnceTheAnswerIsIn) {
  PeerMove m;
  m.Start(/*to_rc=*/true, kT0);
  m.NoticePosted(kT0);
  EXPECT_EQ(Take(m, Reply(true, /*refused=*/true), /*ud_service=*/true, 1).step, MoveStep::kRefused);
}

TEST(PeerMove, AnAnswerToNoMoveOfOursIsIgnored) {
  PeerMove none;
  EXPECT_EQ(Take(none, Reply(true), /*ud_service=*/true, 1).step, MoveStep::kWait);
  // Still draining: our notice has not gone, so no answer can be to it.
  PeerMove draining;
  draining.Start(/*to_rc=*/true, kT0);
  EXPECT_EQ(Take(draining, Reply(true), true, 1).step, MoveStep::kWait);
  EXPECT_EQ(draining.phase(), Phase::kDraining);
}

TEST(PeerMove, ANoticeOnTheWrongServiceLosesThePeer) {
  PeerMove m;
  // A move to RC must come over UD, a move to UD over RC.
  EXPECT_EQ(Take(m, Notice(/*to_rc=*/true), /*ud_service=*/false, 2).step, MoveStep::kWrongService);
  EXPECT_EQ(Take(m, Notice(/*to_rc=*/false), /*ud_service=*/true, 1).step, MoveStep::kWrongService);
  EXPECT_EQ(Take(m, Reply(/*to_rc=*/false), /*ud_service=*/true, 1).step, MoveStep::kWrongService);
}

TEST(PeerMove, TheOtherEndAnswersOnceEveryRailsNoticeIsIn) {
  PeerMove m;
  EXPECT_EQ(Take(m, Notice(false), /*ud_service=*/false, 2).step, MoveStep::kWait);
  const Taken second = Take(m, Notice(false), false, 2);
  EXPECT_EQ(second.step, MoveStep::kAnswer);
  EXPECT_FALSE(second.abandon_ours);

  m.Answer(/*to_rc=*/false, kT0);
  EXPECT_EQ(m.phase(), Phase::kReplying);
  // Its answer still has to go on the old service: the line is not held for it.
  EXPECT_FALSE(m.HoldsLine());
  // Answered a move to UD: the peer wrote its last over RC.
  EXPECT_FALSE(m.MayWriteOverRc(/*ud_service=*/false));

  m.NoticePosted(kT0 + milliseconds(1));
  EXPECT_EQ(m.phase(), Phase::kAwaitingFirst);
  EXPECT_TRUE(m.HoldsLine());
  EXPECT_TRUE(m.FirstOnNewService(/*rc=*/false));
  EXPECT_FALSE(m.FirstOnNewService(/*rc=*/true));
  EXPECT_FALSE(m.MayWriteOverRc(false));
}

TEST(PeerMove, AnsweringAMoveToRcLeavesThePeerWritingOverRc) {
  PeerMove m;
  m.Answer(/*to_rc=*/true, kT0);
  m.NoticePosted(kT0);
  EXPECT_TRUE(m.FirstOnNewService(/*rc=*/true));
  EXPECT_TRUE(m.MayWriteOverRc(/*ud_service=*/false));
}

TEST(PeerMove, BothStartingAtOnceTheNameThatSortsFirstGoesOn) {
  PeerMove first;
  first.Start(/*to_rc=*/true, kT0);
  first.NoticePosted(kT0);
  EXPECT_EQ(Take(first, Notice(true), /*ud_service=*/true, 1, /*we_go_first=*/true).step, MoveStep::kKeepOurs);
  EXPECT_EQ(first.phase(), Phase::kAwaitingReply);

  PeerMove second;
  second.Start(/*to_rc=*/true, kT0);
  second.NoticePosted(kT0);
  const Taken t = Take(second, Notice(true), true, 1, /*we_go_first=*/false);
  EXPECT_EQ(t.step, MoveStep::kAnswer);
  EXPECT_TRUE(t.abandon_ours);
}

TEST(PeerMove, AMoveStillDrainingGivesWayToThePeers) {
  PeerMove m;
  m.Start(/*to_rc=*/false, kT0);
  const Taken t = Take(m, Notice(false), /*ud_service=*/false, 1, /*we_go_first=*/true);
  EXPECT_EQ(t.step, MoveStep::kAnswer);
  EXPECT_TRUE(t.abandon_ours);
}

TEST(PeerMove, AMoveOfThePeersWhileAnsweringOneLosesIt) {
  for (bool posted : {false, true}) {
    PeerMove m;
    m.Answer(/*to_rc=*/true, kT0);
    if (posted) m.NoticePosted(kT0);
    EXPECT_EQ(Take(m, Notice(true), /*ud_service=*/true, 1).step, MoveStep::kConflict) << posted;
  }
}

TEST(PeerMove, OnlyTheWaitingPhasesTimeOutCountedFromTheNoticePosted) {
  PeerMove m;
  m.Start(/*to_rc=*/true, kT0);
  const auto posted = kT0 + milliseconds(3000);
  m.NoticePosted(posted);
  EXPECT_FALSE(m.TimedOut(posted + kGiveUp, kGiveUp));
  EXPECT_TRUE(m.TimedOut(posted + kGiveUp + milliseconds(1), kGiveUp));

  PeerMove answering;
  answering.Answer(/*to_rc=*/false, kT0);
  EXPECT_FALSE(answering.TimedOut(kT0 + kGiveUp * 3, kGiveUp));  // its answer is not posted yet
  answering.NoticePosted(kT0);
  EXPECT_TRUE(answering.TimedOut(kT0 + kGiveUp * 3, kGiveUp));
}

TEST(PeerMove, ResetIsNoMoveAndForgetsTheCounts) {
  PeerMove m;
  m.Start(/*to_rc=*/false, kT0);
  m.NoticePosted(kT0);
  EXPECT_EQ(Take(m, Reply(false), /*ud_service=*/false, 2).step, MoveStep::kWait);
  m.Reset();
  EXPECT_FALSE(m.moving());
  // A new move counts its answers afresh: the one before does not count towards it.
  m.Start(/*to_rc=*/false, kT0);
  m.NoticePosted(kT0);
  EXPECT_EQ(Take(m, Reply(false), false, 2).step, MoveStep::kWait);
  EXPECT_EQ(Take(m, Reply(false), false, 2).step, MoveStep::kFinish);
}

}  // namespace
}  // namespace ohio
