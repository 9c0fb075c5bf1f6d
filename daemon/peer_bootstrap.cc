#include "daemon/peer_bootstrap.h"

#include <grpcpp/grpcpp.h>

#include <spdlog/spdlog.h>

#include "common/version.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {
namespace {

constexpr std::chrono::milliseconds kCallDeadline{1000};
constexpr std::chrono::milliseconds kRetryPause{20};
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
}

PeerBootstrap::~PeerBootstrap() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string PeerBootstrap::PeerAddress(const std::string& node) const {
  auto it = peers_.find(node);
  if (it != peers_.end()) return it->second;
  return node + ":" + kDefaultPeerPort;
}

void PeerBootstrap::Open(std::shared_ptr<Group> group) {
  Job job;
  job.done.assign(group->shape().nodes(), false);
  job.done[group->spec().node] = true;
  job.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(group->timeout_ms());
  job.group = std::move(group);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

bool PeerBootstrap::TryOpen(Job& job, uint32_t node) {
  const GroupSpec& spec = job.group->spec();
  const std::string& name = spec.node_names[node];
  auto& ch = channels_[name];
  if (!ch) {
    ch = std::make_shared<Channel>();
    ch->stub = peer::Peer::NewStub(grpc::CreateChannel(PeerAddress(name), grpc::InsecureChannelCredentials()));
  }
  // A refusal is final: the other node will not change its mind on a retry.
  auto refused = [&](const grpc::Status& s) {
    on_failure_(job.group, Status(Code::kRefused, "peer " + name + " refused this node: " + s.error_message()));
    return true;
  };
  // A credential this node's munged cannot mint fails the group the same way: nothing to retry.
  auto credential = [&](grpc::ClientContext* ctx, const char* method) {
    auto cred = auth_->Mint(method, name);
    if (!cred.ok()) {
      on_failure_(job.group, Status(Code::kRefused, "cannot call node " + name + ": " + cred.status().message()));
      return false;
    }
    if (!cred.value().empty()) ctx->AddMetadata(kMungeMetadataKey, cred.value());
    return true;
  };
  if (!ch->greeted) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (!credential(&ctx, "Hello")) return true;
    peer::HelloRequest req;
    req.set_protocol_version(kPeerProtocolVersion);
    req.set_node_name(config_.node_name);
    peer::HelloReply reply;
    grpc::Status s = ch->stub->Hello(&ctx, req, &reply);
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) return refused(s);
    if (!s.ok()) {
      ch->last_error = "ohiod of node " + name + " at " + PeerAddress(name) + " does not answer: " + s.error_message();
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
  if (!credential(&ctx, "OpenGroup")) return true;
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
    ch->last_error = "node " + name + ": " + s.error_message();
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
  on_peer_(job.group, node, PeerGroupInfo{reply.tag(), reply.srb_key(), reply.srb_offset(), reply.ssb_bytes(),
                                                          reply.srb_bytes(), reply.min_slice_bytes()});
  return true;
}

void PeerBootstrap::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    std::deque<Job> jobs;
    jobs.swap(jobs_);
    lock.unlock();
    std::deque<Job> unfinished;
    for (Job& job : jobs) {
      if (job.group->failed()) continue;
      bool all = true;
      std::string waiting;
      for (uint32_t n = 0; n < job.done.size(); ++n) {
        if (!job.done[n]) job.done[n] = TryOpen(job, n);
        if (!job.done[n]) {
          all = false;
          waiting = channels_[job.group->spec().node_names[n]]->last_error;
        }
      }
      if (all) continue;
      if (std::chrono::steady_clock::now() > job.deadline) {
        on_failure_(job.group,
                    Status(Code::kTimeout, "the group's other nodes did not all open it within " +
                                               std::to_string(job.group->timeout_ms()) + " ms (" + waiting + ")"));
        continue;
      }
      unfinished.push_back(std::move(job));
    }
    lock.lock();
    for (auto& j : unfinished) jobs_.push_back(std::move(j));
    if (!unfinished.empty()) cv_.wait_for(lock, kRetryPause, [this] { return stopping_; });
  }
}

}  // namespace ohio
