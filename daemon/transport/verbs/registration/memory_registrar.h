// The registration thread. Pinning and registering a group's segment with every rail can take
// long on real HCAs (it grows with the segment), so it never runs on the path of a collective:
// the transport asks, goes on with bounce buffers, and is told when the memory regions exist.
// Deregistration goes through the same thread for the same reason.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace ohio {

class MemoryRegistrar {
 public:
  // Called on the registration thread, without mu_ (so that it may take the caller's lock, which
  // the caller may hold around Register and Deregister): one memory region per protection
  // domain, in order, or the error (then no regions).
  using Done = std::function<void(uint64_t key, std::vector<ibv_mr*> mrs, Status status)>;

  // `delay` holds every registration back that long: it stands in for HCAs where pinning large
  // segments is slow, and lets tests see the bounce path (0 in production).
  MemoryRegistrar(std::vector<ibv_pd*> pds, std::chrono::milliseconds delay, Done done);
  ~MemoryRegistrar();

  void Register(uint64_t key, void* base, uint64_t bytes);
  void Deregister(std::vector<ibv_mr*> mrs);

 private:
  struct Job {
    uint64_t key = 0;  // 0: a deregistration
    void* base = nullptr;
    uint64_t bytes = 0;
    std::vector<ibv_mr*> mrs;
    std::chrono::steady_clock::time_point not_before;
  };
  void Run();

  const std::vector<ibv_pd*> pds_;
  const std::chrono::milliseconds delay_;
  Done done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ohio
