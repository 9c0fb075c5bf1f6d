// ohiod's config file, read by the daemon's own loader (LoadDaemonConfig with --config): any
// bytes give either settings or an error to print, never an exception or a crash. Settings
// accepted keep the ranges the flags promise, and survive being written back as a config file
// (what ConfigEntries shows, as `ohioctl config` does) and read again.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "tests/fuzz/fuzz_check.h"

extern char** environ;

namespace {

std::string g_path;

void WriteFile(const std::string& contents) {
  const int fd = open(g_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0, "open the scratch config file");
  FUZZ_CHECK(write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size()),
             "write the scratch config file");
  close(fd);
}

ohio::ConfigOutcome Load(const std::string& contents) {
  WriteFile(contents);
  const std::string flag = "--config=" + g_path;
  const char* argv[] = {"ohiod", flag.c_str(), nullptr};
  return ohio::LoadDaemonConfig(2, argv);
}

void CheckRanges(const ohio::DaemonConfig& c) {
  FUZZ_CHECK(c.timeout_ms >= 1 && c.timeout_ms <= 86400000u, "timeout-ms range");
  FUZZ_CHECK(c.spin_us <= 100000u && c.round_spin_us <= 100000u, "spin range");
  FUZZ_CHECK(c.max_message_bytes >= 1024 && c.max_message_bytes <= (uint64_t{1} << 30), "max-message-bytes range");
  FUZZ_CHECK(c.max_group_ranks >= 1 && c.max_group_ranks <= (1u << 24), "max-group-ranks range");
  FUZZ_CHECK(c.max_clients >= 1 && c.max_clients <= (1u << 20), "max-clients range");
  FUZZ_CHECK(c.user_memory_percent >= 1 && c.user_memory_percent <= 100, "user-memory-percent range");
  FUZZ_CHECK(c.user_max_groups >= 1 && c.user_max_clients >= 1, "per-user limits at least 1");
  FUZZ_CHECK(c.gid_index <= 255 && c.registration_delay_ms <= 600000u, "gid-index, registration-delay-ms ranges");
  FUZZ_CHECK(c.rc_pool == "unlimited" || (!c.rc_pool.empty() && c.rc_pool.size() <= 7 &&
                                          c.rc_pool.find_first_not_of("0123456789") == std::string::npos),
             "rc-pool a number or unlimited");
  FUZZ_CHECK(c.drop_one_datagram_in <= 1000000u, "drop-one-datagram-in range");
  FUZZ_CHECK(c.rc_pool_interval_ms <= 3600000u, "rc-pool-interval-ms range");
  FUZZ_CHECK(c.rtr_retry_budget_ms <= 5000u, "rtr-retry-budget-ms range");
  FUZZ_CHECK(c.metrics_interval_s >= 1 && c.metrics_interval_s <= 3600, "metrics-interval-s range");
  FUZZ_CHECK(c.design == "v1" || c.design == "v2" || c.design == "v3", "a known design");
  FUZZ_CHECK(c.transport == "auto" || c.transport == "verbs" || c.transport == "tcp", "a known transport");
  for (const std::string& p : c.peers) {
    const auto eq = p.find('='), colon = p.rfind(':');
    FUZZ_CHECK(eq != std::string::npos && eq > 0 && colon != std::string::npos && colon > eq && colon + 1 < p.size(),
               "every peer is NAME=HOST:PORT");
  }
  FUZZ_CHECK(!c.node_name.empty() && !c.advertise.empty(), "a node name and an address to advertise");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Only the file is fuzzed: OHIOD_* variables of whoever runs this would override it.
  std::vector<std::string> ours;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "OHIOD_", 6) == 0) ours.emplace_back(*e, std::strchr(*e, '=') - *e);
  }
  for (const std::string& name : ours) unsetenv(name.c_str());
  const char* dir = std::getenv("TEST_TMPDIR");
  g_path = std::string(dir != nullptr ? dir : "/tmp") + "/ohiod-fuzz-" + std::to_string(getpid()) + ".conf";
  std::atexit([] { unlink(g_path.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ohio::ConfigOutcome first = Load(std::string(reinterpret_cast<const char*>(data), size));
  if (first.exit_now) {
    FUZZ_CHECK(first.exit_code == 2, "a config file either loads or fails with status 2");
    FUZZ_CHECK(first.output.rfind("ohiod: ", 0) == 0 && first.output.size() > 8, "a failure says why");
    return 0;
  }
  CheckRanges(first.config);
  const auto entries = ohio::ConfigEntries(first.config);
  std::string rewritten;
  for (const auto& [key, value] : entries) rewritten += key + " = \"" + value + "\"\n";
  const ohio::ConfigOutcome second = Load(rewritten);
  FUZZ_CHECK(!second.exit_now, ("the settings written back load again: " + second.output).c_str());
  FUZZ_CHECK(ohio::ConfigEntries(second.config) == entries, "the settings written back read the same");
  return 0;
}
