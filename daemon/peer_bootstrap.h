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
// resort (a hung daemon, a lost tell), by the timeout again from this side's opening. Peer daemons are found in the configured
// peers table, else by DNS on the default peer port. Every call carries a MUNGE credential for
// its method and the node called (auth = munge); a node that refuses this one fails the group
// at once with its reason, it is not retried.
//
// One thread makes every peer call, one at a time, each other node over a gRPC channel of its
// own (made on first use): side by side (4 or 31 calls at once, a thread per node), 32 daemons
// sharing two cores and one munged could not answer each other in time, and one at a time
// passed every job (docs/PERFORMANCE.md); one thread, not one per node, keeps a daemon of a
// 1,000-node cluster at two threads here. A slow start costs no round: round 1 waits for every
// side. The same thread tells the group's other nodes (GroupFailed) when it failed here for a
// reason they cannot see, so their ranks fail at once rather than at their own timeout; a tell
// is best effort (a short deadline, no retry) and waits while any group's setup has a call to
// make.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/config.h"
#include "daemon/exchange.h"
#include "daemon/group.h"
#include "daemon/peer_auth.h"
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

  // The peer service address of `node` (host:port): the peers table, else the name itself.
  std::string PeerAddress(const std::string& node) const;

 private:
  struct Channel;
  // A call to make to one node, on the calling thread.
  struct PeerCall {
    std::string node;
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
  // Queues a call to `node` (caller holds mu_). Tells go only while no ask waits: they are
  // best effort, and a group being set up has a deadline.
  enum class CallKind { kAsk, kTell };
  void Queue(const std::string& node, CallKind kind, std::function<void(Channel&)> task);
  // The calling thread: makes the queued calls, one at a time.
  void MakeCalls();
  // The channel to `node`, made on first use (calling thread only).
  Channel& ChannelTo(const std::string& node);
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
  const PeerAuth* auth_;
  Transport* transport_;
  OnPeer on_peer_;
  OnFailure on_failure_;
  std::map<std::string, std::string> peers_;  // node name -> host:port

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::deque<std::shared_ptr<Group>> failed_;  // to tell the other nodes of
  bool stopping_ = false;
  bool answered_ = false;  // a call finished since Run last looked
  std::condition_variable calls_cv_;
  std::deque<PeerCall> asks_;   // a group's setup (guarded by mu_)
  std::deque<PeerCall> tells_;  // a failure told (guarded by mu_)
  std::map<std::string, std::unique_ptr<Channel>> channels_;  // by node (calling thread only)
  std::thread thread_;
  std::thread caller_;
};

}  // namespace ohio
