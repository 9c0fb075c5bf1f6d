#include "daemon/exchange/eager_round.h"

namespace ohio {

void EagerRound::Plan() {
  if (plan_.bytes_per_rank != s_.bytes_per_rank) {
    plan_.bytes_per_rank = s_.bytes_per_rank;
    plan_.puts = PlanEagerPuts(s_.shape, s_.algo, s_.node, s_.layout, s_.bytes_per_rank);
    plan_.deliveries = PlanEagerDeliveries(s_.shape, s_.node, s_.layout, s_.bytes_per_rank);
  }
  s_.puts = &plan_.puts;
  s_.deliveries = &plan_.deliveries;
}

bool EagerRound::EagerCredit(uint32_t node) const {
  // A peer's ROUND_READY for this round, or (unless the round before was announced and used
  // the whole SRB) anything it said about the round before: its ranks were through with the
  // half this round lands in.
  if (RoundAtLeast(s_.last_ready[node], s_.round)) return true;
  return !s_.after_announced &&
         (s_.round == 1 || s_.after_hypercube || RoundAtLeast(s_.last_heard[node], s_.round - 1));
}

bool EagerRound::PostEager() {
  bool changed = false;
  for (uint32_t i = 0; i < s_.puts->size(); ++i) {
    if (s_.DirectWindowFull()) break;
    if (s_.put_posted[i] || !EagerCredit((*s_.puts)[i].dest)) continue;
    s_.Post((*s_.puts)[i], i, true);
    changed = true;
  }
  return changed;
}

void EagerRound::PublishLanded() {
  // Only blocks whose header carries this node's M: a rank may copy those out whatever the
  // round's verdict turns out to be.
  while (s_.delivered < s_.deliveries->size()) {
    const Heard& h = s_.HeardOf((*s_.deliveries)[s_.delivered].source, s_.round);
    if (!h.data || h.opted_out || h.bytes_per_rank != s_.bytes_per_rank) break;
    ++s_.delivered;
  }
}

bool EagerRound::Progress(uint32_t) {
  const uint32_t before = s_.delivered;
  const bool changed = PostEager();
  PublishLanded();
  return changed || s_.delivered != before;
}

bool EagerRound::complete() const {
  if (!s_.agreed) return false;
  return s_.posted == s_.puts->size() && (s_.error || s_.delivered == s_.deliveries->size());
}

}  // namespace ohio
