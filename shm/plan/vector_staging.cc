#include "shm/plan/vector_staging.h"

#include <algorithm>
#include <cstring>

#include "shm/segment_layout.h"

namespace ohio {
namespace {

// Calls take(i, offset in piece i, offset in the chunk, bytes) for every piece of a stream that
// stream round s's chunk [s·slice, (s+1)·slice) overlaps; piece(i) is the bytes of piece i.
template <typename PieceBytes, typename Take>
void ForChunkPieces(uint32_t pieces, uint64_t slice, uint64_t s, PieceBytes piece, Take take) {
  const uint64_t lo = s * slice, hi = lo + slice;
  uint64_t at = 0;
  for (uint32_t i = 0; i < pieces && at < hi; ++i) {
    const uint64_t bytes = piece(i);
    const uint64_t from = std::max(at, lo), to = std::min(at + bytes, hi);
    if (from < to) take(i, from - at, from - lo, to - from);
    at += bytes;
  }
}

// Where in its region a rank with send table `table` staged its stream to `dest` for stream
// round `s`: in the call's first round (s = 0) a row that fits the region was staged whole.
uint64_t StreamAt(const GroupShape& shape, const CountEntry* table, uint32_t dest, uint64_t slice, uint64_t s,
                  bool whole_row) {
  return s == 0 && whole_row ? VectorRowOffset(shape, table, dest) : dest * slice;
}

// What rank `from` sends the ranks of `node`, by what they expect of it.
uint64_t ExpectedStreamBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts, uint32_t from) {
  uint64_t bytes = 0;
  for (uint32_t r = 0; r < shape.ppn(node); ++r) bytes += counts.of(r)[from].recv_bytes;
  return bytes;
}

}  // namespace

uint64_t VectorStreamSlice(const GroupShape& shape, const EagerLayout& layout, uint32_t node) {
  const uint64_t by_region = VectorRegionBytes(shape, layout, node) / shape.nodes();
  const uint64_t by_slot = layout.slot < kEagerHeaderBytes ? 0 : (layout.slot - kEagerHeaderBytes) / shape.ppn(node);
  const uint64_t slice = std::min(by_region, by_slot);
  return slice >= 64 ? slice - slice % 64 : slice;
}

uint64_t VectorStreamChunk(uint64_t stream_bytes, uint64_t slice, uint64_t s) {
  const uint64_t lo = s * slice;
  return lo >= stream_bytes ? 0 : std::min(slice, stream_bytes - lo);
}

bool VectorStreamRounds(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const NodeCounts& counts,
                        uint64_t* rounds) {
  const uint64_t slice = VectorStreamSlice(shape, layout, node);
  const uint64_t limit = slice > ~uint64_t{0} / kMaxVectorStreamRounds ? ~uint64_t{0} : slice * kMaxVectorStreamRounds;
  *rounds = 0;
  for (uint32_t l = 0; l < shape.ppn(node); ++l) {
    const CountEntry* t = counts.of(l);
    for (uint32_t j = 0; j < shape.nodes(); ++j) {
      uint64_t stream = 0;
      for (uint32_t i = 0; i < shape.ppn(j); ++i) {
        const uint64_t bytes = t[shape.rank_at(j, i)].bytes;
        if (bytes > limit - stream) return false;
        stream += bytes;
      }
      if (stream != 0) *rounds = std::max(*rounds, stream / slice + (stream % slice != 0 ? 1 : 0));
    }
  }
  return true;
}

void PlanVectorStreamCopyIn(const GroupShape& shape, const EagerLayout& layout, uint32_t node, uint64_t s,
                            const size_t* send_counts, const size_t* send_displs, std::vector<CopySpan>* spans) {
  spans->clear();
  const uint64_t slice = VectorStreamSlice(shape, layout, node);
  for (uint32_t j = 0; j < shape.nodes(); ++j) {
    ForChunkPieces(
        shape.ppn(j), slice, s, [&](uint32_t i) { return send_counts[shape.rank_at(j, i)]; },
        [&](uint32_t i, uint64_t in_piece, uint64_t in_chunk, uint64_t bytes) {
          spans->push_back({send_displs[shape.rank_at(j, i)] + in_piece, j * slice + in_chunk, bytes});
        });
  }
}

void PlanVectorStreamPuts(const GroupShape& shape, uint32_t node, const EagerLayout& layout, const NodeCounts& counts,
                          uint64_t s, std::vector<Put>* puts) {
  const uint64_t region = VectorRegionBytes(shape, layout, node);
  const uint64_t slice = VectorStreamSlice(shape, layout, node);
  // Whether each rank staged its row whole, once per rank: only round 0 asks, once per count
  // change (the first round's puts are kept with the round's plan).
  std::vector<bool> whole_row;
  for (uint32_t l = 0; s == 0 && l < shape.ppn(node); ++l) whole_row.push_back(VectorRowFits(shape, counts.of(l), region));
  PlanVectorPutsOf(
      shape, node, layout,
      [&](uint32_t l, uint32_t dest) {
        const CountEntry* t = counts.of(l);
        return SsbPiece{l * region + StreamAt(shape, t, dest, slice, s, s == 0 && whole_row[l]),
                        VectorStreamChunk(VectorRowBytesTo(shape, t, dest), slice, s)};
      },
      puts);
}

void PlanVectorStreamDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                const NodeCounts& counts, uint64_t s, std::vector<Delivery>* deliveries) {
  *deliveries = PlanEagerDeliveries(shape, node, layout, 0);
  for (Delivery& d : *deliveries) {
    const uint64_t slice = VectorStreamSlice(shape, layout, d.source);
    for (uint32_t l = 0; l < shape.ppn(d.source); ++l) {
      d.bytes += VectorStreamChunk(ExpectedStreamBytes(shape, node, counts, shape.rank_at(d.source, l)), slice, s);
    }
  }
}

void PlanVectorStreamCopyOutBlock(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                                  const NodeCounts& counts, uint32_t source, uint64_t s, const size_t* recv_displs,
                                  std::vector<CopySpan>* spans) {
  spans->clear();
  const uint64_t slice = VectorStreamSlice(shape, layout, source);
  uint64_t at = 0;
  for (uint32_t l = 0; l < shape.ppn(source); ++l) {
    const uint32_t from = shape.rank_at(source, l);
    ForChunkPieces(
        shape.ppn(node), slice, s, [&](uint32_t r) { return counts.of(r)[from].recv_bytes; },
        [&](uint32_t r, uint64_t in_piece, uint64_t in_chunk, uint64_t bytes) {
          if (r == local) spans->push_back({at + in_chunk, recv_displs[from] + in_piece, bytes});
        });
    at += VectorStreamChunk(ExpectedStreamBytes(shape, node, counts, from), slice, s);
  }
}

void PlanVectorStreamCopyOutOnNode(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                                  const NodeCounts& counts, uint64_t s, const size_t* recv_displs,
                                  std::vector<CopySpan>* spans) {
  spans->clear();
  const uint64_t region = VectorRegionBytes(shape, layout, node);
  const uint64_t slice = VectorStreamSlice(shape, layout, node);
  for (uint32_t l = 0; l < shape.ppn(node); ++l) {
    const CountEntry* t = counts.of(l);
    const uint64_t at = l * region + StreamAt(shape, t, node, slice, s, s == 0 && VectorRowFits(shape, t, region));
    ForChunkPieces(
        shape.ppn(node), slice, s, [&](uint32_t r) { return t[shape.rank_at(node, r)].bytes; },
        [&](uint32_t r, uint64_t in_piece, uint64_t in_chunk, uint64_t bytes) {
          if (r == local) spans->push_back({at + in_chunk, recv_displs[shape.rank_at(node, l)] + in_piece, bytes});
        });
  }
}

VectorStreams VectorStreamsOf(uint64_t vector_streamed, uint32_t k) {
  if ((vector_streamed >> 32) != k) return VectorStreams{};
  VectorStreams streams;
  streams.again = (vector_streamed & kVectorCallGoesAgain) != 0;
  if ((vector_streamed & kVectorSomePartStreams) == 0) return streams;
  streams.any = true;
  streams.rounds = static_cast<uint32_t>(vector_streamed & (kVectorCallGoesAgain - 1));
  streams.own_staged = (vector_streamed & kVectorOwnPartStaged) != 0;
  return streams;
}

void PlanStreamingNodes(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const uint8_t* srb_half,
                        const VectorStreams& streams, std::vector<bool>* streaming) {
  streaming->assign(shape.nodes(), false);
  for (uint32_t n = 0; streams.any && n < shape.nodes(); ++n) {
    if (n == node) {
      (*streaming)[n] = streams.own_staged;
      continue;
    }
    EagerHeader h;
    std::memcpy(&h, srb_half + EagerSlotOffset(layout, node, n, 0), sizeof(h));
    (*streaming)[n] = (h.flags & kEagerVectorStaged) != 0;
  }
}

}  // namespace ohio
