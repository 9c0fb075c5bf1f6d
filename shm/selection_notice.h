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

namespace ohio {

class SelectionNotice {
 public:
  static constexpr uint64_t kMagic = 0x6f68696f73656c31;  // "ohiosel1"
  static constexpr size_t kBytes = 4096;

  SelectionNotice() = default;
  ~SelectionNotice();
  SelectionNotice(SelectionNotice&& other) noexcept;
  SelectionNotice& operator=(SelectionNotice&& other) noexcept;
  SelectionNotice(const SelectionNotice&) = delete;
  SelectionNotice& operator=(const SelectionNotice&) = delete;

  // The daemon's side: a new page at generation `generation`, sealed.
  static Result<SelectionNotice> Create(uint64_t generation);
  // Publishes a new generation (a SIGHUP that changed the table). The daemon's page only.
  void Publish(uint64_t generation);
  // The descriptor handed to clients with their hello. The daemon's page only.
  int fd() const { return fd_; }

  // A client's side: maps the page `fd` (a descriptor from the hello, closed here either way) to
  // read. kProtocol if it is not a selection notice.
  static Result<SelectionNotice> Map(int fd);

  // The generation of the table new groups get now.
  uint64_t generation() const { return page_->generation.load(std::memory_order_acquire); }

 private:
  struct Page {
    uint64_t magic;
    std::atomic<uint64_t> generation;
  };
  void Reset();

  int fd_ = -1;
  Page* page_ = nullptr;
};

}  // namespace ohio
