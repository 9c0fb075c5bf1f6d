#include "daemon/exchange/announced_round.h"

#include <algorithm>

namespace ohio {

void AnnouncedRound::Plan() {
  puts_.clear();
  deliveries_.clear();
  if (!s_.local_disagree && !s_.local_opt_out && !s_.vector) {
    auto staging = PlanGroupStaging(s_.shape, s_.algo, s_.plan_ssb, s_.plan_srb, s_.bytes_per_rank,
                                    s_.segment->header()->plan_min_slice_bytes);
    if (!staging.ok()) {
      s_.error = staging.status().message();
    } else {
      // Which slice, rows and nodes this round of the call carries: the ranks plan the same.
      const RoundCover cover = staging->cover(round_in_call_);
      puts_ = PlanPuts(s_.shape, s_.algo, s_.node, cover, s_.plan_srb);
      deliveries_ = PlanDeliveries(s_.shape, s_.algo, s_.node, cover, s_.plan_srb);
    }
  }
  s_.puts = &puts_;
  s_.deliveries = &deliveries_;
  credited_ = s_.algo == NodeLevelDesign::kV3 ? std::min<uint32_t>(2, deliveries_.size()) : deliveries_.size();
  s_.SendOwnReady();
  arrived_.assign(deliveries_.size(), false);
}

void AnnouncedRound::OnArrived(uint32_t delivery) {
  if (delivery >= arrived_.size()) return;
  arrived_[delivery] = true;
  while (s_.delivered < deliveries_.size() && arrived_[s_.delivered]) ++s_.delivered;
}

bool AnnouncedRound::PostAnnounced() {
  bool changed = false;
  for (uint32_t i = 0; i < puts_.size(); ++i) {
    if (s_.DirectWindowFull()) break;
    if (s_.put_posted[i]) continue;
    const Put& p = puts_[i];
    const bool credited =
        s_.algo != NodeLevelDesign::kV3 || p.delivery < 2 || s_.HeardOf(p.dest, s_.round).credit > p.delivery;
    if (!credited) continue;
    s_.Post(p, i, false);
    changed = true;
  }
  return changed;
}

bool AnnouncedRound::Progress(uint32_t consumed_by_all) {
  if (!s_.agreed || s_.error) return false;
  bool changed = PostAnnounced();
  // v3: delivery d lands where d-2 was; grant it once every rank has copied d-2 out.
  while (credited_ < deliveries_.size() && consumed_by_all + 1 >= credited_) {
    ExchangeMessage m;
    m.type = ExchangeMessage::Type::kCredit;
    m.round = s_.round;
    m.delivery = credited_;
    s_.SendTo(deliveries_[credited_].source, m);
    ++credited_;
    changed = true;
  }
  return changed;
}

bool AnnouncedRound::complete() const {
  if (!s_.agreed) return false;
  if (s_.error) return s_.in_flight[s_.round & 1] == 0;
  return s_.in_flight[s_.round & 1] == 0 && s_.posted == puts_.size() && s_.delivered == deliveries_.size();
}

}  // namespace ohio
