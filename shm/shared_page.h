// One page of memory ohiod shares with a client through a memfd: made and sealed by the daemon,
// handed over as a descriptor with a control reply, mapped by the client. The pages that use it
// say what they hold and who may write (shm/selection_notice.h, shm/hand_back_page.h).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "common/status.h"

namespace ohio {

class SharedPage {
 public:
  static constexpr size_t kBytes = 4096;

  SharedPage() = default;
  ~SharedPage();
  SharedPage(SharedPage&& other) noexcept;
  SharedPage& operator=(SharedPage&& other) noexcept;
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;

  // The daemon's side: a zeroed page named `name`, mapped to read and write. `seals` are added
  // after the mapping (F_SEAL_FUTURE_WRITE then leaves this mapping the only writable one).
  static Result<SharedPage> Create(const std::string& name, int seals);
  // A client's side: maps `fd` (closed here either way) with `prot`; `what` names the page in
  // errors ("ohiod's selection notice"). kProtocol if it is not one page.
  static Result<SharedPage> Map(int fd, int prot, const std::string& what);

  void* data() const { return base_; }
  bool mapped() const { return base_ != nullptr; }
  int fd() const { return fd_; }
  // Hands the descriptor to the caller, who closes it; the mapping stays.
  int ReleaseDescriptor() { return std::exchange(fd_, -1); }

 private:
  void Reset();
  // Closes the descriptor; the mapping stays.
  void CloseDescriptor();

  int fd_ = -1;
  void* base_ = nullptr;
};

}  // namespace ohio
