// What every round protocol of a group reads and writes: the group as the nodes set it up, what
// each peer said of the current round and the next, this node's own part of the round, the
// verdict, and the bookkeeping of its puts and deliveries. The protocols differ in how they
// plan, post and publish; they agree on these facts, so they keep them here once.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/exchange/exchange_message.h"
#include "daemon/transport/transport.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/tables/internode_choice.h"
#include "shm/segment.h"

namespace ohio {

struct PeerGroupInfo {
  uint32_t tag = 0;
  uint64_t srb_key = 0;     // the registered region that holds its SRB
  uint64_t srb_offset = 0;  // where the SRB starts in that region
  uint64_t ssb_bytes = 0;
  uint64_t srb_bytes = 0;
  uint64_t min_slice_bytes = 0;  // its minimum slice (0 from a daemon that predates it)
  bool opened = false;  // its side of the group is set up (peer_bootstrap.h), as it answered then
};

// What a peer said of one round: kept for this round and the next (a peer is at most one round
// ahead: it cannot finish a round without this node's part).
struct Heard {
  uint32_t round = 0;
  bool known = false;  // its M and flags, from ROUND_READY or an eager header
  uint64_t bytes_per_rank = 0;
  bool disagree = false;
  bool opted_out = false;
  bool data = false;       // its eager put for the round landed
  uint64_t begun_ns = 0;   // from its eager header: when it began the round (its clock)
  uint64_t landed_ns = 0;  // when its eager put was seen here
  uint32_t credit = 0;     // announced v3: deliveries it granted + 1
  bool too_large = false;      // alltoallv: its part would take too many rounds
  uint64_t count_digest = 0;   // alltoallv: its share, from its eager header
  bool cube_fits = false;      // alltoallv: its part would fit a hypercube (kEagerVectorCubeFits)
  bool staged = false;         // alltoallv: its part does not fit one round (kEagerVectorStaged)
  uint32_t stream_rounds = 0;  // alltoallv: the stream rounds its part needs
  bool mixed = false;          // its ROUND_READY said kReadyMixed
  bool tables = false;         // alltoallv: its count tables landed in its slot (kEagerVectorTables)
};

class RoundState {
 public:
  RoundState(const GroupShape& shape, uint32_t node, NodeLevelDesign algo, std::vector<std::string> node_names,
             std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
             const Segment* segment, uint32_t tag, InterNodeTable internode_table);

  // --- the group, as its nodes set it up ---
  const GroupShape& shape;
  const uint32_t node;
  const NodeLevelDesign algo;
  const std::vector<std::string> node_names;
  std::vector<PeerId> peer_ids;  // by node: the transport's id for its daemon
  const std::array<uint8_t, 16> key;
  Transport* const transport;
  const Segment* const segment;
  const uint32_t tag;
  const InterNodeTable internode_table;
  std::vector<std::optional<PeerGroupInfo>> peers;
  uint32_t known_peers = 0;
  uint64_t plan_ssb;
  uint64_t plan_srb;
  EagerLayout layout;  // once bootstrapped
  bool bootstrapped() const { return known_peers + 1 == shape.nodes(); }

  // --- what peers said ---
  // Per node, by round parity; and the last round each node said anything about, and the last
  // it announced (ROUND_READY).
  std::vector<std::array<Heard, 2>> heard;
  std::vector<uint32_t> last_heard;
  std::vector<uint32_t> last_ready;
  std::array<bool, 2> pairwise_eager_seen{};  // by parity: a pairwise eager put landed
  std::array<uint32_t, 2> early_inboxes{};    // by parity: hypercube inboxes whose put landed before the round began
  Heard& HeardOf(uint32_t node, uint32_t round);
  // What the header of a put from `from` (eager slot or hypercube inbox) says of its round.
  Heard& HearHeader(uint32_t from, const EagerHeader& h);
  // Records a message about `round` from `node`; false if the round is already over here.
  bool Accept(uint32_t node, uint32_t round);

  // --- this node's part of the round ---
  uint32_t round = 1;  // the round under way, or the next one
  bool active = false;
  bool eager = false;
  bool vector = false;            // an alltoallv round
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;  // of the round under way
  bool hypercube() const { return internode == InterNodeAlgorithm::kHypercube; }
  bool after_announced = false;  // the round before succeeded as an announced round
  bool after_hypercube = false;  // the round before completed as a hypercube: every node had arrived
  bool announced_ok = false;     // this round, announced, has succeeded so far
  uint64_t bytes_per_rank = 0;
  bool local_disagree = false;
  bool local_opt_out = false;
  bool too_large = false;      // alltoallv: this node's part would take too many rounds
  uint64_t count_digest = 0;   // alltoallv: this node's share
  bool ready_sent = false;     // this node told every node its M this round

  // --- the verdict ---
  bool agreed = false;  // every node's M is known and the verdict taken
  Code error_code = Code::kSizeMismatch;
  std::optional<std::string> error;

  // --- puts and deliveries ---
  const std::vector<Put>* puts = &no_puts_;
  const std::vector<Delivery>* deliveries = &no_deliveries_;
  std::vector<LocalPiece> pieces;  // one put's gather list, reused so that a put allocates nothing
  std::vector<bool> put_posted;
  uint32_t posted = 0;
  std::array<uint32_t, 2> in_flight{};  // by round parity
  uint32_t delivered = 0;
  size_t puts_in_flight() const { return in_flight[0] + in_flight[1]; }

  // Resets what the round before left, for `round`.
  void Begin(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_opt_out);
  void End();
  void SendTo(uint32_t node, ExchangeMessage m);
  // ROUND_READY for the round under way to every other node.
  void SendReady(bool disagree, bool opted_out, uint32_t reason = 0);
  // This node's ROUND_READY as its ranks' M and this node's own flags say.
  void SendOwnReady() { SendReady(local_disagree, local_opt_out, too_large ? ExchangeMessage::kReadyTooLarge : 0); }
  // Posts put `index` of the round: an eager one header first, from the SSB half and into the
  // SRB half of the round's parity.
  void Post(const Put& p, uint32_t index, bool eager);
  // Direct rounds: the window is full.
  bool DirectWindowFull() const;
  // For the stage report, of the current eager round's peers: the latest time one began it, and
  // the mean of (landed here - began there) over them.
  void PeerTimes(uint64_t* latest_begun_ns, uint64_t* mean_trip_ns) const;
  // Who this node still waits on, as the peers' ROUND_READYs, its deliveries and its puts say;
  // `tables`: the count tables of the other nodes, once this node's have gone.
  std::string Waiting(bool tables) const;

 private:
  const std::vector<Put> no_puts_;
  const std::vector<Delivery> no_deliveries_;
};

// Round a is past round b, and a is b or later, on the wrapping 32-bit round counter.
bool RoundAfter(uint32_t a, uint32_t b);
bool RoundAtLeast(uint32_t a, uint32_t b);

}  // namespace ohio
