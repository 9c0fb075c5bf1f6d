#include "daemon/exchange/across_nodes_verdict.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "daemon/exchange/vector_round.h"

namespace ohio {

void AcrossNodesVerdict::Check() {
  if (s_.agreed || !s_.active) return;
  for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
    if (n != s_.node && !s_.HeardOf(n, s_.round).known) return;
  }
  std::map<uint64_t, std::vector<uint32_t>> by_bytes;
  std::vector<uint32_t> split, opted_out_nodes, too_large;
  uint64_t digest_sum = 0;
  // Alltoallv, the call's first round: which nodes' parts did not fit (they stream theirs; the
  // others' came whole in this round), and the most stream rounds any of those needs.
  const bool first = s_.vector && call_.part == 0;
  bool staged = false;
  uint32_t max_stream_rounds = 0;
  bool all_cube_fit = true;  // every node's part would fit a hypercube
  if (first) call_.staged_nodes.assign(s_.shape.nodes(), false);
  for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
    const Heard* h = n == s_.node ? nullptr : &s_.HeardOf(n, s_.round);
    if (first && (h ? h->staged : !call_.plan.fits)) {
      staged = true;
      call_.staged_nodes[n] = true;
      max_stream_rounds = std::max(max_stream_rounds, h ? h->stream_rounds : call_.plan.stream_rounds);
    }
    by_bytes[h ? h->bytes_per_rank : s_.bytes_per_rank].push_back(n);
    if (h ? h->disagree : s_.local_disagree) split.push_back(n);
    if (h ? h->opted_out : s_.local_opt_out) opted_out_nodes.push_back(n);
    if (h ? h->too_large : s_.too_large) too_large.push_back(n);
    digest_sum += h ? h->count_digest : s_.count_digest;
    all_cube_fit = all_cube_fit && (h ? h->cube_fits : call_.cube_fits);
  }
  const bool all_run_it = by_bytes.size() == 1 && split.empty() && opted_out_nodes.empty() && too_large.empty();
  if (s_.vector && s_.hypercube() && all_run_it) {
    // Every node runs this alltoallv (a hypercube node hears them all only when told its M):
    // the verdict is the sums' once the last inbox lands.
    return;
  }
  if (s_.vector && all_run_it) {
    // The verdict needs every node's share of the digest, which rides with its data: a
    // ROUND_READY without a reason (an eager round after an announced one) precedes it.
    for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
      if (n != s_.node && !s_.HeardOf(n, s_.round).data) return;
    }
  }
  s_.agreed = true;
  if (!opted_out_nodes.empty()) {
    // Opting out wins over any size question: every rank hands the call back together.
    std::string nodes;
    for (uint32_t n : opted_out_nodes) nodes += (nodes.empty() ? "" : ",") + s_.node_names[n];
    s_.error_code = Code::kOptedOut;
    s_.error =
        "a rank on node" + std::string(opted_out_nodes.size() > 1 ? "s " : " ") + nodes + " opted out of this alltoall";
    return;
  }
  s_.error_code = Code::kSizeMismatch;
  if (by_bytes.size() == 1 && split.empty()) {
    if (s_.vector) vector_round_.Verdict(too_large, digest_sum, staged, max_stream_rounds, all_cube_fit);
    s_.announced_ok = !s_.eager && !s_.error;
    return;
  }
  if (s_.error) return;
  std::string message = "ranks disagree on the bytes per rank of this alltoall:";
  std::string separator = " ";  // before the next part: the first follows the colon
  if (by_bytes.size() > 1) {
    for (const auto& [bytes, nodes] : by_bytes) {
      message += separator + (bytes == kVectorBytes ? "an alltoallv" : std::to_string(bytes)) + " on node" +
                 (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size(); ++i) message += (i ? "," : "") + s_.node_names[nodes[i]];
      separator = "; ";
    }
  }
  for (uint32_t n : split) {
    message += separator + "node " + s_.node_names[n] + "'s own ranks disagree";
    separator = "; ";
  }
  s_.error = message;
}

}  // namespace ohio
