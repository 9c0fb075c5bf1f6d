#include "sim/vector_schedule.h"

#include <algorithm>
#include <string>

#include "shm/plan/bruck_plan.h"
#include "shm/plan/vector_cube.h"
#include "shm/plan/vector_staging.h"

namespace ohio::sim {

Result<std::shared_ptr<VectorCallSchedule>> VectorCallSchedule::Make(const GroupShape& shape,
                                                                     const GroupSettings& settings,
                                                                     const CountMatrix& counts, bool tries_cube) {
  if (shape.nodes() < 2) {
    return Status(Code::kInvalidArgument,
                  "a group on one node runs without its daemon; ohio-sim models groups spanning at least 2 nodes");
  }
  if (counts.ranks != shape.size()) {
    return Status(Code::kInvalidArgument, "the count matrix is for " + std::to_string(counts.ranks) +
                                              " ranks; the group has " + std::to_string(shape.size()));
  }
  std::shared_ptr<VectorCallSchedule> c(new VectorCallSchedule(shape, settings));
  const uint32_t size = shape.size();
  const uint32_t nodes = shape.nodes();
  c->layout_ = PlanEagerLayout(shape, settings.ssb_bytes, settings.srb_bytes);
  // Each rank's buffers packed in rank order: displacements place bytes, they never size a copy.
  c->send_counts_.resize(size);
  c->send_displs_.resize(size);
  c->recv_displs_.resize(size);
  for (uint32_t r = 0; r < size; ++r) {
    size_t sent = 0, received = 0;
    for (uint32_t j = 0; j < size; ++j) {
      c->send_counts_[r].push_back(counts.at(r, j));
      c->send_displs_[r].push_back(sent);
      c->recv_displs_[r].push_back(received);
      sent += counts.at(r, j);
      received += counts.at(j, r);
    }
  }
  c->tables_.resize(nodes);
  c->plans_.resize(nodes);
  c->staged_.assign(nodes, false);
  uint32_t most_stream_rounds = 0;
  std::vector<bool> cube_fits(nodes, false);
  const uint64_t cap = VectorCubeBlockCap(shape, c->layout_, settings.table);
  for (uint32_t n = 0; n < nodes; ++n) {
    std::vector<CountEntry>& t = c->tables_[n];
    for (uint32_t l = 0; l < shape.ppn(n); ++l) {
      const uint32_t r = shape.rank_at(n, l);
      for (uint32_t j = 0; j < size; ++j) t.push_back(CountEntry{counts.at(r, j), c->send_displs_[r][j], counts.at(j, r)});
    }
    VectorRoundPlan& plan = c->plans_[n];
    UpdateVectorRoundPlan(shape, n, c->layout_, t.data(), &plan);
    if (!plan.stageable) {
      return Status(Code::kNotSupported, "the part of node " + std::to_string(n) + " would take more than " +
                                             std::to_string(kMaxVectorStreamRounds) +
                                             " stream rounds, which ohiod does not serve");
    }
    c->staged_[n] = !plan.fits;
    if (!plan.fits) most_stream_rounds = std::max(most_stream_rounds, plan.stream_rounds);
    // As VectorRound::PlanPart: one block per other node, each within the cap.
    cube_fits[n] = cap != 0 && plan.fits;
    for (const Put& p : plan.puts) cube_fits[n] = cube_fits[n] && p.bytes <= cap;
  }
  c->pairwise_rounds_ = most_stream_rounds > 0 ? most_stream_rounds : 1;
  c->cube_ = tries_cube && cap != 0;
  if (c->cube_) {
    // The "void" flag ORed along the messages as the digest is summed (VectorCubeInboxes):
    // step k's message carries its sender's own flag and those of its inboxes 0..k-1.
    const uint32_t steps = BruckRounds(nodes);
    c->cube_void_.assign(nodes, std::vector<bool>(steps + 1, false));
    for (uint32_t n = 0; n < nodes; ++n) c->cube_void_[n][0] = !cube_fits[n];
    for (uint32_t k = 0; k < steps; ++k) {
      for (uint32_t n = 0; n < nodes; ++n) {
        c->cube_void_[n][k + 1] = c->cube_void_[n][k] || c->cube_void_[BruckSenderTo(nodes, n, k)][k];
      }
    }
    c->cube_again_ = c->cube_void_[0][steps];
  }
  // A hypercube that carried the call keeps the next on it; one that went again does not; a
  // pairwise first round's headers tell every node whether every part would have fitted one.
  if (c->cube_ && !c->cube_again_) {
    c->next_tries_cube_ = true;
  } else {
    c->next_tries_cube_ = std::all_of(cube_fits.begin(), cube_fits.end(), [](bool f) { return f; });
  }
  return c;
}

uint64_t VectorCallSchedule::FirstCopyIn(uint32_t node, uint32_t local) const {
  const uint32_t r = shape_.rank_at(node, local);
  std::vector<CopySpan> spans;
  if (VectorRowFits(shape_, CountsOf(node).of(local), VectorRegionBytes(shape_, layout_, node))) {
    PlanVectorCopyIn(shape_, send_counts_[r].data(), send_displs_[r].data(), &spans);
  } else {
    PlanVectorStreamCopyIn(shape_, layout_, node, 0, send_counts_[r].data(), send_displs_[r].data(), &spans);
  }
  return SpanBytes(spans);
}

uint64_t VectorCallSchedule::CubeMessageBytes(uint32_t node, uint32_t k) const {
  const uint32_t nodes = shape_.nodes();
  uint64_t bytes = 0;
  // Index j on this node before step k: the block from BruckBehind(node, j mod 2^k) to the node
  // j ahead of that one (shm/plan/vector_cube.h); its size is its pairwise put's.
  for (uint32_t slot = 0; slot < VectorCubeBlocksInStep(nodes, k); ++slot) {
    const uint32_t j = VectorCubeIndexAt(slot, k);
    const uint32_t source = BruckBehind(nodes, node, j & ((1u << k) - 1));
    const uint32_t dest = BruckAhead(nodes, source, j);
    bytes += VectorSendBlockBytes(shape_, source, CountsOf(source), dest);
  }
  return bytes;
}

NodeRound VectorCallSchedule::PlanCube(uint32_t node) const {
  const uint32_t nodes = shape_.nodes();
  const uint32_t ppn = shape_.ppn(node);
  NodeRound r;
  r.kind = RoundKind::kHypercube;
  r.internode = InterNodeAlgorithm::kHypercube;
  r.publish_together = true;  // the counts are known to agree only once every inbox is in
  for (uint32_t k = 0; k < BruckRounds(nodes); ++k) {
    const bool is_void = cube_void_[node][k];
    const uint64_t payload = is_void ? 0 : CubeMessageBytes(node, k);
    r.puts.push_back({BruckAhead(nodes, node, 1u << k), k, 0, k, payload,
                      is_void ? kEagerHeaderBytes : payload + VectorCubeLineBytes(nodes)});
    for (uint32_t slot = 0; slot < VectorCubeFinalSlots(nodes, k); ++slot) {
      const uint32_t source = BruckBehind(nodes, node, VectorCubeIndexAt(slot, k));
      r.deliveries.push_back(
          {source, k, cube_again_ ? 0 : VectorRecvBlockBytes(shape_, node, CountsOf(node), source)});
    }
  }
  r.copy_in.resize(ppn);
  r.copy_on_node.assign(ppn, 0);
  r.copy_out.assign(r.deliveries.size(), std::vector<uint64_t>(ppn, 0));
  std::vector<CopySpan> spans;
  for (uint32_t l = 0; l < ppn; ++l) {
    r.copy_in[l] = FirstCopyIn(node, l);
    // A call that goes again carried nothing a rank reads.
    if (cube_again_) continue;
    const size_t* recv_at = recv_displs_[shape_.rank_at(node, l)].data();
    PlanVectorCopyOutOnNode(shape_, node, l, layout_, CountsOf(node), recv_at, &spans);
    r.copy_on_node[l] = SpanBytes(spans);
    for (size_t d = 0; d < r.deliveries.size(); ++d) {
      PlanVectorCopyOutBlock(shape_, node, l, CountsOf(node), r.deliveries[d].source, recv_at, &spans);
      r.copy_out[d][l] = SpanBytes(spans);
    }
  }
  return r;
}

NodeRound VectorCallSchedule::PlanPairwise(uint32_t node, uint32_t part) const {
  const uint32_t ppn = shape_.ppn(node);
  const NodeCounts counts = CountsOf(node);
  NodeRound r;
  r.kind = RoundKind::kEager;
  r.internode = InterNodeAlgorithm::kPairwise;
  r.publish_together = true;  // VectorRound publishes only once every node's digest is in
  std::vector<Put> puts;
  std::vector<Delivery> deliveries;
  if (part == 0) {
    puts = plans_[node].puts;
    deliveries = plans_[node].deliveries;
  } else {
    // As VectorRound::PlanPart: only the nodes whose part streams put data.
    PlanVectorStreamPuts(shape_, node, layout_, counts, part, &puts);
    if (!staged_[node]) {
      for (Put& p : puts) p.bytes = 0;
    }
    PlanVectorStreamDeliveries(shape_, node, layout_, counts, part, &deliveries);
    for (Delivery& d : deliveries) {
      if (!staged_[d.source]) d.bytes = 0;
    }
  }
  for (const Put& p : puts) r.puts.push_back({p.dest, node, 0, 0, p.bytes, p.bytes + kEagerHeaderBytes});
  for (const Delivery& d : deliveries) r.deliveries.push_back({d.source, d.source, d.bytes});
  r.copy_in.assign(ppn, 0);
  r.copy_on_node.assign(ppn, 0);
  r.copy_out.assign(deliveries.size(), std::vector<uint64_t>(ppn, 0));
  std::vector<CopySpan> spans;
  for (uint32_t l = 0; l < ppn; ++l) {
    const uint32_t rank = shape_.rank_at(node, l);
    const size_t* recv_at = recv_displs_[rank].data();
    // As ohiod's ranks fill and drain a vector round (nonblocking_across_nodes_alltoallv.cc):
    // the first round carries whole the parts that do not stream and stream round 0 of the
    // others; a stream round only the chunks of those that do.
    if (part == 0) {
      r.copy_in[l] = FirstCopyIn(node, l);
    } else if (staged_[node]) {
      PlanVectorStreamCopyIn(shape_, layout_, node, part, send_counts_[rank].data(), send_displs_[rank].data(), &spans);
      r.copy_in[l] = SpanBytes(spans);
    }
    if (staged_[node]) {
      PlanVectorStreamCopyOutOnNode(shape_, node, l, layout_, counts, part, recv_at, &spans);
      r.copy_on_node[l] = SpanBytes(spans);
    } else if (part == 0) {
      PlanVectorCopyOutOnNode(shape_, node, l, layout_, counts, recv_at, &spans);
      r.copy_on_node[l] = SpanBytes(spans);
    }
    for (size_t d = 0; d < deliveries.size(); ++d) {
      const uint32_t source = deliveries[d].source;
      if (staged_[source]) {
        PlanVectorStreamCopyOutBlock(shape_, node, l, layout_, counts, source, part, recv_at, &spans);
      } else if (part == 0) {
        PlanVectorCopyOutBlock(shape_, node, l, counts, source, recv_at, &spans);
      } else {
        continue;
      }
      r.copy_out[d][l] = SpanBytes(spans);
    }
  }
  return r;
}

NodeRound VectorCallSchedule::Plan(uint32_t node, uint64_t round) const {
  if (cube_ && round == 0) return PlanCube(node);
  return PlanPairwise(node, static_cast<uint32_t>(round - (cube_ ? 1 : 0)));
}

}  // namespace ohio::sim
