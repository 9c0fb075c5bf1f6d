#include "daemon/exchange/vector_cube_round.h"

#include <cstring>
#include <string>

#include "daemon/exchange/wire.h"

namespace ohio {

void VectorCubeRound::Plan() {
  const uint32_t n = s_.shape.nodes();
  const uint64_t stride = BruckInboxStride(n, s_.layout.srb_half);
  inboxes_.Reset(n, stride);
  puts_.clear();
  deliveries_.clear();
  for (uint32_t k = 0; k < BruckRounds(n); ++k) {
    Put p;
    p.dest = BruckAhead(n, s_.node, 1u << k);
    p.step = k;
    p.srb_offset = k * stride;
    puts_.push_back(p);
    // Inbox k ends the journey of the blocks from the nodes whose distance's highest bit is k.
    for (uint32_t slot = 0; slot < VectorCubeFinalSlots(n, k); ++slot) {
      Delivery d;
      d.source = BruckBehind(n, s_.node, VectorCubeIndexAt(slot, k));
      d.step = k;
      deliveries_.push_back(d);
    }
  }
  s_.puts = &puts_;
  s_.deliveries = &deliveries_;
}

void VectorCubeRound::Gather(uint32_t k, const uint8_t* ssb, const uint8_t* srb) {
  const uint32_t n = s_.shape.nodes();
  const uint32_t parity = s_.round & 1;
  uint8_t* line = s_.segment->cube_out(s_.round) + k * VectorCubeLineBytes(n);
  // A node's own part that does not fit, or any inbox's flag: headers only from now on.
  const bool is_void = inboxes_.VoidBefore(k, !call_.cube_fits);
  const auto* out = reinterpret_cast<const EagerHeader*>(s_.segment->header()->eager_out[parity]);
  const EagerHeader h{kEagerHeaderMagic, s_.round, kVectorBytes, is_void ? kEagerVectorCubeVoid : 0u, s_.node,
                      out->begun_ns, inboxes_.Partial(k, s_.count_digest), 0, 0,
                      inboxes_.Tail(k, s_.count_digest), {}};
  std::memcpy(line, &h, sizeof(h));
  std::vector<LocalPiece>& pieces = s_.pieces;
  pieces.clear();
  if (is_void) {
    pieces.push_back({line, kEagerHeaderBytes});
    return;
  }
  pieces.push_back({line, VectorCubeLineBytes(n)});
  auto* table = reinterpret_cast<uint32_t*>(line + kEagerHeaderBytes);
  // Pieces that follow each other in memory go as one (forwarded blocks of one inbox do).
  auto append = [&pieces](const uint8_t* at, uint64_t bytes) {
    if (bytes == 0) return;
    LocalPiece& last = pieces.back();
    if (static_cast<const uint8_t*>(last.base) + last.bytes == at) {
      last.bytes += bytes;
    } else {
      pieces.push_back({at, bytes});
    }
  };
  // This node's own blocks are its pairwise puts' (at most the cap each: the call's cube_fits).
  auto own_put = [this](uint32_t dest) -> const Put& { return call_.plan.puts[call_.plan.put_of_dest[dest]]; };
  PlanVectorCubeMessage(
      inboxes_, n, s_.node, k, table, [&](uint32_t dest) { return own_put(dest).bytes; },
      [&](uint32_t dest) {
        for (const SsbPiece& piece : own_put(dest).pieces) append(ssb + piece.ssb_offset, piece.bytes);
      },
      [&](uint64_t offset, uint64_t bytes) { append(srb + offset, bytes); });
}

bool VectorCubeRound::Land(uint32_t k, const EagerHeader& h, const uint8_t* inbox) {
  if (inboxes_.Land(k, h, inbox)) return true;
  // Its sizes cannot be its blocks': nothing of it is read, and the round stops here.
  halted_ = s_.agreed = true;
  s_.error_code = Code::kProtocol;
  s_.error = "node " + s_.node_names[BruckSenderTo(s_.shape.nodes(), s_.node, k)] + "'s hypercube message of step " +
             std::to_string(k) + " lists more bytes than its inbox holds";
  return false;
}

void VectorCubeRound::AllLanded() {
  const uint32_t steps = static_cast<uint32_t>(puts_.size());
  // Every node's share and flag, summed along the messages: the same on every node.
  const bool again = inboxes_.VoidBefore(steps, !call_.cube_fits) || inboxes_.Total(s_.count_digest) != 0;
  // A call that did not fit, or whose counts disagree, goes again pairwise, which stages what
  // does not fit or names the pair; the next call tries the hypercube once every node's part
  // fits again (VectorRound::Verdict).
  if (again) call_.cube_next = false;
  call_.rounds_in_call = again ? 2 : 1;
  s_.segment->header()->vector_streamed[s_.round & 1].store(
      uint64_t{s_.round} << 32 | (again ? kVectorCallGoesAgain : 0), std::memory_order_relaxed);
}

void VectorCubeRound::Publish() {
  // A call that goes again publishes them too, so that its ranks wake and read the verdict.
  if (inboxes_landed_ == inbox_landed_.size() && !s_.error) s_.delivered = s_.deliveries->size();
}

}  // namespace ohio
