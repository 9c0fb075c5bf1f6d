// Who may talk to this daemon as a peer: with auth = munge, every peer call and every data
// connection carries a MUNGE credential minted by the caller's munged and decoded by this
// node's. A credential is good only if this cluster's key made it (foreign keys fail the MAC),
// it is fresh and decoded for the first time (munged keeps a replay cache), a process of the
// daemons' uid made it, and its payload names the purpose it is shown for and this node, so
// one minted for another call or another node is refused. With auth = none everything passes.
//
// Minting and decoding are round trips to the local munged over its unix socket: they happen
// once per peer call and once per data connection, never per frame.
//
// A refusal's line is rate-limited per channel (a flood of bad credentials would otherwise write
// a line each); the lines left out are told of by the next one written, or by LogSuppressed,
// which whoever keeps the daemon's refusal summaries calls once SummaryDue comes.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/log_rate_limiter.h"
#include "common/status.h"

namespace ohio {

// Why a credential was refused: the fixed label set of the refusal counters.
enum class AuthRefusal {
  kMissing,        // no credential at all
  kMalformed,      // not a credential munged can parse
  kForeign,        // made with another key (another cluster, or tampered with)
  kExpired,        // older than its time to live (or the clocks disagree)
  kReplayed,       // decoded before: someone sends a captured credential again
  kWrongUid,       // made by a process of another uid than this cluster's daemons
  kWrongPurpose,   // minted for another call or another node
  kMungedError,    // this node's munged could not judge it (down, overloaded)
};
constexpr size_t kAuthRefusals = 8;
const char* AuthRefusalName(AuthRefusal r);

// Where a credential was shown.
enum class AuthChannel { kPeerCall, kData };
constexpr size_t kAuthChannels = 2;
const char* AuthChannelName(AuthChannel c);

// The gRPC metadata key carrying a peer call's credential.
constexpr char kMungeMetadataKey[] = "ohio-munge-credential";
// The purpose of a data connection's credential; peer calls use their method name.
constexpr char kDataPurpose[] = "data";

// What a credential's payload says: this protocol, the purpose, the node it is meant for.
std::string CredentialPayload(const std::string& purpose, const std::string& target_node);

// A decoded credential judged against what this node expects (pure: the decode is done).
struct DecodeOutcome {
  int munge_error = 0;  // munge_err_t, 0 = EMUNGE_SUCCESS
  std::string munge_message;
  uid_t uid = 0;
  std::string payload;
};
struct AuthVerdict {
  bool ok = true;
  AuthRefusal refusal = AuthRefusal::kMissing;
  std::string message;  // "munge credential <reason>: <why>"
};
AuthVerdict JudgeCredential(const DecodeOutcome& decoded, uid_t expected_uid, const std::string& expected_payload);

// Whether munged failed to answer rather than judged: its socket refused or dropped the
// connection (its backlog full when 32 daemons call side by side) or it timed out. Such a
// request is worth asking again; it says nothing about the credential.
bool MungedBusy(int munge_error);

class PeerAuth {
 public:
  // mode "none": passes everything. "munge": asks munged at `munge_socket` for a
  // credential and decodes it, so a missing munged or an unreadable key is found at start
  // ("no munged at <socket>: start munge or set auth = none"), not at the first peer's call.
  static Result<std::unique_ptr<PeerAuth>> Start(const std::string& mode, const std::string& munge_socket,
                                                 const std::string& node_name);

  bool enabled() const { return enabled_; }
  const char* mode() const { return enabled_ ? "munge" : "none"; }
  const std::string& socket() const { return socket_; }

  using Clock = std::chrono::steady_clock;
  // A gRPC call's deadline (system clock, either side of the call) as an `answer_by` below.
  static Clock::time_point AnswerBy(std::chrono::system_clock::time_point deadline) {
    if (deadline == std::chrono::system_clock::time_point::max()) return Clock::time_point::max();
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - std::chrono::system_clock::now());
  }

  // A credential for calling `target_node` for `purpose`; "" with auth = none. kTimeout when
  // munged was busy (MungedBusy: ask again), kRefused when it cannot mint one. `answer_by`:
  // when the call it is for gives up; a request still waiting then for a place at munged
  // (kMungedRequestsAtOnce) is not made, kTimeout.
  Result<std::string> Mint(const std::string& purpose, const std::string& target_node,
                           Clock::time_point answer_by = Clock::time_point::max()) const;
  // Ok, or kRefused with the verdict's message; a refusal is logged and counted. kTimeout when
  // this node's munged was busy, or when `answer_by` (the caller's deadline) passed before
  // munged could be asked: no verdict, not counted, the credential left unused; the caller may
  // try again.
  Status Check(AuthChannel channel, const std::string& purpose, const std::string& credential, const std::string& from,
               Clock::time_point answer_by = Clock::time_point::max());

  uint64_t refusals(AuthChannel channel, AuthRefusal reason) const {
    return refusals_[static_cast<size_t>(channel)][static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }

  // Called, on the refusing thread, when a refusal's line is the first of its window left out:
  // the summaries' keeper wakes to write them at SummaryDue. Quick (it runs under a lock); null
  // to stop.
  void set_on_suppressed(std::function<void()> wake) {
    std::lock_guard<std::mutex> lock(log_mu_);
    on_suppressed_ = std::move(wake);
  }
  // When LogSuppressed has a summary to write; nullopt while no line is left out.
  std::optional<Clock::time_point> SummaryDue() const;
  // Writes "N similar messages suppressed" for each channel whose window with left-out lines is over.
  void LogSuppressed(Clock::time_point now = Clock::now());

 private:
  PeerAuth(bool enabled, std::string socket, std::string node, uid_t uid)
      : enabled_(enabled), socket_(std::move(socket)), node_(std::move(node)), uid_(uid) {}
  DecodeOutcome Decode(const std::string& credential, Clock::time_point answer_by = Clock::time_point::max()) const;

  const bool enabled_;
  const std::string socket_;
  const std::string node_;
  const uid_t uid_;  // every node's daemon runs as this uid: its own
  // At most kMungedRequestsAtOnce requests of this daemon at munged at a time (MungedSlot):
  // its threads (one per peer node, and the transports') would otherwise all call at once.
  mutable std::mutex munged_mu_;
  mutable std::condition_variable munged_cv_;
  mutable int munged_requests_ = 0;
  friend class MungedSlot;
  std::array<std::array<std::atomic<uint64_t>, kAuthRefusals>, kAuthChannels> refusals_{};
  // Refusal lines per channel: at most 5 in 10 s each.
  mutable std::mutex log_mu_;
  std::array<LogRateLimiter, kAuthChannels> refusal_logs_{
      LogRateLimiter{std::chrono::seconds(10), 5}, LogRateLimiter{std::chrono::seconds(10), 5}};
  std::function<void()> on_suppressed_;  // under log_mu_: set and reset while others refuse
};

}  // namespace ohio
