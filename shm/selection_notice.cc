#include "shm/selection_notice.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

namespace ohio {

SelectionNotice::~SelectionNotice() { Reset(); }

SelectionNotice::SelectionNotice(SelectionNotice&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), page_(std::exchange(other.page_, nullptr)) {}

SelectionNotice& SelectionNotice::operator=(SelectionNotice&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    page_ = std::exchange(other.page_, nullptr);
  }
  return *this;
}

void SelectionNotice::Reset() {
  if (page_ != nullptr) munmap(page_, kBytes);
  if (fd_ >= 0) close(fd_);
  page_ = nullptr;
  fd_ = -1;
}

Result<SelectionNotice> SelectionNotice::Create(uint64_t generation) {
  SelectionNotice n;
  n.fd_ = memfd_create("ohiod-selection-notice", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (n.fd_ < 0) return SystemError("memfd_create of the selection notice", errno);
  if (ftruncate(n.fd_, static_cast<off_t>(kBytes)) != 0) return SystemError("ftruncate of the selection notice", errno);
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, n.fd_, 0);
  if (p == MAP_FAILED) return SystemError("mmap of the selection notice", errno);
  n.page_ = new (p) Page{kMagic, {generation}};
  // This mapping stays writable; no later one can be (nor a write(2), nor a resize).
  if (fcntl(n.fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    return SystemError("sealing the selection notice", errno);
  }
  return n;
}

void SelectionNotice::Publish(uint64_t generation) { page_->generation.store(generation, std::memory_order_release); }

Result<SelectionNotice> SelectionNotice::Map(int fd) {
  SelectionNotice n;
  n.fd_ = fd;
  struct stat st = {};
  if (fstat(fd, &st) != 0) return SystemError("fstat of ohiod's selection notice", errno);
  if (!S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(kBytes)) {
    return Status(Code::kProtocol, "ohiod's selection notice is not a page of " + std::to_string(kBytes) + " bytes");
  }
  void* p = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return SystemError("mmap of ohiod's selection notice", errno);
  n.page_ = static_cast<Page*>(p);
  close(std::exchange(n.fd_, -1));  // the mapping is all a client keeps
  if (n.page_->magic != kMagic) return Status(Code::kProtocol, "ohiod's selection notice has the wrong magic number");
  return n;
}

}  // namespace ohio
