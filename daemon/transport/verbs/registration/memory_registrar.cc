#include "daemon/transport/verbs/registration/memory_registrar.h"

#include <cerrno>

namespace ohio {

MemoryRegistrar::MemoryRegistrar(std::vector<ibv_pd*> pds, std::chrono::milliseconds delay, Done done)
    : pds_(std::move(pds)), delay_(delay), done_(std::move(done)) {
  thread_ = std::thread([this] { Run(); });
}

MemoryRegistrar::~MemoryRegistrar() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // What was still queued: registrations are dropped, deregistrations done now.
  for (Job& j : jobs_) {
    for (ibv_mr* mr : j.mrs) ibv_dereg_mr(mr);
  }
}

void MemoryRegistrar::Register(uint64_t key, void* base, uint64_t bytes) {
  Job j;
  j.key = key;
  j.base = base;
  j.bytes = bytes;
  j.not_before = std::chrono::steady_clock::now() + delay_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(j));
  }
  cv_.notify_all();
}

void MemoryRegistrar::Deregister(std::vector<ibv_mr*> mrs) {
  if (mrs.empty()) return;
  Job j;
  j.mrs = std::move(mrs);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(j));
  }
  cv_.notify_all();
}

void MemoryRegistrar::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    // Jobs run in order; a delayed registration delays those behind it, as a slow one would.
    if (jobs_.front().key != 0 && cv_.wait_until(lock, jobs_.front().not_before, [this] { return stopping_; })) return;
    Job j = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    if (j.key == 0) {
      for (ibv_mr* mr : j.mrs) ibv_dereg_mr(mr);
    } else {
      std::vector<ibv_mr*> mrs;
      Status status = Status::Ok();
      for (ibv_pd* pd : pds_) {
        ibv_mr* mr = ibv_reg_mr(pd, j.base, j.bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (mr == nullptr) {
          status = SystemError("registering " + std::to_string(j.bytes) + " bytes", errno);
          break;
        }
        mrs.push_back(mr);
      }
      if (!status.ok()) {
        for (ibv_mr* mr : mrs) ibv_dereg_mr(mr);
        mrs.clear();
      }
      done_(j.key, std::move(mrs), std::move(status));
    }
    lock.lock();
  }
}

}  // namespace ohio
