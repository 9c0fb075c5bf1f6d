// At the process's descriptor limit (EMFILE) or the system's (ENFILE), accept() fails but the
// pending connection stays queued, so a level-triggered epoll reports the listener readable
// again at once: the loop spins on a core, and the client is neither served nor refused. One
// descriptor kept in reserve (/dev/null) lets the loop give it back, take the pending
// connection, close it, so that its client learns at once, and take the reserve again.
#pragma once

namespace ohio {

class DescriptorReserve {
 public:
  DescriptorReserve();
  ~DescriptorReserve();
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;

  // After accept on `listen_fd` failed for want of descriptors: accepts and closes the
  // pending connections with the reserve's slot. How many were closed; 0 when the reserve
  // could not be had (another thread took the slot) or none was pending. Either way the
  // caller should stop polling the listener for a while: no descriptor is free.
  int ShedPending(int listen_fd);
  bool held() const { return fd_ >= 0; }

 private:
  void Take();
  int fd_ = -1;
};

}  // namespace ohio
