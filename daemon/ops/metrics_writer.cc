#include "daemon/ops/metrics_writer.h"

#include <spdlog/spdlog.h>

#include "admin/metrics_text.h"

namespace ohio {

MetricsWriter::MetricsWriter(std::function<std::string()> sample) : sample_(std::move(sample)) {
  thread_ = std::thread([this] { Run(); });
}

MetricsWriter::~MetricsWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MetricsWriter::Configure(const std::string& path, std::chrono::seconds interval) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (path == path_ && interval == interval_) return;
    path_ = path;
    interval_ = interval;
    changed_ = true;
  }
  cv_.notify_all();
}

void MetricsWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  std::string failing;  // the last error logged, so a broken path is reported once, not every interval
  std::string active;   // the path being written, "" while off
  for (;;) {
    if (path_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || changed_; });
    } else {
      cv_.wait_for(lock, interval_, [this] { return stopping_ || changed_; });
    }
    if (stopping_) return;
    if (changed_) {
      changed_ = false;
      failing.clear();
      if (path_.empty()) {
        if (!active.empty()) spdlog::info("metrics file: no longer writing {}", active);
        active.clear();
        continue;
      }
      active = path_;
      spdlog::info("metrics file: {} every {} s", path_, interval_.count());
    }
    const std::string path = path_;
    lock.unlock();
    std::string error;
    const bool ok = WriteFileAtomically(path, sample_(), &error);
    lock.lock();
    if (!ok && error != failing) spdlog::warn("metrics file: {}", error);
    if (ok && !failing.empty()) spdlog::info("metrics file: {} written again", path);
    failing = ok ? "" : error;
  }
}

}  // namespace ohio
