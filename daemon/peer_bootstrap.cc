#include "daemon/peer_bootstrap.h"

#include <grpcpp/grpcpp.h>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/version.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {
namespace {

constexpr std::chrono::milliseconds kCallDeadline{1000};
// Telling a node that a group failed here is best effort (the node has its own timeout), and
// must not hold up the setup of the next group: when every node of 32 timed out a group's setup
// at once, each told the other 31, one call at a time with a second's deadline each, and the
// next job's setup calls waited behind them until that job failed too.
constexpr std::chrono::milliseconds kTellDeadline{250};
constexpr std::chrono::milliseconds kRetryPause{20};
// A node whose ranks have not joined yet is asked again after a pause that doubles up to this:
// every daemon asks its peers side by side, and at 32 namespaces asking every 20 ms (each ask
// a credential minted here and decoded there) kept peer services and munged too busy to answer
// the first job's calls within their deadline.
constexpr std::chrono::milliseconds kLongestRetryPause{320};
// A node whose side of a group is open tells the others (SideOpened) and hears of theirs the
// same way; only a node it has not heard from after this long is asked (OpenGroup) whether its
// side is open, in case that node's word was lost (a deadline passed). Asking every 100 ms
// instead was 3,000 calls per node and group at 32 emulated nodes, and kept the nodes still
// setting up from answering: groups took 28 s to open, and some failed at their 30 s.
constexpr std::chrono::milliseconds kOpenedPoll{2000};
constexpr char kDefaultPeerPort[] = "7470";

}  // namespace

struct PeerBootstrap::Channel {
  std::unique_ptr<peer::Peer::Stub> stub;
  bool greeted = false;
  std::string data_address;
  std::string last_error;
};

PeerBootstrap::PeerBootstrap(const DaemonConfig& config, const PeerAuth* auth, Transport* transport, OnPeer on_peer,
                             OnFailure on_failure)
    : config_(config), auth_(auth), transport_(transport), on_peer_(std::move(on_peer)), on_failure_(std::move(on_failure)) {
  for (const std::string& entry : config.peers) {
    auto eq = entry.find('=');
    peers_[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  thread_ = std::thread([this] { Run(); });
  caller_ = std::thread([this] { MakeCalls(); });
}

PeerBootstrap::~PeerBootstrap() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  calls_cv_.notify_all();
  thread_.join();
  // A call under way finishes first (kCallDeadline at most).
  caller_.join();
}

std::string PeerBootstrap::PeerAddress(const std::string& node) const {
  auto it = peers_.find(node);
  if (it != peers_.end()) return it->second;
  return node + ":" + kDefaultPeerPort;
}

void PeerBootstrap::Open(std::shared_ptr<Group> group) {
  auto job = std::make_shared<Job>();
  const uint32_t nodes = group->shape().nodes();
  job->done.assign(nodes, 0);
  job->asking.assign(nodes, 0);
  job->info.resize(nodes);
  job->opened.assign(nodes, 0);
  job->why.resize(nodes);
  job->done[group->spec().node] = 1;
  job->opened[group->spec().node] = 1;
  job->created = std::chrono::steady_clock::now();
  job->deadline = job->created + std::chrono::milliseconds(group->timeout_ms());
  job->group = std::move(group);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void PeerBootstrap::TellFailed(std::shared_ptr<Group> group) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_.push_back(std::move(group));
  }
  cv_.notify_all();
}

void PeerBootstrap::SideOpened(const GroupKey& key, const std::string& node) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& job : jobs_) {
      if (job->group->spec().key != key) continue;
      const std::vector<std::string>& names = job->group->spec().node_names;
      auto it = std::find(names.begin(), names.end(), node);
      if (it == names.end()) return;
      job->opened[static_cast<size_t>(it - names.begin())] = 1;
      answered_ = true;
      break;
    }
  }
  cv_.notify_all();
}

void PeerBootstrap::Queue(const std::string& node, CallKind kind, std::function<void(Channel&)> task) {
  (kind == CallKind::kAsk ? asks_ : tells_).push_back({node, std::move(task)});
  calls_cv_.notify_one();
}

PeerBootstrap::Channel& PeerBootstrap::ChannelTo(const std::string& node) {
  std::unique_ptr<Channel>& ch = channels_[node];
  if (ch) return *ch;
  ch = std::make_unique<Channel>();
  // gRPC backs a channel off after a failed connect, up to 2 minutes by default, failing every
  // call at once meanwhile: one connect that timed out while the node was busy at a cold start
  // (31 peers' hellos and credentials at once) kept a group from opening for its whole 30 s at
  // 32 namespaces. The peer is a node of this cluster: try again within a second.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  ch->stub = peer::Peer::NewStub(grpc::CreateCustomChannel(PeerAddress(node), grpc::InsecureChannelCredentials(), args));
  return *ch;
}

void PeerBootstrap::MakeCalls() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    calls_cv_.wait(lock, [&] { return stopping_ || !asks_.empty() || !tells_.empty(); });
    if (stopping_) return;
    // Tells only while no ask waits: they are best effort, and a group being set up has a
    // deadline.
    std::deque<PeerCall>& from = asks_.empty() ? tells_ : asks_;
    PeerCall call = std::move(from.front());
    from.pop_front();
    lock.unlock();
    call.task(ChannelTo(call.node));  // channels_ is this thread's alone
    lock.lock();
    answered_ = true;  // Run looks at what it changed now, not at its next pause
    cv_.notify_all();
  }
}

Status PeerBootstrap::Credential(grpc::ClientContext* ctx, const char* method, const std::string& node) const {
  // Not minted once the call has given up (a place at munged may be a wait).
  auto cred = auth_->Mint(method, node, PeerAuth::AnswerBy(ctx->deadline()));
  if (!cred.ok()) {
    // kTimeout (munged busy) stays one: the caller asks again.
    return Status(cred.status().code() == Code::kTimeout ? Code::kTimeout : Code::kRefused,
                  "cannot call node " + node + ": " + cred.status().message());
  }
  if (!cred.value().empty()) ctx->AddMetadata(kMungeMetadataKey, cred.value());
  return Status::Ok();
}

bool PeerBootstrap::TryOpen(const Job& job, uint32_t node, Channel& channel, std::optional<PeerGroupInfo>* info,
                            std::string* why) {
  const GroupSpec& spec = job.group->spec();
  const std::string& name = spec.node_names[node];
  Channel* ch = &channel;
  // A refusal is final: the other node will not change its mind on a retry.
  auto refused = [&](const grpc::Status& s) {
    on_failure_(job.group, Status(Code::kRefused, "peer " + name + " refused this node: " + s.error_message()));
    return true;
  };
  // A credential this node's munged cannot mint fails the group the same way: nothing to retry.
  // Unless munged was only busy: asked again at the next try, within the group's deadline.
  bool munged_busy = false;
  auto credential = [&](grpc::ClientContext* ctx, const char* method) {
    Status minted = Credential(ctx, method, name);
    if (minted.code() == Code::kTimeout) {
      *why = minted.message();
      munged_busy = true;
    } else if (!minted.ok()) {
      on_failure_(job.group, minted);
    }
    return minted.ok();
  };
  if (!ch->greeted) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (!credential(&ctx, "Hello")) return !munged_busy;
    peer::HelloRequest req;
    req.set_protocol_version(kPeerProtocolVersion);
    req.set_node_name(config_.node_name);
    peer::HelloReply reply;
    grpc::Status s = ch->stub->Hello(&ctx, req, &reply);
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) return refused(s);
    if (!s.ok()) {
      *why = "ohiod of node " + name + " at " + PeerAddress(name) + " does not answer: " + s.error_message();
      return false;
    }
    if (reply.protocol_version() != kPeerProtocolVersion || reply.node_name() != name) {
      on_failure_(job.group, Status(Code::kRefused, "the daemon at " + PeerAddress(name) + " is node '" +
                                                         reply.node_name() + "' speaking peer protocol " +
                                                         std::to_string(reply.protocol_version()) +
                                                         "; expected node '" + name + "' with protocol " +
                                                         std::to_string(kPeerProtocolVersion)));
      return true;
    }
    if (reply.transport() != transport_->name()) {
      on_failure_(job.group, Status(Code::kRefused, "node " + name + " uses the " + reply.transport() +
                                                         " transport, this node " + transport_->name()));
      return true;
    }
    ch->data_address = reply.data_address();
    ch->greeted = true;
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  if (!credential(&ctx, "OpenGroup")) return !munged_busy;
  peer::OpenGroupRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_from_node(config_.node_name);
  req.set_key(std::string(spec.key.begin(), spec.key.end()));
  for (const auto& n : spec.node_names) req.add_node_names(n);
  for (uint32_t r : spec.rank_node) req.add_rank_node(r);
  req.set_algorithm(AlgorithmName(spec.algorithm));
  req.set_owner_uid(job.group->owner());
  req.set_leader_digest(job.group->leader_policy().digest);
  req.set_leader_source(job.group->leader_policy().source);
  peer::OpenGroupReply reply;
  grpc::Status s = ch->stub->OpenGroup(&ctx, req, &reply);
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) return refused(s);
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    *why = "node " + name + ": " + s.error_message();
    // The daemon there may have restarted since the hello: greet it again next time.
    if (s.error_message().find("no rank") == std::string::npos) ch->greeted = false;
    return false;
  }
  if (s.error_code() == grpc::StatusCode::ABORTED) {
    on_failure_(job.group, Status(Code::kGroupFailed, s.error_message()));
    return true;
  }
  if (!s.ok()) {
    on_failure_(job.group, Status(Code::kRefused, "node " + name + " refused the group: " + s.error_message()));
    return true;
  }
  // Every time, not only after a hello: the connection may have broken since (a peer daemon
  // that restarted), and connecting an existing one is a no-op.
  transport_->Connect(transport_->PeerFor(name), ch->data_address);
  *info = PeerGroupInfo{reply.tag(),       reply.srb_key(),         reply.srb_offset(), reply.ssb_bytes(),
                        reply.srb_bytes(), reply.min_slice_bytes(), reply.opened()};
  return true;
}

void PeerBootstrap::Tell(const std::shared_ptr<Group>& group, uint32_t node, Channel& ch) {
  const std::string& name = group->spec().node_names[node];
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kTellDeadline);
  if (Status minted = Credential(&ctx, "GroupFailed", name); !minted.ok()) {
    spdlog::warn("group {}: cannot tell node {} that it failed here: {}", group->key_hex(), name, minted.message());
    return;
  }
  peer::GroupFailedRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_from_node(config_.node_name);
  req.set_key(std::string(group->spec().key.begin(), group->spec().key.end()));
  req.set_reason(group->failure());
  req.set_code(static_cast<uint32_t>(group->failure_code()));
  peer::GroupFailedReply reply;
  grpc::Status s = ch.stub->GroupFailed(&ctx, req, &reply);
  if (!s.ok()) {
    spdlog::info("group {}: could not tell node {} that it failed here: {}", group->key_hex(), name, s.error_message());
  }
}

bool PeerBootstrap::TellOpened(const Job& job, uint32_t node, Channel& ch) {
  const std::string& name = job.group->spec().node_names[node];
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  if (!Credential(&ctx, "SideOpened", name).ok()) return false;  // asked later (kOpenedPoll)
  peer::SideOpenedRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_from_node(config_.node_name);
  req.set_key(std::string(job.group->spec().key.begin(), job.group->spec().key.end()));
  peer::SideOpenedReply reply;
  const grpc::Status s = ch.stub->SideOpened(&ctx, req, &reply);
  if (!s.ok()) {
    spdlog::info("group {}: could not tell node {} that its side is open here: {}", job.group->key_hex(), name,
                 s.error_message());
  }
  return s.ok();
}

bool PeerBootstrap::Connected(const Job& job, std::string* down) const {
  const std::vector<std::string> up = transport_->connected_peers();
  for (uint32_t n = 0; n < job.info.size(); ++n) {
    const std::string& name = job.group->spec().node_names[n];
    if (!job.info[n] || std::find(up.begin(), up.end(), name) != up.end()) continue;
    *down += (down->empty() ? "" : ", ") + name;
  }
  return down->empty();
}

void PeerBootstrap::Ask(const std::shared_ptr<Job>& job) {
  const auto now = std::chrono::steady_clock::now();
  if (now < job->next_ask) return;
  // Until it answers, a node is asked again after each failed try; once this side is open, the
  // nodes whose side was not are asked again now and then.
  job->retry_pause = std::clamp(job->retry_pause * 2, kRetryPause, kLongestRetryPause);
  job->next_ask = now + (job->connected ? kOpenedPoll : job->retry_pause);
  for (uint32_t n = 0; n < job->done.size(); ++n) {
    // A node that said its side is open (SideOpened) may not have answered this node yet: it
    // answered from its peer service, not from this side's asking. Asked until it answers.
    if (job->asking[n] != 0 || (job->done[n] != 0 && (job->opened[n] != 0 || !job->connected))) continue;
    job->asking[n] = 1;
    ++job->calls;
    Queue(job->group->spec().node_names[n], CallKind::kAsk, [this, job, n](Channel& ch) {
      std::optional<PeerGroupInfo> info;
      std::string why;
      const bool answered = !job->group->failed() && TryOpen(*job, n, ch, &info, &why);
      if (!answered) {
        spdlog::debug("group {}: node {} has not answered: {}", job->group->key_hex(), job->group->spec().node_names[n],
                      why);
      }
      std::lock_guard<std::mutex> lock(mu_);
      job->asking[n] = 0;
      job->why[n] = why;
      if (!answered) return;
      if (job->done[n] == 0) job->info[n] = info;
      job->done[n] = 1;
      if (info && info->opened) job->opened[n] = 1;
    });
  }
}

bool PeerBootstrap::Check(const std::shared_ptr<Job>& shared) {
  Job& job = *shared;
  if (job.group->failed()) return false;
  const bool answered = std::all_of(job.done.begin(), job.done.end(), [](uint8_t d) { return d != 0; });
  std::string down;
  if (answered && !job.connected && Connected(job, &down)) {
    job.connected = true;
    job.connected_at = std::chrono::steady_clock::now();
    job.deadline = job.connected_at + std::chrono::milliseconds(job.group->timeout_ms());
    job.group->set_opened_here();
    // The others wait for this side: tell them, rather than have them ask until it is.
    job.next_ask = job.connected_at + kOpenedPoll;
    for (uint32_t n = 0; n < job.done.size(); ++n) {
      if (n == job.group->spec().node) continue;
      ++job.calls;
      Queue(job.group->spec().node_names[n], CallKind::kAsk, [this, shared, n](Channel& ch) { TellOpened(*shared, n, ch); });
    }
  }
  if (job.connected && std::all_of(job.opened.begin(), job.opened.end(), [](uint8_t o) { return o != 0; })) {
    for (uint32_t n = 0; n < job.info.size(); ++n) {
      if (job.info[n]) on_peer_(job.group, n, *job.info[n]);
    }
    // How long a group's setup takes across nodes, and why: the answers and connections (this
    // side), then the wait for the other sides.
    auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
    spdlog::info("group {}: open on its {} nodes {} ms after its creation here (this side {} ms; {} peer calls)",
                 job.group->key_hex(), job.info.size(), ms(std::chrono::steady_clock::now() - job.created),
                 ms(job.connected_at - job.created), job.calls);
    return false;
  }
  if (std::chrono::steady_clock::now() <= job.deadline) return true;
  const std::string within = " within " + std::to_string(job.group->timeout_ms()) + " ms";
  if (job.connected) {
    // Not expected: a node that cannot open its side fails the group within its own timeout and
    // tells this one, and a daemon that dies drops its data connection. This bounds the rest (a
    // hung daemon, a tell that was lost).
    std::string late;
    for (uint32_t n = 0; n < job.opened.size(); ++n) {
      if (job.opened[n] == 0) late += (late.empty() ? "" : ", ") + job.group->spec().node_names[n];
    }
    on_failure_(job.group, Status(Code::kTimeout, "node(s) " + late + " did not set the group up on their side" +
                                                      within + " of this node (" + config_.node_name + ")"));
  } else if (!answered) {
    std::string waiting;
    for (uint32_t n = 0; n < job.done.size(); ++n) {
      if (job.done[n] == 0) waiting = job.why[n];
    }
    on_failure_(job.group,
                Status(Code::kTimeout, "the group's other nodes did not all open it" + within + " (" + waiting + ")"));
  } else {
    on_failure_(job.group, Status(Code::kTimeout, "the data connection to node(s) " + down + " never came up" + within +
                                                      " of the group's creation"));
  }
  return false;
}

void PeerBootstrap::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (jobs_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty() || !failed_.empty(); });
    } else {
      cv_.wait_for(lock, kRetryPause, [this] { return stopping_ || !failed_.empty() || answered_; });
    }
    if (stopping_) return;
    answered_ = false;
    for (const auto& group : failed_) {
      for (uint32_t n = 0; n < group->shape().nodes(); ++n) {
        if (n == group->spec().node) continue;
        Queue(group->spec().node_names[n], CallKind::kTell, [this, group, n](Channel& ch) { Tell(group, n, ch); });
      }
    }
    failed_.clear();
    std::deque<std::shared_ptr<Job>> open;
    for (auto& job : jobs_) {
      if (!Check(job)) continue;
      Ask(job);
      open.push_back(std::move(job));
    }
    jobs_.swap(open);
  }
}

}  // namespace ohio
