// Rewrites the metrics file (--metrics-file) every interval on a thread of its own, so a slow
// or full file system never stalls the daemon. Reconfigured by SIGHUP.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ohio {

class MetricsWriter {
 public:
  // `sample` produces the file's text; it is called on the writer's thread.
  explicit MetricsWriter(std::function<std::string()> sample);
  ~MetricsWriter();

  // Writes to `path` at once and then every `interval`; an empty path stops writing.
  void Configure(const std::string& path, std::chrono::seconds interval);

 private:
  void Run();

  std::function<std::string()> sample_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string path_;
  std::chrono::seconds interval_{15};
  bool changed_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ohio
