// Introduces each multi-node group to the other nodes' daemons: a thread that, for every new
// group, asks every other node of the group over the peer gRPC service for its tag and SRB
// (retrying while none of that node's ranks has joined yet), connects the data transport, and
// hands what it learnt to the progress engine only once the group is open on every node: every
// node answered, this node's data connection to each is up (its side is open, which it tells
// those who ask, OpenGroupReply.opened) and every other node said its side is open too. The
// group's first round (and its timer) starts only then, so a round's timeout measures the
// collective, not the nodes' start-up, and the nodes start it together. A node that does not
// answer, or a data connection not up, by the group's setup deadline (its timeout from its
// creation here) fails the group. Each node bounds its own side so, fails the group there and
// tells the others (GroupFailed); the wait for the others' sides is bounded only as a last
// resort (a hung daemon, a lost tell), by the timeout again from this side's opening. Only the
// cluster's nodes are called (daemon/ops/cluster_nodes.h): the registry refuses a group naming
// another, and the address dialled is the configured one, or a DNS answer inside peer-networks.
// Every call carries a MUNGE credential for its method and the node called (auth = munge); a node
// that refuses this one fails the group at once with its reason, it is not retried; a node
// that answers but authenticates otherwise (its Hello says auth = none where this node runs
// munge) fails it too, with that reason, since its own calls here are refused.
//
// Calls are made by a few threads (peer-calls-at-once, 4 by default; running only while there
// are calls to make, so an idle daemon has none), never two at once to
// one node, each node over a gRPC channel of its own, made on first use and closed once no
// call has used it for peer-channel-idle-s and no live group names its node. A node that does not answer holds one thread for
// a call's deadline (a second) and no more: calls are shared out between users first (the
// one with fewest calls under way goes next), then between groups, and one user, or one
// group, never has every thread, so another's group is set up while a user's groups name
// nodes that are down. Few threads, not one per node, because 32 daemons on two cores and
// one munged, each calling its 31 peers side by side, could not answer each other in time
// (with several calls at once per daemon jobs failed to open their groups, with one at a time
// none did; docs/investigations/hypercube-at-32-nodes.md), and a daemon of a 1,000-node
// cluster keeps a handful of threads here.
// A slow start costs no round: round 1 waits for every side. The same threads tell the
// group's other nodes (GroupFailed) when it failed here for a reason they cannot see, so
// their ranks fail at once rather than at their own timeout; a tell is best effort (a short
// deadline, no retry), goes after the calls of groups being set up, and only to nodes that
// answered this one (a node that never did has nothing to hear, and may not be up).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/engine/group.h"
#include "daemon/exchange/exchange.h"
#include "daemon/ops/cluster_nodes.h"
#include "daemon/ops/config.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/transport/transport.h"

namespace grpc {
class ClientContext;
}

namespace ohio {

class PeerBootstrap {
 public:
  using OnPeer = std::function<void(std::shared_ptr<Group>, uint32_t node, PeerGroupInfo)>;
  using OnFailure = std::function<void(std::shared_ptr<Group>, Status)>;

  PeerBootstrap(const DaemonConfig& config, const PeerAuth* auth, Transport* transport, OnPeer on_peer,
                OnFailure on_failure);
  ~PeerBootstrap();

  void Open(std::shared_ptr<Group> group);
  // The group failed on this node (group->failure() says why): tells its other nodes, once,
  // without retrying (a node that does not answer has its own timeout).
  void TellFailed(std::shared_ptr<Group> group);
  // Node `node` said its side of group `key` is open (peer service thread).
  void SideOpened(const GroupKey& key, const std::string& node);

  // The peer service address of `node` as configured (host:port), for people to read.
  std::string PeerAddress(const std::string& node) const { return cluster_.Address(node); }
  // Channels to other nodes' peer services open now (each closed once idle).
  size_t channels() const;

 private:
  struct Channel;
  enum class CallKind { kAsk, kTell };
  // A call to make to one node, on a calling thread.
  struct PeerCall {
    std::string node;
    CallKind kind;
    uid_t owner;         // whose group it serves: threads are shared out between users first
    const Group* group;  // then between groups
    std::function<void(Channel&)> task;
  };
  struct Job {
    std::shared_ptr<Group> group;
    // By node, guarded by mu_ (the workers write them).
    std::vector<uint8_t> done;    // it answered (success or a final error)
    std::vector<uint8_t> asking;  // a call to it is queued or under way
    std::vector<std::optional<PeerGroupInfo>> info;  // its answer, handed on at the end
    std::vector<uint8_t> opened;  // it said its side of the group is open
    std::vector<std::string> why;  // why it has not answered yet, for the deadline's message
    bool connected = false;       // every data connection of the group is up: this side is open
    // To answer and connect; once connected, for the others to say their side is open.
    std::chrono::steady_clock::time_point deadline;
    std::chrono::steady_clock::time_point next_ask;   // of the nodes not answered, or not open yet
    std::chrono::milliseconds retry_pause{0};          // grows while nodes do not answer (Ask)
    // For the log line of an open group: how long it took here, in how many calls.
    std::chrono::steady_clock::time_point created;
    std::chrono::steady_clock::time_point connected_at;
    uint32_t calls = 0;
  };
  void Run();
  // Queues the calls a job needs now on its nodes' workers. Caller holds mu_.
  void Ask(const std::shared_ptr<Job>& job);
  // Moves a job on from what its nodes said; false once it is finished. Caller holds mu_.
  bool Check(const std::shared_ptr<Job>& job);
  // Queues a call to `node` for `group` (caller holds mu_).
  void Queue(const std::string& node, CallKind kind, const Group& group, std::function<void(Channel&)> task);
  // A calling thread: makes the queued calls, one at a time, until none came for a while.
  void MakeCalls();
  // Starts a calling thread if calls wait, none is idle and fewer than peer-calls-at-once run.
  // Caller holds mu_.
  void StartCallerIfNeeded();
  // The queued call to make next, or calls_.end() if none may go now. Caller holds mu_.
  std::deque<PeerCall>::iterator NextCall();
  // The channel to `node`, made on first use; its node's call holds it (one at a time).
  // Resolves the node's address without mu_ held. Takes and gives back `lock`.
  std::shared_ptr<Channel> ChannelTo(const std::string& node, std::unique_lock<std::mutex>& lock);
  // Closes the channels no call has used for peer-channel-idle-s whose nodes no live group
  // names, and forgets the groups gone. Caller holds mu_.
  void PruneChannels();
  // Whether the data connection to every node that answered is up; else `down` names those not.
  bool Connected(const Job& job, std::string* down) const;
  // One attempt for one node: true once it answered (success, then *info, or a final error);
  // else *why says why not.
  bool TryOpen(const Job& job, uint32_t node, Channel& ch, std::optional<PeerGroupInfo>* info, std::string* why);
  void Tell(const std::shared_ptr<Group>& group, uint32_t node, Channel& ch);
  // Tells `node` that this side of the job's group is open; false if it did not hear it.
  bool TellOpened(const Job& job, uint32_t node, Channel& ch);
  // Adds this node's credential for calling `method` on `node` (auth = munge).
  Status Credential(grpc::ClientContext* ctx, const char* method, const std::string& node) const;

  const DaemonConfig& config_;
  const ClusterNodes cluster_;
  const PeerAuth* auth_;
  Transport* transport_;
  OnPeer on_peer_;
  OnFailure on_failure_;
  const uint32_t callers_count_;
  // The most calls one user, or one group, has under way: all the threads but one, so that
  // another's calls always find one (all of them when there is one thread).
  const uint32_t most_calls_per_owner_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::deque<std::shared_ptr<Group>> failed_;  // to tell the other nodes of
  bool stopping_ = false;
  bool answered_ = false;  // a call finished since Run last looked
  std::condition_variable calls_cv_;
  // Guarded by mu_.
  std::deque<PeerCall> calls_;                       // queued, oldest first
  std::set<std::string> busy_nodes_;                 // a call to each is under way
  std::map<uid_t, uint32_t> owner_calls_;            // calls under way, by user
  std::map<const Group*, uint32_t> group_calls_;     // calls under way, by group
  std::map<uid_t, uint64_t> owner_served_;           // when (calls_served_) a call of each user last went
  uint64_t calls_served_ = 0;
  std::map<std::string, std::shared_ptr<Channel>> channels_;  // by node
  // Every group spanning nodes since Open, until it failed or is gone (its channels are kept).
  std::vector<std::weak_ptr<Group>> live_groups_;
  std::chrono::steady_clock::time_point next_prune_;
  // Calling threads run while there are calls to make: started as calls wait and none is idle,
  // up to peer-calls-at-once, ended once idle for a while, so an idle daemon keeps none.
  uint32_t callers_ = 0;       // running (detached; the destructor waits for them to end)
  uint32_t idle_callers_ = 0;  // waiting for a call
  std::condition_variable callers_cv_;
  std::thread thread_;
};

}  // namespace ohio
