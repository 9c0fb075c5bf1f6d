// How ohiod cuts a nonblocking call on one node into slices that fit a bounded staging area
// (nonblocking_alltoall.h). Pure planning: no memory is touched here.
//
// The pieces of a call are its ordered pairs: src's bytes for dst, read from src's send buffer
// and written into dst's receive buffer. A slice takes whole unordered pairs {a, b}, both
// directions at once, or a chunk of one (the same byte range of both directions), and all of a
// slice's pieces are read before any is written. That is what makes in place safe: where dst
// passed one buffer for both, the bytes of a -> b land exactly where b -> a lay, and b -> a was
// read in the same slice. No other piece is overwritten, and no piece is read twice.
//
// A slice takes at most `capacity` bytes, so ohiod holds at most that much of a call at once
// whatever its size, and the engine can serve other groups between slices; each slice may be
// asked to be smaller still.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ohio {

// One chunk of one unordered pair: bytes [offset, offset + length) of a -> b and of b -> a
// (for a == b, of the one piece). A direction shorter than offset + length gives what it has.
struct PairChunk {
  uint32_t a = 0;
  uint32_t b = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class PairBatches {
 public:
  // `ranks` ranks; `bytes(src, dst)` the length of src's piece for dst. `capacity` >= 2.
  PairBatches(uint32_t ranks, std::function<uint64_t(uint32_t, uint32_t)> bytes, uint64_t capacity);

  // The next slice's chunks into *out (cleared first), at most `most` bytes of them (and at
  // most the capacity); false once the call is all sliced.
  bool Next(std::vector<PairChunk>* out, uint64_t most = ~uint64_t{0});
  // Whether every byte has been sliced (Next would give nothing more).
  bool Finished();
  // Bytes of the pieces a chunk covers, in each direction.
  uint64_t Forward(const PairChunk& c) const { return Part(bytes_(c.a, c.b), c); }
  uint64_t Backward(const PairChunk& c) const { return c.a == c.b ? 0 : Part(bytes_(c.b, c.a), c); }

 private:
  static uint64_t Part(uint64_t piece, const PairChunk& c) {
    if (piece <= c.offset) return 0;
    return piece - c.offset < c.length ? piece - c.offset : c.length;
  }
  void NextPair();
  // Steps past the pairs with nothing left to move; the bytes of the pair it stops at.
  void SkipEmptyPairs(uint64_t* forward, uint64_t* backward);

  uint32_t ranks_;
  std::function<uint64_t(uint32_t, uint32_t)> bytes_;
  uint64_t capacity_;
  uint32_t a_ = 0;
  uint32_t b_ = 0;
  uint64_t offset_ = 0;  // of the pair {a_, b_} already planned
};

}  // namespace ohio
