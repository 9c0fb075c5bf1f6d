#include "daemon/peers/peer_bootstrap.h"

#include <grpcpp/grpcpp.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

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
// instead made thousands of calls per node and group at 32 emulated nodes and kept the nodes
// still setting up from answering: groups took nearly their timeout to open, and some failed
// (docs/PERFORMANCE.md, "Figures behind constants in the code").
constexpr std::chrono::milliseconds kOpenedPoll{2000};
// A calling thread with no call to make this long ends (one is started again when needed).
constexpr std::chrono::milliseconds kCallerIdle{500};
// How often idle channels are looked for (peer-channel-idle-s says which are).
constexpr std::chrono::seconds kPrunePeriod{1};

}  // namespace

struct PeerBootstrap::Channel {
  std::unique_ptr<peer::Peer::Stub> stub;  // null when the node's address could not be had:
  Status unusable;                          // why (kTimeout: DNS may answer later)
  bool greeted = false;
  std::string data_address;
  std::chrono::steady_clock::time_point last_used;
};

PeerBootstrap::PeerBootstrap(const DaemonConfig& config, const PeerAuth* auth, Transport* transport, OnPeer on_peer,
                             OnFailure on_failure)
    : config_(config),
      cluster_(config),
      auth_(auth),
      transport_(transport),
      on_peer_(std::move(on_peer)),
      on_failure_(std::move(on_failure)),
      callers_count_(std::max<uint32_t>(1, config.peer_calls_at_once)),
      most_calls_per_owner_(std::max<uint32_t>(1, callers_count_ - 1)) {
  thread_ = std::thread([this] { Run(); });
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
  std::unique_lock<std::mutex> lock(mu_);
  callers_cv_.wait(lock, [this] { return callers_ == 0; });
}

void PeerBootstrap::StartCallerIfNeeded() {
  if (stopping_ || calls_.empty() || idle_callers_ > 0 || callers_ >= callers_count_) return;
  ++callers_;
  std::thread([this] { MakeCalls(); }).detach();
}

size_t PeerBootstrap::channels() const {
  std::lock_guard<std::mutex> lock(mu_);
  return channels_.size();
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
    live_groups_.push_back(job->group);
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

void PeerBootstrap::Queue(const std::string& node, CallKind kind, const Group& group,
                          std::function<void(Channel&)> task) {
  calls_.push_back({node, kind, group.owner(), &group, std::move(task)});
  StartCallerIfNeeded();
  calls_cv_.notify_one();
}

std::deque<PeerBootstrap::PeerCall>::iterator PeerBootstrap::NextCall() {
  auto count = [](const auto& map, const auto& key) -> uint64_t {
    auto it = map.find(key);
    return it == map.end() ? 0 : it->second;
  };
  // Setup calls before tells; then the user with fewest calls under way, then the one served
  // longest ago, then the group with fewest; then the oldest call.
  using Rank = std::tuple<bool, uint64_t, uint64_t, uint64_t>;
  auto best = calls_.end();
  Rank best_rank{};
  for (auto it = calls_.begin(); it != calls_.end(); ++it) {
    if (busy_nodes_.count(it->node) != 0) continue;
    const uint64_t by_owner = count(owner_calls_, it->owner);
    const uint64_t by_group = count(group_calls_, it->group);
    if (by_owner >= most_calls_per_owner_ || by_group >= most_calls_per_owner_) continue;
    const Rank rank{it->kind == CallKind::kTell, by_owner, count(owner_served_, it->owner), by_group};
    if (best == calls_.end() || rank < best_rank) {
      best = it;
      best_rank = rank;
    }
  }
  return best;
}

std::shared_ptr<PeerBootstrap::Channel> PeerBootstrap::ChannelTo(const std::string& node,
                                                                 std::unique_lock<std::mutex>& lock) {
  auto found = channels_.find(node);
  if (found != channels_.end()) return found->second;
  lock.unlock();
  auto ch = std::make_shared<Channel>();
  // Maybe a DNS lookup: not under mu_.
  Result<std::string> target = cluster_.Target(node);
  if (!target.ok()) {
    ch->unusable = target.status();
    lock.lock();
    return ch;  // not kept: looked up again at the node's next call
  }
  // gRPC backs a channel off after a failed connect, up to 2 minutes by default, failing every
  // call at once meanwhile: one connect that timed out while the node was busy at a cold start
  // (31 peers' hellos and credentials at once) kept a group from opening for its whole 30 s at
  // 32 namespaces. The peer is a node of this cluster: try again within a second.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  ch->stub = peer::Peer::NewStub(grpc::CreateCustomChannel(target.value(), grpc::InsecureChannelCredentials(), args));
  lock.lock();
  // Only this node's call makes its channel: no other can have made one meanwhile.
  channels_[node] = ch;
  return ch;
}

void PeerBootstrap::PruneChannels() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_prune_) return;
  next_prune_ = now + kPrunePeriod;
  const auto idle = std::chrono::seconds(config_.peer_channel_idle_s);
  std::set<std::string> named;
  std::vector<std::weak_ptr<Group>> still;
  for (const std::weak_ptr<Group>& weak : live_groups_) {
    const std::shared_ptr<Group> group = weak.lock();
    if (!group || group->failed()) continue;
    named.insert(group->spec().node_names.begin(), group->spec().node_names.end());
    still.push_back(weak);
  }
  live_groups_.swap(still);
  for (auto it = channels_.begin(); it != channels_.end();) {
    if (busy_nodes_.count(it->first) == 0 && named.count(it->first) == 0 && now - it->second->last_used >= idle) {
      spdlog::debug("peer channel to node {} closed: unused for {} s", it->first, config_.peer_channel_idle_s);
      it = channels_.erase(it);
    } else {
      ++it;
    }
  }
}

void PeerBootstrap::MakeCalls() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_callers_;
    const bool work = calls_cv_.wait_for(lock, kCallerIdle, [&] { return stopping_ || NextCall() != calls_.end(); });
    --idle_callers_;
    if (stopping_ || !work) {
      // Nothing after this touches the bootstrap: the destructor may go on once it is told.
      if (--callers_ == 0) callers_cv_.notify_all();
      return;
    }
    auto next = NextCall();
    if (next->kind == CallKind::kAsk && next->group->failed()) {
      // Its group is done with: no channel to make for it. (Its task holds the group: let go
      // of outside mu_.)
      std::function<void(Channel&)> dropped = std::move(next->task);
      calls_.erase(next);
      lock.unlock();
      dropped = nullptr;
      lock.lock();
      continue;
    }
    std::function<void(Channel&)> task = std::move(next->task);
    const std::string node = next->node;
    const uid_t owner = next->owner;
    const Group* group = next->group;
    calls_.erase(next);
    busy_nodes_.insert(node);
    ++owner_calls_[owner];
    ++group_calls_[group];
    owner_served_[owner] = ++calls_served_;
    std::shared_ptr<Channel> ch = ChannelTo(node, lock);
    lock.unlock();
    task(*ch);  // the node's channel is this call's alone: one call per node at a time
    task = nullptr;  // what it holds (its group) is let go of outside mu_
    lock.lock();
    ch->last_used = std::chrono::steady_clock::now();
    busy_nodes_.erase(node);
    if (--owner_calls_[owner] == 0) owner_calls_.erase(owner);
    if (--group_calls_[group] == 0) group_calls_.erase(group);
    answered_ = true;  // Run looks at what it changed now, not at its next pause
    cv_.notify_all();
    calls_cv_.notify_all();  // a node, a user's or a group's share is free again
    StartCallerIfNeeded();
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
  if (!ch->stub) {
    if (ch->unusable.code() == Code::kTimeout) {
      *why = ch->unusable.message();
      return false;
    }
    on_failure_(job.group, ch->unusable);
    return true;
  }
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
    // Such a node answers this one's calls, but refuses its own calls here (no credential):
    // said here as well as there, not left to this side's timeout.
    if (!reply.auth().empty() && reply.auth() != auth_->mode()) {
      on_failure_(job.group, Status(Code::kRefused, "node " + name + " runs with auth = " + reply.auth() +
                                                         " and this node (" + config_.node_name + ") with auth = " +
                                                         auth_->mode() + ", so one side refuses the other's calls; "
                                                         "every node of the cluster must use the same auth"));
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
  req.set_algorithm(NodeLevelDesignName(spec.design));
  req.set_owner_uid(job.group->owner());
  req.set_internode_digest(job.group->internode_policy().digest);
  req.set_internode_source(job.group->internode_policy().source);
  req.set_selection_digest(job.group->selection_policy().digest);
  req.set_selection_source(job.group->selection_policy().source);
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
  if (!ch.stub || !ch.greeted) return;  // it never answered here: nothing to hear, maybe not up
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
  if (!ch.stub) return false;
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
    Queue(job->group->spec().node_names[n], CallKind::kAsk, *job->group, [this, job, n](Channel& ch) {
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
      Queue(job.group->spec().node_names[n], CallKind::kAsk, *job.group,
            [this, shared, n](Channel& ch) { TellOpened(*shared, n, ch); });
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
    if (jobs_.empty() && channels_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty() || !failed_.empty() || answered_; });
    } else if (jobs_.empty()) {
      // Only channels to close once idle.
      cv_.wait_for(lock, kPrunePeriod, [this] { return stopping_ || !jobs_.empty() || !failed_.empty(); });
    } else {
      cv_.wait_for(lock, kRetryPause, [this] { return stopping_ || !failed_.empty() || answered_; });
    }
    if (stopping_) return;
    answered_ = false;
    for (const auto& group : failed_) {
      for (uint32_t n = 0; n < group->shape().nodes(); ++n) {
        if (n == group->spec().node) continue;
        Queue(group->spec().node_names[n], CallKind::kTell, *group,
              [this, group, n](Channel& ch) { Tell(group, n, ch); });
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
    PruneChannels();
  }
}

}  // namespace ohio
