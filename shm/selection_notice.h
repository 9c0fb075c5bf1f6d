// The selection notice: one page ohiod shares, read-only, with every client of the node, holding
// the generation of the selection table it gives new groups (daemon/ops/selection_policy.h). A
// client takes the table with its hello and decides a new communicator's calls by it before
// any group exists (client/mpi/mpi_shim_state.h SetUp); a load from this page then tells it,
// without a system call, whether a SIGHUP has given new groups another table since, and only
// then does it ask ohiod for the table again.
//
// The page is a sealed memfd the daemon maps writable once, before sealing it against every
// later writable mapping (F_SEAL_FUTURE_WRITE): a client, whoever its user, can map it to read
// and nothing else, so no user can make another's processes read a wrong generation.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/status.h"
#include "shm/shared_page.h"

namespace ohio {

class SelectionNotice {
 public:
  static constexpr uint64_t kMagic = 0x6f68696f73656c31;  // "ohiosel1"

  // The daemon's side: a new page at generation `generation`, sealed.
  static Result<SelectionNotice> Create(uint64_t generation);
  // Publishes a new generation (a SIGHUP that changed the table). The daemon's page only.
  void Publish(uint64_t generation) { words()->generation.store(generation, std::memory_order_release); }
  // The descriptor handed to clients with their hello (-1 on a client, or where none was made).
  int fd() const { return page_.fd(); }

  // A client's side: maps the page `fd` (a descriptor from the hello, closed here either way) to
  // read. kProtocol if it is not a selection notice.
  static Result<SelectionNotice> Map(int fd);

  // The generation of the table new groups get now.
  uint64_t generation() const { return words()->generation.load(std::memory_order_acquire); }

 private:
  struct Words {
    uint64_t magic;
    std::atomic<uint64_t> generation;
  };
  Words* words() const { return static_cast<Words*>(page_.data()); }

  SharedPage page_;
};

}  // namespace ohio
