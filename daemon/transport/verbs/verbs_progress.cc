// VerbsTransport's progress: a pass of the engine (completions settled by the dispatcher, the
// lines, the UD service and the moves tended, events out), and what must hold before it sleeps
// (every completion queue armed, nothing left to take). See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

#include <spdlog/spdlog.h>

namespace ohio {

void VerbsTransport::Poll(std::vector<TransportEvent>* out) {
  outbox_->TakeWake();
  std::lock_guard<std::mutex> lock(mu_);
  outbox_->BeginPass();
  completions_->Poll();
  const auto now = std::chrono::steady_clock::now();
  lines_->Tend(now);
  datagrams_->Tend(now);
  moves_->Tend(now);
  outbox_->EndPass();
  outbox_->TakeAll(out);
}

bool VerbsTransport::PrepareToSleep() {
  const bool woken = outbox_->DrainWake();
  std::lock_guard<std::mutex> lock(mu_);
  if (woken || !outbox_->empty()) return false;
  outbox_->BeginPass();
  for (const auto& r : rails_) {
    if (Status armed = r->ArmCompletions(); !armed.ok()) {
      // Without an armed queue the channel would never fire: stay awake rather than miss work.
      spdlog::warn("verbs: {}", armed.message());
      outbox_->EndPass();
      return false;
    }
  }
  // What completed before the queues were armed raised no event: take it now, not after a sleep.
  const bool arrived = completions_->Poll() > 0;
  const bool can_sleep = datagrams_->ArmTimer();
  outbox_->EndPass();
  return can_sleep && !arrived && outbox_->empty();
}

}  // namespace ohio
