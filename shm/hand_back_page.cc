#include "shm/hand_back_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

namespace ohio {

HandBackPage::~HandBackPage() { Reset(); }

HandBackPage::HandBackPage(HandBackPage&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), page_(std::exchange(other.page_, nullptr)) {}

HandBackPage& HandBackPage::operator=(HandBackPage&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    page_ = std::exchange(other.page_, nullptr);
  }
  return *this;
}

void HandBackPage::Reset() {
  if (page_ != nullptr) munmap(page_, kBytes);
  CloseDescriptor();
  page_ = nullptr;
}

void HandBackPage::CloseDescriptor() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<HandBackPage> HandBackPage::Create() {
  HandBackPage p;
  p.fd_ = memfd_create("ohiod-hand-backs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (p.fd_ < 0) return SystemError("memfd_create of a hand-back page", errno);
  if (ftruncate(p.fd_, static_cast<off_t>(kBytes)) != 0) return SystemError("ftruncate of a hand-back page", errno);
  // Its size is fixed before anyone else holds it: the daemon's reads can never fault.
  if (fcntl(p.fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return SystemError("sealing a hand-back page", errno);
  }
  void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd_, 0);
  if (m == MAP_FAILED) return SystemError("mmap of a hand-back page", errno);
  p.page_ = new (m) Page{};
  p.page_->magic = kMagic;
  return p;
}

Result<HandBackPage> HandBackPage::Map(int fd) {
  HandBackPage p;
  p.fd_ = fd;
  struct stat st = {};
  if (fstat(fd, &st) != 0) return SystemError("fstat of ohiod's hand-back page", errno);
  if (!S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(kBytes)) {
    return Status(Code::kProtocol, "ohiod's hand-back page is not a page of " + std::to_string(kBytes) + " bytes");
  }
  void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return SystemError("mmap of ohiod's hand-back page", errno);
  p.page_ = static_cast<Page*>(m);
  p.CloseDescriptor();
  if (p.page_->magic != kMagic) return Status(Code::kProtocol, "ohiod's hand-back page has the wrong magic number");
  return p;
}

}  // namespace ohio
