// The hand-back pages of this daemon's client connections (shm/hand_back_page.h): made at each
// hello, folded into the daemon's counts of calls handed to the MPI library when an admin sample
// is taken and when the connection closes. The control thread opens and closes pages; the admin
// service folds: a mutex keeps the two apart (held for bookkeeping and a page's 20 loads).
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>

#include "common/status.h"
#include "shm/hand_back_page.h"
#include "shm/handed_back.h"

namespace ohio {

class HandBackPages {
 public:
  using Counts = std::array<std::array<std::atomic<uint64_t>, kHandBackReasons>, kHandedBackFunctions>;
  explicit HandBackPages(Counts* counts) : counts_(counts) {}

  // A page for the connection `connection` (its socket): the descriptor to hand the client, which
  // the caller closes once sent.
  Result<int> Open(int connection);
  // The connection closed: what its page counted is folded in, and the page goes.
  void Close(int connection);
  // Every open page's counts since the last fold, into the daemon's.
  void Fold();

 private:
  struct Entry {
    HandBackPage page;
    uint64_t folded[kHandedBackFunctions][kHandBackReasons] = {};
  };
  // Under mu_.
  void FoldOne(Entry& e);

  Counts* counts_;
  std::mutex mu_;
  std::map<int, Entry> pages_;
};

}  // namespace ohio
