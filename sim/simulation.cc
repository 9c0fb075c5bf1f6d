#include "sim/simulation.h"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/exchange/exchange_message.h"
#include "sim/vector_schedule.h"

namespace ohio::sim {
namespace {

namespace s4u = simgrid::s4u;

constexpr uint64_t kControlBytes = ExchangeMessage::kBytes;

// What travels between two daemons: a put of ranks' data, or a control message.
struct Message {
  enum class Type { kPut, kReady, kCredit } type = Type::kPut;
  uint32_t from = 0;
  uint64_t round = 0;     // the group's round, counted over every call
  uint32_t key = 0;       // put: SimPut::key
  uint32_t delivery = 0;  // credit: the delivery granted
  uint64_t payload = 0;   // put: the ranks' bytes
};

// The keys of a round's puts that have landed on a node (SimPut::key: a sender, a delivery or a
// step, each below the group's size or its deliveries), a flag each: a landing is taken in for
// every put, so it must not cost a tree insertion (a set here was 5% of a 1,024-node run).
class LandedKeys {
 public:
  void Add(uint32_t key) {
    if (key >= landed_.size()) landed_.resize(key + 1, false);
    landed_[key] = true;
  }
  bool Has(uint32_t key) const { return key < landed_.size() && landed_[key]; }

 private:
  std::vector<bool> landed_;
};

// One round on one node, as its ranks and daemon see it.
struct RoundProgress {
  uint32_t arrived = 0;    // ranks that staged their part
  uint32_t done = 0;       // ranks through with the round
  uint32_t delivered = 0;  // deliveries published to the ranks, in order
  std::vector<uint32_t> consumed;  // deliveries each local rank has copied out
  uint32_t in_flight = 0;  // this node's puts of the round that have not landed yet
  bool complete = false;   // the daemon is through with the round
};

// What a node's daemon heard from one peer about one round.
struct Heard {
  bool ready = false;
  uint32_t credit = 0;  // deliveries of the peer's this node may put (CREDIT d grants d + 1)
};

// One round of the run: which call, which of its rounds.
struct RoundRef {
  const CallSchedule* call = nullptr;
  size_t call_index = 0;
  uint64_t in_call = 0;
  bool last_of_call = false;  // the call's last round simulated
};

struct Node {
  uint32_t index = 0;
  uint32_t ppn = 0;
  s4u::Host* host = nullptr;
  s4u::Mailbox* mailbox = nullptr;
  s4u::MutexPtr mutex;
  // The daemon and the ranks wait apart, so that what only the daemon acts on (a message, a
  // rank's progress) does not wake every rank. The daemon's generation is bumped at every
  // change it may act on: having slept (a message's cost) it notices what happened meanwhile.
  s4u::ConditionVariablePtr daemon_wake;
  uint64_t generation = 0;
  s4u::ConditionVariablePtr ranks_wake;
  std::map<uint64_t, RoundProgress> progress;              // by round
  std::map<uint64_t, std::shared_ptr<const NodeRound>> plans;  // rounds under way, by round
  std::map<uint64_t, std::map<uint32_t, Heard>> heard;     // by round, then peer
  std::map<uint64_t, LandedKeys> landed;                   // keys of puts landed, by round
  uint64_t finished = 0;   // rounds finished: complete, every rank done, every put landed
  uint32_t in_flight = 0;  // puts of any round not landed yet (direct's window)
  // What the daemon sent, oldest first, until it has seen each transfer end. Not detached: SimGrid
  // 3.32 keeps every detached send in one list of the engine's that each completion searches, a
  // cost that grew as the square of the messages in flight (N^2 at once with pairwise). A send
  // that is not detached is kept by its sender: SimGrid lets go of its side only when the sender
  // waits for it or ends, and waiting, a blocking call, would reorder actors acting at the same
  // simulated time (and so change results), so about 1 KB a message stays until the run ends.
  std::deque<s4u::CommPtr> sent;
  // The NIC's queue pairs, used by the daemon's sends and its receiving half alike; none when the
  // model is off.
  std::unique_ptr<QueuePairCache> qp_cache;
  NodeCounters counters;
};

class Simulation {
 public:
  Simulation(const SimRequest& request, std::vector<std::shared_ptr<CallSchedule>> calls)
      : req_(request), calls_(std::move(calls)) {}

  Result<SimResult> Run(s4u::Engine& engine, const std::vector<s4u::Host*>& hosts);

 private:
  void NotifyDaemon(Node& n) {
    ++n.generation;
    n.daemon_wake->notify_all();
  }
  void NotifyRanks(Node& n) { n.ranks_wake->notify_all(); }
  // Waits on `wake` of node n until `ready` holds.
  template <typename Pred>
  void WaitFor(Node& n, const s4u::ConditionVariablePtr& wake, Pred ready) {
    std::unique_lock<s4u::Mutex> lock(*n.mutex);
    while (!ready()) wake->wait(lock);
  }
  RoundProgress& Progress(Node& n, uint64_t g) {
    RoundProgress& p = n.progress[g];
    if (p.consumed.size() != n.ppn) p.consumed.assign(n.ppn, 0);
    return p;
  }
  // The node's plan of round g, made when its first actor needs it and dropped once the round
  // is finished (AdvanceFinished): only the rounds under way are kept.
  const NodeRound& RoundOf(Node& n, uint64_t g) {
    auto it = n.plans.find(g);
    if (it == n.plans.end()) {
      it = n.plans.emplace(g, std::make_shared<const NodeRound>(rounds_[g].call->Plan(n.index, rounds_[g].in_call))).first;
    }
    return *it->second;
  }
  // The daemon's cost of posting or taking in one message on the queue pair to `peer`.
  double MessageCost(Node& n, uint32_t peer) {
    if (!n.qp_cache || !n.qp_cache->Use(peer)) return req_.calibration.daemon_message_cost;
    ++n.counters.qp_misses;
    return req_.calibration.daemon_message_cost + req_.qp_cache.penalty;
  }
  void Send(Node& from, uint32_t to, Message* m, uint64_t wire_bytes);
  // Lets go of the sends of node n that have landed, oldest first.
  void ForgetLanded(Node& n);
  void SendControl(Node& from, uint32_t to, Message::Type type, uint64_t g, uint32_t delivery);
  void AdvanceFinished(Node& n);

  void RankActor(uint32_t node, uint32_t local);
  void DaemonActor(uint32_t node);
  void ReceiverActor(uint32_t node);
  // Plays round g on node n; returns how it ran.
  RoundKind PlayRound(Node& n, uint64_t g, bool after_announced);

  const SimRequest& req_;
  std::vector<std::shared_ptr<CallSchedule>> calls_;
  std::vector<RoundRef> rounds_;
  std::vector<std::unique_ptr<Node>> nodes_;
  s4u::BarrierPtr call_barrier_;
  std::vector<double> call_start_, call_end_;
  // By call: the simulated rounds, and when the last rank finished each simulated slice.
  std::vector<uint64_t> simulated_rounds_;
  std::vector<std::vector<double>> slice_end_;
};

void Simulation::Send(Node& from, uint32_t to, Message* m, uint64_t wire_bytes) {
  from.sent.push_back(nodes_[to]->mailbox->put_async(m, wire_bytes));
}

void Simulation::ForgetLanded(Node& n) {
  // Testing a transfer does not make SimGrid let go of it, but frees ours.
  while (!n.sent.empty() && n.sent.front()->test()) n.sent.pop_front();
}

void Simulation::SendControl(Node& from, uint32_t to, Message::Type type, uint64_t g, uint32_t delivery) {
  s4u::this_actor::sleep_for(MessageCost(from, to));
  auto* m = new Message{type, from.index, g, 0, delivery, 0};
  ++from.counters.control_frames_sent;
  Send(from, to, m, kControlBytes);
}

void Simulation::AdvanceFinished(Node& n) {
  bool moved = false;
  while (n.finished < rounds_.size()) {
    auto it = n.progress.find(n.finished);
    if (it == n.progress.end() || !it->second.complete || it->second.done < n.ppn || it->second.in_flight > 0) break;
    // Every rank and the daemon are through with the round: what it kept can go.
    n.progress.erase(it);
    n.plans.erase(n.finished);
    n.heard.erase(n.finished);
    n.landed.erase(n.finished);
    ++n.finished;
    moved = true;
  }
  if (moved) NotifyRanks(n);
}

void Simulation::RankActor(uint32_t node, uint32_t local) {
  Node& n = *nodes_[node];
  const double rate = PerRankCopyBandwidth(req_.calibration, n.ppn, n.host->get_core_count());
  auto copy = [rate](uint64_t bytes) {
    if (bytes > 0) s4u::this_actor::sleep_for(static_cast<double>(bytes) / rate);
  };
  for (uint64_t g = 0; g < rounds_.size(); ++g) {
    const RoundRef& ref = rounds_[g];
    if (ref.in_call == 0) {
      call_barrier_->wait();
      if (node == 0 && local == 0) call_start_[ref.call_index] = s4u::Engine::get_clock();
    }
    const NodeRound& r = RoundOf(n, g);
    // An eager round stages into the SSB half of its parity: the round two back must be over.
    // An announced one uses the whole SSB: the round before must be.
    const uint64_t lag = r.kind == RoundKind::kAnnounced ? 1 : 2;
    WaitFor(n, n.ranks_wake, [&] { return n.finished + lag >= g + 1; });
    copy(r.copy_in[local]);
    RoundProgress& p = Progress(n, g);
    if (++p.arrived == n.ppn) {
      NotifyDaemon(n);
      NotifyRanks(n);
    }
    // The ranks meet on their node, then copy their own node's part out of the SSB.
    WaitFor(n, n.ranks_wake, [&] { return p.arrived == n.ppn; });
    copy(r.copy_on_node[local]);
    uint32_t consumed = 0;
    while (consumed < r.deliveries.size()) {
      WaitFor(n, n.ranks_wake, [&] { return p.delivered > consumed; });
      s4u::this_actor::sleep_for(req_.calibration.handoff_latency);  // the daemon's publication seen
      const uint32_t upto = p.delivered;
      uint64_t bytes = 0;
      for (uint32_t d = consumed; d < upto; ++d) bytes += r.copy_out[d][local];
      copy(bytes);
      consumed = upto;
      p.consumed[local] = consumed;
      if (r.kind == RoundKind::kAnnounced) NotifyDaemon(n);  // credits follow the ranks' copies
    }
    ++p.done;
    const double now = s4u::Engine::get_clock();
    const uint64_t per_slice = ref.call->rounds_per_slice();
    if ((ref.in_call + 1) % per_slice == 0 || ref.last_of_call) {
      double& end = slice_end_[ref.call_index][ref.in_call / per_slice];
      end = std::max(end, now);
    }
    if (ref.last_of_call) call_end_[ref.call_index] = std::max(call_end_[ref.call_index], now);
    AdvanceFinished(n);
  }
}

void Simulation::ReceiverActor(uint32_t node) {
  Node& n = *nodes_[node];
  // Puts land without the daemon taking them (RDMA, or the transport's receiving thread): the
  // mailbox receives whether or not this actor is busy.
  n.mailbox->set_receiver(s4u::Actor::self());
  while (true) {
    std::unique_ptr<Message> m(n.mailbox->get<Message>());
    s4u::this_actor::sleep_for(MessageCost(n, m->from));
    switch (m->type) {
      case Message::Type::kPut: {
        ++n.counters.data_frames_received;
        n.counters.bytes_received += m->payload;
        n.landed[m->round].Add(m->key);
        // A put has left its sender once it landed here.
        Node& from = *nodes_[m->from];
        --from.in_flight;
        --Progress(from, m->round).in_flight;
        AdvanceFinished(from);
        NotifyDaemon(from);
        break;
      }
      case Message::Type::kReady:
        ++n.counters.control_frames_received;
        n.heard[m->round][m->from].ready = true;
        break;
      case Message::Type::kCredit: {
        ++n.counters.control_frames_received;
        Heard& h = n.heard[m->round][m->from];
        h.credit = std::max(h.credit, m->delivery + 1);
        break;
      }
    }
    NotifyDaemon(n);
  }
}

RoundKind Simulation::PlayRound(Node& n, uint64_t g, bool after_announced) {
  const NodeRound& r = RoundOf(n, g);
  const RoundKind kind = r.kind;
  const uint32_t nodes = static_cast<uint32_t>(nodes_.size());
  RoundProgress& p = Progress(n, g);
  WaitFor(n, n.daemon_wake, [&] { return p.arrived == n.ppn; });
  // The last rank's arrival seen, and the round begun.
  s4u::this_actor::sleep_for(req_.calibration.handoff_latency + req_.calibration.daemon_round_cost);
  // Announced rounds announce themselves; an eager round after one does too, since the SRB held
  // the whole announced round (daemon/exchange/exchange.cc's BeginRound).
  const bool announces = r.kind == RoundKind::kAnnounced || after_announced;
  if (announces) {
    for (uint32_t peer = 0; peer < nodes; ++peer) {
      if (peer != n.index) SendControl(n, peer, Message::Type::kReady, g, 0);
    }
  }
  auto heard_ready = [&](uint32_t peer) { return n.heard[g][peer].ready; };
  auto agreed = [&] {
    for (uint32_t peer = 0; peer < nodes; ++peer) {
      if (peer != n.index && !heard_ready(peer)) return false;
    }
    return true;
  };
  std::vector<bool> posted(r.puts.size(), false);
  size_t posted_count = 0;
  uint32_t credited = r.granted;
  const NodeLevelDesign algo = req_.settings.algo;
  while (true) {
    const uint64_t seen = n.generation;
    bool busy = false;
    // Puts, in the order the daemon posts them, as far as credits and the window allow.
    const bool may_post = r.kind != RoundKind::kAnnounced || agreed();
    for (size_t i = 0; may_post && i < r.puts.size(); ++i) {
      if (r.window > 0 && n.in_flight >= r.window) break;
      if (posted[i]) continue;
      const SimPut& put = r.puts[i];
      bool credit = true;
      switch (r.kind) {
        case RoundKind::kAnnounced:
          credit = algo != NodeLevelDesign::kV3 || put.delivery < 2 || n.heard[g][put.dest].credit > put.delivery;
          break;
        case RoundKind::kEager:
          // Receiving the peer's round before was the credit; after an announced round, its ROUND_READY.
          credit = !after_announced || heard_ready(put.dest);
          break;
        case RoundKind::kHypercube: {
          // Step k gathers what the inboxes of steps 0..k-1 brought.
          for (uint32_t k = 0; k < put.step && credit; ++k) credit = n.landed[g].Has(k);
          credit = credit && (!after_announced || heard_ready(put.dest));
          break;
        }
      }
      if (!credit) {
        if (r.kind == RoundKind::kHypercube) break;
        continue;
      }
      s4u::this_actor::sleep_for(MessageCost(n, put.dest));
      posted[i] = true;
      ++posted_count;
      ++n.in_flight;
      ++p.in_flight;
      ++n.counters.data_frames_sent;
      n.counters.bytes_sent += put.payload;
      Send(n, put.dest, new Message{Message::Type::kPut, n.index, g, put.key, 0, put.payload}, put.wire);
      busy = true;
    }
    // v3: delivery d lands where d-2 did; granted once every rank copied d-2 out.
    if (r.kind == RoundKind::kAnnounced && agreed()) {
      uint32_t consumed_by_all = *std::min_element(p.consumed.begin(), p.consumed.end());
      while (credited < r.deliveries.size() && consumed_by_all + 1 >= credited) {
        SendControl(n, r.deliveries[credited].source, Message::Type::kCredit, g, credited);
        ++credited;
        busy = true;
      }
    }
    // Publish, in order, what landed (an announced round's only once every node agreed; an
    // alltoallv's all at once).
    if (r.kind != RoundKind::kAnnounced || agreed()) {
      uint32_t delivered = p.delivered;
      const LandedKeys& landed = n.landed[g];
      while (delivered < r.deliveries.size() && landed.Has(r.deliveries[delivered].key)) ++delivered;
      if (r.publish_together && delivered < r.deliveries.size()) delivered = p.delivered;
      if (delivered != p.delivered) {
        p.delivered = delivered;
        NotifyRanks(n);
      }
    }
    const bool delivered_all = p.delivered == r.deliveries.size();
    const bool done = posted_count == r.puts.size() && delivered_all &&
                      (r.kind == RoundKind::kEager || p.in_flight == 0) &&
                      (r.kind != RoundKind::kAnnounced || agreed());
    if (done) break;
    ForgetLanded(n);
    if (!busy) WaitFor(n, n.daemon_wake, [&] { return n.generation != seen; });
  }
  p.complete = true;
  ForgetLanded(n);
  AdvanceFinished(n);  // may drop r
  return kind;
}

void Simulation::DaemonActor(uint32_t node) {
  Node& n = *nodes_[node];
  bool after_announced = false;
  for (uint64_t g = 0; g < rounds_.size(); ++g) {
    after_announced = PlayRound(n, g, after_announced) == RoundKind::kAnnounced;
  }
  // An actor's sends fail when it ends: its last ones must land first.
  for (const s4u::CommPtr& c : n.sent) c->wait();
}

Result<SimResult> Simulation::Run(s4u::Engine& engine, const std::vector<s4u::Host*>& hosts) {
  const uint32_t nodes = static_cast<uint32_t>(req_.ppn.size());
  for (size_t c = 0; c < calls_.size(); ++c) {
    const CallSchedule& call = *calls_[c];
    const bool cut = req_.max_slices > 0 && call.slices() > req_.max_slices && call.vector() == nullptr;
    const uint64_t rounds = cut ? req_.max_slices * call.rounds_per_slice() : call.rounds();
    for (uint64_t k = 0; k < rounds; ++k) rounds_.push_back({&call, c, k, k + 1 == rounds});
    simulated_rounds_.push_back(rounds);
    slice_end_.emplace_back((rounds + call.rounds_per_slice() - 1) / call.rounds_per_slice(), 0.0);
  }
  call_start_.assign(calls_.size(), 0);
  call_end_.assign(calls_.size(), 0);
  uint32_t ranks = 0;
  for (uint32_t p : req_.ppn) ranks += p;
  call_barrier_ = s4u::Barrier::create(ranks);
  for (uint32_t i = 0; i < nodes; ++i) {
    auto n = std::make_unique<Node>();
    n->index = i;
    n->ppn = req_.ppn[i];
    n->host = hosts[i];
    n->mailbox = s4u::Mailbox::by_name("ohiod-" + std::to_string(i));
    n->mutex = s4u::Mutex::create();
    n->daemon_wake = s4u::ConditionVariable::create();
    n->ranks_wake = s4u::ConditionVariable::create();
    if (req_.qp_cache.enabled()) n->qp_cache = std::make_unique<QueuePairCache>(req_.qp_cache.entries, nodes);
    nodes_.push_back(std::move(n));
  }
  for (uint32_t i = 0; i < nodes; ++i) {
    s4u::Actor::create("ohiod-receive-" + std::to_string(i), hosts[i], [this, i] { ReceiverActor(i); })->daemonize();
    s4u::Actor::create("ohiod-" + std::to_string(i), hosts[i], [this, i] { DaemonActor(i); });
    for (uint32_t l = 0; l < req_.ppn[i]; ++l) {
      s4u::Actor::create("rank-" + std::to_string(i) + "." + std::to_string(l), hosts[i], [this, i, l] { RankActor(i, l); });
    }
  }
  engine.run();

  SimResult result;
  for (uint32_t i = 0; i < nodes; ++i) {
    result.hosts.push_back(hosts[i]->get_name());
    result.nodes.push_back(nodes_[i]->counters);
    if (nodes_[i]->finished != rounds_.size()) {
      return Status(Code::kTimeout, "simulation stalled: node " + std::to_string(i) + " finished " +
                                        std::to_string(nodes_[i]->finished) + " of " + std::to_string(rounds_.size()) +
                                        " rounds (a model fault)");
    }
  }
  result.simulated_seconds = s4u::Engine::get_clock();
  size_t c = 0;
  for (uint64_t m : req_.counts ? std::vector<uint64_t>{0} : req_.sizes) {
    SizeSummary s;
    s.bytes_per_rank = m;
    s.vector = req_.counts != nullptr;
    s.eager = calls_[c]->eager();
    s.internode = calls_[c]->internode();
    s.rounds = calls_[c]->rounds();
    s.simulated_rounds = simulated_rounds_[c];
    std::vector<double> times;
    for (uint32_t it = 0; it < req_.iterations; ++it, ++c) {
      double t = call_end_[c] - call_start_[c];
      if (simulated_rounds_[c] < calls_[c]->rounds()) {
        // The slices not simulated, each as long as the last one simulated (the last slice of
        // the call may be shorter: at most one slice's time too much).
        const std::vector<double>& ends = slice_end_[c];
        const double per_slice = ends[ends.size() - 1] - ends[ends.size() - 2];
        t += static_cast<double>(calls_[c]->slices() - ends.size()) * per_slice;
      }
      times.push_back(t);
      result.calls.push_back({m, it, t});
      if (const VectorCallSchedule* v = calls_[c]->vector()) {
        s.stream_rounds = std::max<uint64_t>(s.stream_rounds, v->stream_rounds());
        s.cube_went_again += v->cube_went_again() ? 1 : 0;
      }
    }
    std::sort(times.begin(), times.end());
    s.min = times.front();
    s.max = times.back();
    s.median = times.size() % 2 ? times[times.size() / 2] : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
    result.sizes.push_back(s);
  }
  return result;
}

// Hosts in natural name order: node-2 before node-10.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

Result<SimResult> RunSimulation(const SimRequest& req) {
  if (req.sizes.empty() && !req.counts) return Status(Code::kInvalidArgument, "no sizes to simulate");
  if (req.iterations == 0) return Status(Code::kInvalidArgument, "iterations must be at least 1");
  if (req.max_slices == 1) {
    return Status(Code::kInvalidArgument, "max slices must be 0 (every round) or at least 2 (a slice's time is the last two's difference)");
  }
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < req.ppn.size(); ++n) rank_node.insert(rank_node.end(), req.ppn[n], n);
  Result<GroupShape> shape = GroupShape::Make(static_cast<uint32_t>(req.ppn.size()), std::move(rank_node));
  if (!shape.ok()) return shape.status();
  std::vector<std::shared_ptr<CallSchedule>> calls;
  // Alltoallv: each call's first round depends on what the one before found (whether every
  // node's part fitted a hypercube).
  bool tries_cube = true;
  for (uint32_t i = 0; req.counts && i < req.iterations; ++i) {
    auto vector = VectorCallSchedule::Make(shape.value(), req.settings, *req.counts, tries_cube);
    if (!vector.ok()) return Status(vector.status().code(), "alltoallv: " + vector.status().message());
    tries_cube = vector.value()->next_tries_cube();
    calls.push_back(CallSchedule::Vector(vector.value()));
  }
  for (uint64_t m : req.counts ? std::vector<uint64_t>{} : req.sizes) {
    Result<std::shared_ptr<CallSchedule>> call = CallSchedule::Make(shape.value(), req.settings, m);
    if (!call.ok()) return Status(call.status().code(), "M = " + std::to_string(m) + ": " + call.status().message());
    for (uint32_t i = 0; i < req.iterations; ++i) calls.push_back(call.value());
  }
  if (!std::ifstream(req.platform)) return Status(Code::kInvalidArgument, req.platform + ": cannot read the platform file");

  std::vector<std::string> args = {"ohio-sim", "--log=root.thresh:warning"};
  for (const std::string& c : req.cfg) args.push_back("--cfg=" + c);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  s4u::Engine engine(&argc, argv.data());
  try {
    engine.load_platform(req.platform);
  } catch (const simgrid::ParseError& e) {
    return Status(Code::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return Status(Code::kInvalidArgument, req.platform + ": " + e.what());
  }
  std::vector<s4u::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](s4u::Host* a, s4u::Host* b) { return NaturalLess(a->get_name(), b->get_name()); });
  if (hosts.size() < req.ppn.size()) {
    return Status(Code::kInvalidArgument, req.platform + " has " + std::to_string(hosts.size()) + " hosts, fewer than the " +
                                              std::to_string(req.ppn.size()) + " nodes asked for");
  }
  // Each simulated round is a few dozen bytes of bookkeeping before the run starts, and seconds
  // of CPU at scale: a run of more is a mistake, not a wait.
  constexpr uint64_t kMostRounds = uint64_t{1} << 24;
  uint64_t rounds = 0;
  for (const auto& call : calls) {
    rounds += req.max_slices > 0 ? std::min(call->rounds(), req.max_slices * call->rounds_per_slice()) : call->rounds();
  }
  if (rounds > kMostRounds) {
    return Status(Code::kInvalidArgument, std::to_string(rounds) + " rounds to simulate, more than the " +
                                              std::to_string(kMostRounds) + " ohio-sim plays; try --max-slices 2");
  }
  Simulation sim(req, std::move(calls));
  return sim.Run(engine, hosts);
}

}  // namespace ohio::sim
