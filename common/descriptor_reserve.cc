#include "common/descriptor_reserve.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ohio {
namespace {

constexpr int kMaxShedPerCall = 1024;

}  // namespace

DescriptorReserve::DescriptorReserve() { Take(); }

DescriptorReserve::~DescriptorReserve() {
  if (fd_ >= 0) close(fd_);
}

void DescriptorReserve::Take() {
  if (fd_ < 0) fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int DescriptorReserve::ShedPending(int listen_fd) {
  Take();  // lost to another thread last time: a descriptor may have come free since
  if (fd_ < 0) return 0;
  close(fd_);
  fd_ = -1;
  int shed = 0;
  // The slot is reused by each accepted connection in turn: it is closed before the next. At
  // most a listen queue's worth, so that a steady stream of connections cannot hold the loop.
  while (shed < kMaxShedPerCall) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    close(fd);
    ++shed;
  }
  Take();
  return shed;
}

}  // namespace ohio
