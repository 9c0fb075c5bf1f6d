// How a decoded MUNGE credential is judged (daemon/peers/peer_auth.h): each munged error and each
// mismatch gives its own refusal reason, so that an admin reading a counter or a log line
// knows whether to look for an intruder, a replay, a clock or a misconfigured node.
#include <munge.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/version.h"
#include "daemon/peers/peer_auth.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;

DecodeOutcome Decoded(int error, uid_t uid, const std::string& payload) {
  DecodeOutcome d;
  d.munge_error = error;
  d.munge_message = error == EMUNGE_SUCCESS ? "" : munge_strerror(static_cast<munge_err_t>(error));
  d.uid = uid;
  d.payload = payload;
  return d;
}

TEST(JudgeCredential, PayloadNamesProtocolPurposeAndNode) {
  EXPECT_EQ(CredentialPayload("OpenGroup", "n3"), "ohio-peer/" + std::to_string(kPeerProtocolVersion) + " OpenGroup for n3");
  EXPECT_EQ(CredentialPayload(kDataPurpose, "n0"), "ohio-peer/" + std::to_string(kPeerProtocolVersion) + " data for n0");
}

TEST(JudgeCredential, GoodCredentialPasses) {
  const std::string p = CredentialPayload("Hello", "n0");
  const AuthVerdict v = JudgeCredential(Decoded(EMUNGE_SUCCESS, 0, p), 0, p);
  EXPECT_TRUE(v.ok) << v.message;
}

TEST(JudgeCredential, EveryReasonIsItsOwn) {
  const std::string p = CredentialPayload("Hello", "n0");
  struct Case {
    int error;
    uid_t uid;
    std::string payload;
    AuthRefusal want;
    std::string message;
  };
  const Case cases[] = {
      {EMUNGE_CRED_INVALID, 0, p, AuthRefusal::kForeign, "munge credential foreign: not made with this cluster's munge key"},
      {EMUNGE_CRED_EXPIRED, 0, p, AuthRefusal::kExpired, "munge credential expired: outside its time to live"},
      {EMUNGE_CRED_REWOUND, 0, p, AuthRefusal::kExpired, "are the nodes' clocks in step?"},
      {EMUNGE_CRED_REPLAYED, 0, p, AuthRefusal::kReplayed, "munge credential replayed: this node's munged has decoded it before"},
      {EMUNGE_CRED_UNAUTHORIZED, 0, p, AuthRefusal::kWrongUid, "munge credential wrong_uid"},
      {EMUNGE_BAD_CRED, 0, "", AuthRefusal::kMalformed, "munge credential malformed"},
      {EMUNGE_BAD_MAC, 0, "", AuthRefusal::kMalformed, "munge credential malformed"},
      {EMUNGE_SOCKET, 0, "", AuthRefusal::kMungedError, "munge credential munged_error: this node's munged could not decode it"},
      {EMUNGE_TIMEOUT, 0, "", AuthRefusal::kMungedError, "munge credential munged_error"},
      {EMUNGE_SUCCESS, 1000, p, AuthRefusal::kWrongUid, "munge credential wrong_uid: made by uid 1000, ohiod runs as uid 0"},
      {EMUNGE_SUCCESS, 0, CredentialPayload("Hello", "n1"), AuthRefusal::kWrongPurpose,
       "munge credential wrong_purpose: minted as '" + CredentialPayload("Hello", "n1") + "', shown here as '" + p + "'"},
      {EMUNGE_SUCCESS, 0, CredentialPayload("OpenGroup", "n0"), AuthRefusal::kWrongPurpose,
       "munge credential wrong_purpose"},
  };
  for (const Case& c : cases) {
    const AuthVerdict v = JudgeCredential(Decoded(c.error, c.uid, c.payload), 0, p);
    EXPECT_FALSE(v.ok) << c.message;
    EXPECT_EQ(v.refusal, c.want) << v.message;
    EXPECT_THAT(v.message, HasSubstr(c.message));
  }
  // A decode error wins over what the payload says: a replayed credential is "replayed" even
  // though its payload is right, a foreign one "foreign" whatever its payload.
  EXPECT_EQ(JudgeCredential(Decoded(EMUNGE_CRED_INVALID, 1000, "x"), 0, p).refusal, AuthRefusal::kForeign);
}

TEST(JudgeCredential, ReasonNamesAreTheCounterLabels) {
  const char* want[] = {"missing", "malformed", "foreign", "expired", "replayed", "wrong_uid", "wrong_purpose",
                        "munged_error"};
  for (size_t r = 0; r < kAuthRefusals; ++r) EXPECT_STREQ(AuthRefusalName(static_cast<AuthRefusal>(r)), want[r]);
  EXPECT_STREQ(AuthChannelName(AuthChannel::kPeerCall), "peer_call");
  EXPECT_STREQ(AuthChannelName(AuthChannel::kData), "data");
}

// auth = none mints nothing and lets everything in; no munged is asked.
TEST(PeerAuth, NoneNeedsNoMunged) {
  auto auth = PeerAuth::Start("none", "/nonexistent/munge.sock", "n0");
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  EXPECT_FALSE(auth.value()->enabled());
  EXPECT_STREQ(auth.value()->mode(), "none");
  auto cred = auth.value()->Mint("Hello", "n1");
  ASSERT_TRUE(cred.ok());
  EXPECT_EQ(cred.value(), "");
  EXPECT_TRUE(auth.value()->Check(AuthChannel::kData, kDataPurpose, "", "anyone").ok());
}

// munged not answering (its backlog full when many daemons call at once) is no verdict on a
// credential: asked again, not refused; a credential munged did judge is refused.
TEST(MungedBusy, OnlyAnUnansweredRequestIsWorthAskingAgain) {
  EXPECT_TRUE(MungedBusy(EMUNGE_SOCKET));
  EXPECT_TRUE(MungedBusy(EMUNGE_TIMEOUT));
  for (munge_err_t judged : {EMUNGE_SUCCESS, EMUNGE_CRED_INVALID, EMUNGE_CRED_EXPIRED, EMUNGE_CRED_REPLAYED,
                             EMUNGE_CRED_UNAUTHORIZED, EMUNGE_BAD_MAC, EMUNGE_SNAFU}) {
    EXPECT_FALSE(MungedBusy(judged)) << judged;
  }
}

TEST(PeerAuth, MungeWithoutMungedRefusesToStart) {
  auto auth = PeerAuth::Start("munge", "/nonexistent/munge.sock", "n0");
  ASSERT_FALSE(auth.ok());
  EXPECT_EQ(auth.status().message(), "no munged at /nonexistent/munge.sock: start munge or set auth = none");
}

}  // namespace
}  // namespace ohio
