#include "daemon/control/hand_back_pages.h"

#include <utility>

namespace ohio {

Result<int> HandBackPages::Open(int connection) {
  auto page = HandBackPage::Create();
  if (!page.ok()) return page.status();
  const int fd = page.value().ReleaseDescriptor();
  const std::lock_guard<std::mutex> lock(mu_);
  Entry& e = pages_[connection];
  FoldOne(e);  // a descriptor number reused: the old page's last counts, if any were left
  e = Entry{std::move(page).value(), {}};
  return fd;
}

void HandBackPages::Close(int connection) {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = pages_.find(connection);
  if (it == pages_.end()) return;
  FoldOne(it->second);
  pages_.erase(it);
}

void HandBackPages::Fold() {
  const std::lock_guard<std::mutex> lock(mu_);
  for (auto& [connection, e] : pages_) FoldOne(e);
}

void HandBackPages::FoldOne(Entry& e) {
  if (!e.page.mapped()) return;
  for (size_t f = 0; f < kHandedBackFunctions; ++f) {
    for (size_t r = 0; r < kHandBackReasons; ++r) {
      const uint64_t now = e.page.Read(f, r);
      // The client's own page: a count it set back adds nothing, and nothing is taken away.
      if (now <= e.folded[f][r]) continue;
      (*counts_)[f][r].fetch_add(now - e.folded[f][r], std::memory_order_relaxed);
      e.folded[f][r] = now;
    }
  }
}

}  // namespace ohio
