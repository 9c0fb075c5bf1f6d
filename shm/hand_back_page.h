// A client's hand-back page: one page per connection, which ohiod creates at the hello and the
// client maps, where the client counts the calls its communicators without a group handed to
// the MPI library (by function and reason, shm/handed_back.h). A communicator that has joined a
// group counts in the group's segment instead; one whose join is deferred (its calls all handed
// back so far) has none, and counting here costs it no system call and no message. ohiod folds
// the pages into its counters when it is asked for them and when the connection closes.
//
// The page is sealed against shrinking and growing, so a client cannot truncate it under the
// daemon's mapping; what a client writes there is only ever its own counts, which ohiod adds as
// they grow (a count that goes down adds nothing).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "shm/handed_back.h"
#include "shm/shared_page.h"

namespace ohio {

class HandBackPage {
 public:
  static constexpr uint64_t kMagic = 0x6f68696f68626b31;  // "ohiohbk1"

  // The daemon's side: a new page, zeroed and sealed; its descriptor (ReleaseDescriptor) is to
  // be handed to the client.
  static Result<HandBackPage> Create();
  // A client's side: maps the page `fd` (a descriptor from the hello, closed here either way).
  // kProtocol if it is not a hand-back page.
  static Result<HandBackPage> Map(int fd);

  bool mapped() const { return page_.mapped(); }
  // Hands the descriptor to the caller, who closes it once the client has its copy; the daemon
  // keeps the mapping alone.
  int ReleaseDescriptor() { return page_.ReleaseDescriptor(); }

  // The client counts `calls` more of `function` handed back for `reason` (both in range).
  void Add(size_t function, size_t reason, uint64_t calls) {
    words()->calls[function][reason].fetch_add(calls, std::memory_order_relaxed);
  }
  uint64_t Read(size_t function, size_t reason) const {
    return words()->calls[function][reason].load(std::memory_order_relaxed);
  }

 private:
  struct Words {
    uint64_t magic;
    std::atomic<uint64_t> calls[kHandedBackFunctions][kHandBackReasons];
  };
  static_assert(sizeof(Words) <= SharedPage::kBytes, "one page");
  Words* words() const { return static_cast<Words*>(page_.data()); }

  SharedPage page_;
};

}  // namespace ohio
