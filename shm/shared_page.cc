#include "shm/shared_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ohio {

SharedPage::~SharedPage() { Reset(); }

SharedPage::SharedPage(SharedPage&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), base_(std::exchange(other.base_, nullptr)) {}

SharedPage& SharedPage::operator=(SharedPage&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, nullptr);
  }
  return *this;
}

void SharedPage::Reset() {
  if (base_ != nullptr) munmap(base_, kBytes);
  base_ = nullptr;
  CloseDescriptor();
}

void SharedPage::CloseDescriptor() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<SharedPage> SharedPage::Create(const std::string& name, int seals) {
  SharedPage p;
  p.fd_ = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (p.fd_ < 0) return SystemError("memfd_create of " + name, errno);
  if (ftruncate(p.fd_, static_cast<off_t>(kBytes)) != 0) return SystemError("ftruncate of " + name, errno);
  void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd_, 0);
  if (m == MAP_FAILED) return SystemError("mmap of " + name, errno);
  p.base_ = m;
  if (fcntl(p.fd_, F_ADD_SEALS, seals) != 0) return SystemError("sealing " + name, errno);
  return p;
}

Result<SharedPage> SharedPage::Map(int fd, int prot, const std::string& what) {
  SharedPage p;
  p.fd_ = fd;
  struct stat st = {};
  if (fstat(fd, &st) != 0) return SystemError("fstat of " + what, errno);
  if (!S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(kBytes)) {
    return Status(Code::kProtocol, what + " is not a page of " + std::to_string(kBytes) + " bytes");
  }
  void* m = mmap(nullptr, kBytes, prot, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return SystemError("mmap of " + what, errno);
  p.base_ = m;
  p.CloseDescriptor();  // the mapping is all a client keeps
  return p;
}

}  // namespace ohio
