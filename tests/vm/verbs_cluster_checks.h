// What the tests of real ohiods on the Soft-RoCE guest's verbs share: the flags of a verbs
// cluster, a job's verdict, and the queue pairs the kernel itself lists for a daemon (so that a
// daemon's own count is checked against something it does not write).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {

// Everything runs under emulation (TCG): generous deadlines, never timings.
constexpr std::chrono::seconds kVerbsDeadline{240};

// ohiod's flags for the verbs transport, then `more`.
std::vector<std::string> Verbs(std::vector<std::string> more = {});

bool Contains(const std::string& s, const std::string& needle);

// Every rank of the job exits 0 within kVerbsDeadline; otherwise the failure shows `context`, the
// ranks' output and the daemons' logs.
void ExpectAllOk(RankJob& job, const std::string& context, Cluster& cluster);

// A shell command's output (stdout and stderr), with /usr/sbin and /sbin on the path.
std::string RunShell(const std::string& command);

// The value after `key` in an `rdma resource` line, "" if absent.
std::string Field(const std::string& line, const std::string& key);

// Queue pairs of `type` ("RC", "UD") the kernel lists for process `pid` (`rdma resource show`),
// -1 if it lists no protection domain of the process. The kernel credits a queue pair to the
// thread that made it (gRPC threads make the accepted ones), so they are matched by the process's
// protection domains, one per device. `listing` gets what the kernel printed.
int KernelQueuePairs(pid_t pid, const std::string& type, std::string* listing);

}  // namespace ohio::testing
