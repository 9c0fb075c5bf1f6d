#include "daemon/peers/peer_auth.h"

#include <munge.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "common/version.h"

namespace ohio {
namespace {

// A context per call: libmunge contexts are not to be shared between threads, and a call is
// a round trip to munged anyway.
struct MungeContext {
  explicit MungeContext(const std::string& socket) : ctx(munge_ctx_create()) {
    if (ctx != nullptr) munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket.c_str());
  }
  ~MungeContext() {
    if (ctx != nullptr) munge_ctx_destroy(ctx);
  }
  munge_ctx_t ctx;
};

// Requests of one daemon at its munged at the same time. munged serves them with a few threads
// from a listen backlog; 32 emulated nodes' daemons, each calling its 31 peers side by side,
// filled it ("Failed to connect ...: Resource temporarily unavailable").
constexpr int kMungedRequestsAtOnce = 4;

AuthVerdict Refuse(AuthRefusal r, const std::string& why) {
  return AuthVerdict{false, r, std::string("munge credential ") + AuthRefusalName(r) + ": " + why};
}

}  // namespace

// Holds one of the daemon's kMungedRequestsAtOnce places at munged for its lifetime, if it got
// one before `answer_by` (held()). A request whose caller has given up is not made: at 32
// emulated nodes sharing one munged, checks of peer calls whose callers had timed out (1 s)
// still queued here and were made one after another, every retry adding one more, and a node
// stopped answering any call in time for the 30 s of a group's setup.
class MungedSlot {
 public:
  MungedSlot(const PeerAuth& auth, PeerAuth::Clock::time_point answer_by) : auth_(auth) {
    std::unique_lock<std::mutex> lock(auth_.munged_mu_);
    auto free = [&] { return auth_.munged_requests_ < kMungedRequestsAtOnce; };
    if (answer_by == PeerAuth::Clock::time_point::max()) {
      auth_.munged_cv_.wait(lock, free);
    } else if (!auth_.munged_cv_.wait_until(lock, answer_by, free) || PeerAuth::Clock::now() >= answer_by) {
      return;
    }
    ++auth_.munged_requests_;
    held_ = true;
  }
  ~MungedSlot() {
    if (!held_) return;
    {
      std::lock_guard<std::mutex> lock(auth_.munged_mu_);
      --auth_.munged_requests_;
    }
    auth_.munged_cv_.notify_one();
  }
  bool held() const { return held_; }

 private:
  const PeerAuth& auth_;
  bool held_ = false;
};

constexpr char kGaveUp[] = "the caller gave up before munged could be asked";

bool MungedBusy(int munge_error) { return munge_error == EMUNGE_SOCKET || munge_error == EMUNGE_TIMEOUT; }

const char* AuthRefusalName(AuthRefusal r) {
  switch (r) {
    case AuthRefusal::kMissing: return "missing";
    case AuthRefusal::kMalformed: return "malformed";
    case AuthRefusal::kForeign: return "foreign";
    case AuthRefusal::kExpired: return "expired";
    case AuthRefusal::kReplayed: return "replayed";
    case AuthRefusal::kWrongUid: return "wrong_uid";
    case AuthRefusal::kWrongPurpose: return "wrong_purpose";
    case AuthRefusal::kMungedError: return "munged_error";
  }
  return "munged_error";
}

const char* AuthChannelName(AuthChannel c) { return c == AuthChannel::kData ? "data" : "peer_call"; }

std::string CredentialPayload(const std::string& purpose, const std::string& target_node) {
  return "ohio-peer/" + std::to_string(kPeerProtocolVersion) + " " + purpose + " for " + target_node;
}

AuthVerdict JudgeCredential(const DecodeOutcome& d, uid_t expected_uid, const std::string& expected_payload) {
  switch (d.munge_error) {
    case EMUNGE_SUCCESS: break;
    case EMUNGE_CRED_INVALID:
      return Refuse(AuthRefusal::kForeign, "not made with this cluster's munge key (" + d.munge_message + ")");
    case EMUNGE_CRED_EXPIRED:
    case EMUNGE_CRED_REWOUND:
      return Refuse(AuthRefusal::kExpired, "outside its time to live; are the nodes' clocks in step? (" +
                                               d.munge_message + ")");
    case EMUNGE_CRED_REPLAYED:
      return Refuse(AuthRefusal::kReplayed, "this node's munged has decoded it before (" + d.munge_message + ")");
    case EMUNGE_CRED_UNAUTHORIZED:
      return Refuse(AuthRefusal::kWrongUid, "restricted to another uid than this daemon's (" + d.munge_message + ")");
    case EMUNGE_BAD_ARG:
    case EMUNGE_BAD_LENGTH:
    case EMUNGE_BAD_CRED:
    case EMUNGE_BAD_VERSION:
    case EMUNGE_BAD_CIPHER:
    case EMUNGE_BAD_MAC:
    case EMUNGE_BAD_ZIP:
    case EMUNGE_BAD_REALM:
      return Refuse(AuthRefusal::kMalformed, d.munge_message);
    default:
      return Refuse(AuthRefusal::kMungedError, "this node's munged could not decode it (" + d.munge_message + ")");
  }
  if (d.uid != expected_uid) {
    return Refuse(AuthRefusal::kWrongUid, "made by uid " + std::to_string(d.uid) + ", ohiod runs as uid " +
                                              std::to_string(expected_uid));
  }
  if (d.payload != expected_payload) {
    return Refuse(AuthRefusal::kWrongPurpose, "minted as '" + d.payload + "', shown here as '" + expected_payload + "'");
  }
  return AuthVerdict{};
}

Result<std::unique_ptr<PeerAuth>> PeerAuth::Start(const std::string& mode, const std::string& munge_socket,
                                                  const std::string& node_name) {
  std::unique_ptr<PeerAuth> auth(new PeerAuth(mode == "munge", munge_socket, node_name, geteuid()));
  if (!auth->enabled_) return auth;
  struct stat st;
  if (stat(munge_socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Status(Code::kInvalidArgument,
                  "no munged at " + munge_socket + ": start munge or set auth = none");
  }
  // A round trip now: a munged that runs but cannot mint or decode (key, permissions) is found
  // before a peer is refused for it.
  const std::string purpose = "self-check";
  auto cred = auth->Mint(purpose, node_name);
  if (!cred.ok()) return Status(Code::kInvalidArgument, cred.status().message() + ": start munge or set auth = none");
  const AuthVerdict v = JudgeCredential(auth->Decode(cred.value()), auth->uid_, CredentialPayload(purpose, node_name));
  if (!v.ok) return Status(Code::kInvalidArgument, "munged at " + munge_socket + " fails its self-check: " + v.message);
  return auth;
}

Result<std::string> PeerAuth::Mint(const std::string& purpose, const std::string& target_node,
                                   Clock::time_point answer_by) const {
  if (!enabled_) return std::string();
  MungedSlot slot(*this, answer_by);
  if (!slot.held()) return Status(Code::kTimeout, std::string("cannot mint a munge credential: ") + kGaveUp);
  MungeContext m(socket_);
  if (m.ctx == nullptr) return Status(Code::kNoMemory, "munge_ctx_create failed");
  // Only a process of the daemons' uid can decode it: another user on the target cannot use
  // a credential captured on its way.
  munge_ctx_set(m.ctx, MUNGE_OPT_UID_RESTRICTION, uid_);
  const std::string payload = CredentialPayload(purpose, target_node);
  char* cred = nullptr;
  const munge_err_t err = munge_encode(&cred, m.ctx, payload.data(), static_cast<int>(payload.size()));
  if (err != EMUNGE_SUCCESS) {
    const char* why = munge_ctx_strerror(m.ctx);
    std::free(cred);
    return Status(MungedBusy(err) ? Code::kTimeout : Code::kRefused, "cannot mint a munge credential with munged at " + socket_ + ": " +
                                      (why != nullptr ? why : munge_strerror(err)));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

DecodeOutcome PeerAuth::Decode(const std::string& credential, Clock::time_point answer_by) const {
  DecodeOutcome d;
  MungedSlot slot(*this, answer_by);
  if (!slot.held()) {
    d.munge_error = EMUNGE_TIMEOUT;  // no verdict: MungedBusy, as when munged itself is slow
    d.munge_message = kGaveUp;
    return d;
  }
  MungeContext m(socket_);
  if (m.ctx == nullptr) {
    d.munge_error = EMUNGE_NO_MEMORY;
    d.munge_message = "munge_ctx_create failed";
    return d;
  }
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t err = munge_decode(credential.c_str(), m.ctx, &buf, &len, &uid, &gid);
  d.munge_error = err;
  if (err != EMUNGE_SUCCESS) {
    const char* why = munge_ctx_strerror(m.ctx);
    d.munge_message = why != nullptr ? why : munge_strerror(err);
  }
  d.uid = uid;
  if (buf != nullptr) {
    d.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
    std::free(buf);
  }
  return d;
}

Status PeerAuth::Check(AuthChannel channel, const std::string& purpose, const std::string& credential,
                       const std::string& from, Clock::time_point answer_by) {
  if (!enabled_) return Status::Ok();
  const DecodeOutcome decoded = credential.empty() ? DecodeOutcome{} : Decode(credential, answer_by);
  const AuthVerdict v = credential.empty()
                            ? Refuse(AuthRefusal::kMissing, "this node runs with auth = munge")
                            : JudgeCredential(decoded, uid_, CredentialPayload(purpose, node_));
  if (v.ok) return Status::Ok();
  if (!credential.empty() && MungedBusy(decoded.munge_error)) {
    return Status(Code::kTimeout, "this node's munged is busy, the credential was not checked (" +
                                      decoded.munge_message + ")");
  }
  refusals_[static_cast<size_t>(channel)][static_cast<size_t>(v.refusal)].fetch_add(1, std::memory_order_relaxed);
  uint64_t suppressed = 0;
  bool write = false;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    LogRateLimiter& log = refusal_logs_[static_cast<size_t>(channel)];
    const bool had_suppressed = log.has_suppressed();
    write = log.Allow(&suppressed);
    if (!write && !had_suppressed && on_suppressed_) on_suppressed_();
  }
  if (write) {
    spdlog::warn("refused {} {} from {}: {}{}", channel == AuthChannel::kData ? "data connection" : "peer call",
                 purpose, from, v.message, SuppressedNote(suppressed));
  }
  return Status(Code::kRefused, v.message);
}

std::optional<PeerAuth::Clock::time_point> PeerAuth::SummaryDue() const {
  std::lock_guard<std::mutex> lock(log_mu_);
  std::optional<Clock::time_point> due;
  for (const LogRateLimiter& log : refusal_logs_) {
    if (log.has_suppressed() && (!due || log.summary_due() < *due)) due = log.summary_due();
  }
  return due;
}

void PeerAuth::LogSuppressed(Clock::time_point now) {
  for (size_t ch = 0; ch < kAuthChannels; ++ch) {
    uint64_t n = 0;
    {
      std::lock_guard<std::mutex> lock(log_mu_);
      n = refusal_logs_[ch].TakeSuppressed(now);
    }
    if (n > 0) {
      spdlog::warn("{}: {} similar messages suppressed (credentials refused)",
                   static_cast<AuthChannel>(ch) == AuthChannel::kData ? "data port" : "peer port", n);
    }
  }
}

}  // namespace ohio
