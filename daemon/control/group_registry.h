// Every group this daemon serves, by key: admission (validation, ownership, memory limits),
// membership and removal. Called by the control thread; the admin service reads snapshots.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/control/failed_groups.h"
#include "daemon/control/group_lifecycle_log.h"
#include "daemon/engine/group.h"
#include "daemon/engine/progress_engine.h"
#include "daemon/engine/segment_cache.h"
#include "daemon/engine/tag_pool.h"
#include "daemon/exchange/exchange.h"
#include "daemon/host/numa_topology.h"
#include "daemon/ops/cluster_nodes.h"
#include "daemon/ops/config.h"
#include "daemon/ops/selection_policy.h"
#include "proto/control.pb.h"
#include "proto/peer.pb.h"
#include "shm/selection_notice.h"

namespace ohio {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int pidfd = -1;  // of the process that connected (PeerPidfd), held by the connection
};

struct Membership {
  std::shared_ptr<Group> group;
  uint32_t local = 0;
};

struct GroupInfo {
  std::string key_hex;
  uint32_t size = 0;
  uint32_t local_ranks = 0;
  uint32_t attached = 0;
  uid_t owner = 0;
  uint64_t rounds = 0;
  uint64_t segment_bytes = 0;
  bool failed = false;
  std::string algorithm;
  std::string internode;  // the inter-node table's source
  std::string internode_digest;
  std::string selection;  // the selection table's source
  std::string selection_digest;
  std::vector<std::string> node_names;   // in group order
  std::vector<uint32_t> ranks_per_node;  // same order
  uint64_t ssb_bytes = 0;
  uint64_t srb_bytes = 0;
  uint64_t bytes_per_rank_hint = 0;
  uint32_t timeout_ms = 0;
  SegmentPlacement placement;
};

class GroupRegistry {
 public:
  // `on_new_multinode_group` is told of every new group that spans nodes (peer bootstrap).
  // `numa`: where groups' segments and rails are placed from (daemon/host/segment_placement.h).
  // `staging`: the nonblocking calls' staging, counted with the segments against the limits.
  GroupRegistry(const DaemonConfig& config, ProgressEngine* engine, Transport* transport, StagingLedger* staging,
                std::function<void(std::shared_ptr<Group>)> on_new_multinode_group, NumaTopology numa = {})
      : config_(config),
        engine_(engine),
        transport_(transport),
        staging_(staging),
        on_new_multinode_group_(std::move(on_new_multinode_group)),
        tags_(std::make_shared<TagPool>(kMaxGroupTags)),
        cache_(std::make_shared<SegmentCache>(transport, config.registered_memory_limit)),
        timeout_ms_(config.timeout_ms),
        selection_(ChooseSelectionPolicy(config)),
        numa_(std::move(numa)) {
    OpenSelectionNotice();
  }

  // The daemons' transport among nodes ("tcp", "verbs"), as the selection table names it.
  const char* transport_name() const { return transport_->name(); }

  // The error's code maps to a control Error code; its message goes to the client verbatim.
  Result<Membership> Join(const control::JoinGroup& join, const PeerCredentials& who,
                          control::Error::Code* refusal);
  // `clean` for a LeaveGroup; false when the member's connection closed without one.
  void Depart(const Membership& m, bool clean, const PeerCredentials& who);

  // What another node's daemon needs to send to this node's part of a group. kNoDaemon while
  // none of this node's ranks has joined (ask again), kRefused if the peer sees it differently.
  Result<PeerGroupInfo> DescribeForPeer(const peer::OpenGroupRequest& req);
  // Another node of a group says it failed there: it fails here too, with that node's reason.
  // Ignored for a group this node does not know (closed, or none of its ranks joined yet: it
  // learns at its OpenGroup) or that does not count the caller among its nodes.
  void FailedOnPeer(const peer::GroupFailedRequest& req);

  std::vector<GroupInfo> Snapshot();
  uint64_t bytes_in_use();
  uint64_t staging_bytes_in_use() const { return staging_->staging_total(); }
  struct NumaCounts {
    uint64_t bound = 0;    // segments the kernel placed on their chosen node
    uint64_t refused = 0;  // segments whose chosen node it refused
  };
  NumaCounts numa_counts();
  // The registered segments kept for reuse (daemon/engine/segment_cache.h).
  SegmentCacheStats cache_stats() const { return cache_->stats(); }
  // Groups created since the daemon started.
  uint64_t groups_created() const { return groups_created_.load(std::memory_order_relaxed); }
  // The timeout given to groups created from now on (SIGHUP); open groups keep theirs.
  void set_timeout_ms(uint32_t ms) { timeout_ms_.store(ms, std::memory_order_relaxed); }
  // The selection table given to groups created from now on (SIGHUP); open groups keep theirs.
  void set_selection_policy(SelectionPolicy policy);
  SelectionPolicy selection_policy();
  // What a client decides calls by before it joins a group: the table new groups get now, as
  // text, with its generation (a SIGHUP that changes the table counts one more).
  struct SelectionOffer {
    std::string table;  // canonical text
    std::string digest;
    uint64_t generation = 0;
  };
  SelectionOffer selection_offer();
  // The page that tells clients the generation (shm/selection_notice.h): its descriptor, or -1
  // where none could be made (clients then join a group at set-up to learn the table).
  int selection_notice_fd() const { return notice_.fd(); }

 private:
  const DaemonConfig& config_;
  // The nodes a group may name: this cluster's, as configured; a group naming another is refused.
  const ClusterNodes peers_{config_};
  ProgressEngine* engine_;
  Transport* transport_;
  StagingLedger* staging_;
  std::function<void(std::shared_ptr<Group>)> on_new_multinode_group_;
  std::mutex mu_;
  std::atomic<uint64_t> groups_created_{0};
  // The selection table's generation, published on notice_ (under mu_).
  uint64_t selection_generation_ = 1;
  SelectionNotice notice_;
  std::shared_ptr<TagPool> tags_;
  std::shared_ptr<SegmentCache> cache_;  // groups hold it too: they return their segments to it
  // Makes notice_ (a failure is logged: clients then do without).
  void OpenSelectionNotice();
  // Groups whose local ranks have not all joined within the group's timeout are dropped: failed
  // (a rank that did join gets the error), their memory and key released. Caller holds mu_.
  void DropUnjoined();
  // No longer counted: its memory, and its place among its uid's groups. Caller holds mu_.
  // Tells staging_ the uid's segments after every change. Caller holds mu_.
  void CountSegments(uid_t uid);
  void Forget(std::map<GroupKey, std::shared_ptr<Group>>::iterator it);
  // Forgets the group once none of its local ranks is attached (a failed one: once all joined
  // too). Caller holds mu_.
  void ForgetIfAllGone(const std::shared_ptr<Group>& group);
  // Why a new group of `need` bytes for `uid` would pass its per-uid limits, or empty.
  // `outgrown`, if any, is left out of the uid's count of groups (see OutgrownExempt); its
  // memory is counted, as every byte the uid holds is, staging included.
  std::string OverUserLimits(uid_t uid, uint64_t need, const Group* outgrown) const;
  // The live group a new group of `spec` replaces as a growing group's next generation, if it
  // may be left out of the uid's count of groups: the ranks hold it only until their first
  // call on the new one, and the growth of a group at its uid's user-max-groups must not fail
  // on one node (its other nodes would wait for it until the timeout). Once per group, and
  // never while its own predecessor is still held, so a chain of generations holds at most two
  // groups however its client behaves. Its memory is never left out: a client that named its
  // groups as replaced and kept them would hold twice its share, and other uids would be
  // refused what is theirs. Caller holds mu_.
  const Group* OutgrownExempt(const GroupSpec& spec, uid_t uid) const;

  struct UserUse {
    uint64_t bytes = 0;
    uint32_t groups = 0;
  };
  std::map<GroupKey, std::shared_ptr<Group>> groups_;
  // Failed groups spanning nodes, forgotten here, that a late node is still told of.
  FailedGroups failed_{4096};
  std::map<uid_t, UserUse> users_;
  GroupLifecycleLog lifecycle_log_;  // guarded by mu_
  // Live groups a successor has been exempted for (OutgrownExempt).
  std::set<GroupKey> replaced_;
  uint64_t bytes_in_use_ = 0;
  std::atomic<uint32_t> timeout_ms_;
  SelectionPolicy selection_;  // guarded by mu_
  const NumaTopology numa_;
  NumaCounts numa_counts_;
};

}  // namespace ohio
