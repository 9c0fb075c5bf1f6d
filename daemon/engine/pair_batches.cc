#include "daemon/engine/pair_batches.h"

#include <algorithm>
#include <utility>

namespace ohio {

PairBatches::PairBatches(uint32_t ranks, std::function<uint64_t(uint32_t, uint32_t)> bytes, uint64_t capacity)
    : ranks_(ranks), bytes_(std::move(bytes)), capacity_(std::max<uint64_t>(capacity, 2)) {}

void PairBatches::NextPair() {
  offset_ = 0;
  if (++b_ == ranks_) b_ = ++a_;
}

void PairBatches::SkipEmptyPairs(uint64_t* forward, uint64_t* backward) {
  for (; a_ < ranks_; NextPair()) {
    *forward = bytes_(a_, b_);
    *backward = a_ == b_ ? 0 : bytes_(b_, a_);
    if (offset_ < std::max(*forward, *backward)) return;  // else done with the pair, or nothing in it
  }
}

bool PairBatches::Finished() {
  uint64_t forward = 0, backward = 0;
  SkipEmptyPairs(&forward, &backward);
  return a_ >= ranks_;
}

bool PairBatches::Next(std::vector<PairChunk>* out, uint64_t most) {
  out->clear();
  const uint64_t capacity = std::max<uint64_t>(std::min(most, capacity_), 2);
  uint64_t room = capacity;
  for (;;) {
    uint64_t forward = 0, backward = 0;
    SkipEmptyPairs(&forward, &backward);
    if (a_ >= ranks_) break;
    const uint64_t longest = std::max(forward, backward);
    const uint64_t rest = (forward > offset_ ? forward - offset_ : 0) + (backward > offset_ ? backward - offset_ : 0);
    if (rest <= room) {
      out->push_back({a_, b_, offset_, longest - offset_});
      room -= rest;
      NextPair();
      continue;
    }
    // The rest of the pair does not fit: a chunk of it fills the slice, the same range of both
    // directions. Not a sliver, though, behind other pairs: those go alone, this one next time.
    const uint64_t per_direction = a_ == b_ ? room : room / 2;
    if (per_direction == 0 || (!out->empty() && room < capacity / 4)) break;
    PairChunk chunk{a_, b_, offset_, per_direction};
    out->push_back(chunk);
    offset_ += per_direction;
    break;
  }
  return !out->empty();
}

}  // namespace ohio
