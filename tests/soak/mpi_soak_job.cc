#include "tests/soak/mpi_soak_job.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "tests/mpi/mpi_job.h"
#include "tests/soak/mpi_run_report.h"

namespace ohio::soak {
namespace {

std::string Tail(const std::string& s, size_t bytes) { return s.size() <= bytes ? s : s.substr(s.size() - bytes); }

}  // namespace

MpiSoakJob::MpiSoakJob(MpiJobSpec spec, testing::Cluster& cluster, const testing::TempDir& dir, uint64_t seed,
                       uint64_t calls)
    : spec_(std::move(spec)), cluster_(cluster), dir_(dir), seed_(seed), calls_(calls) {}

MpiSoakJob::~MpiSoakJob() {
  // mpirun passes SIGTERM on to its ranks; SIGKILL (the Process's own end) would orphan them.
  if (run_ && run_->Running()) {
    run_->Signal(SIGTERM);
    run_->Wait(std::chrono::seconds(10));
  }
}

bool MpiSoakJob::Spans(uint32_t node) const {
  return std::find(spec_.nodes.begin(), spec_.nodes.end(), node) != spec_.nodes.end();
}

void MpiSoakJob::Launch() {
  std::vector<std::string> sockets;
  for (uint32_t n : spec_.nodes) sockets.push_back(cluster_.node(n).socket());
  ++generation_;
  const int ranks = static_cast<int>(spec_.nodes.size() * spec_.ppn);
  std::vector<std::string> argv = testing::MpiRunPath(
      testing::kOpenMpi, ranks, sockets, static_cast<int>(spec_.ppn), {{"OHIO_QUIET", "1"}},
      testing::RunfilePath("tests/soak/mpi_soak_check"),
      {std::to_string(spec_.calls_per_run), std::to_string(spec_.max_bytes), std::to_string(seed_ + generation_)});
  // Each line tagged with its rank, so that the shim's reasons are told apart by rank.
  argv.insert(argv.begin() + 1, "--tag-output");
  run_started_ = std::chrono::steady_clock::now();
  run_ = std::make_unique<testing::Process>(argv, dir_.file(spec_.name + ".run" + std::to_string(generation_) + ".out"));
}

void MpiSoakJob::Step(std::chrono::milliseconds run_deadline, bool launch, Figures* f) {
  if (run_) {
    if (run_->Running() && std::chrono::steady_clock::now() - run_started_ < run_deadline) return;
    int code = 0;
    if (run_->Running()) {
      f->problems.push_back(spec_.name + " run " + std::to_string(generation_) + " hung: mpirun still running after " +
                            std::to_string(run_deadline.count()) + " ms:\n" + Tail(run_->Output(), 4000));
      run_->Signal(SIGTERM);
      code = run_->Wait(std::chrono::seconds(10));
    } else {
      code = run_->Wait(std::chrono::seconds(5));
    }
    Judge(code, f);
    run_.reset();
  }
  if (!launch || calls_made_ >= calls_) return;
  for (uint32_t n : spec_.nodes) {
    if (!cluster_.node(n).running()) return;
  }
  Launch();
}

void MpiSoakJob::Judge(int exit_code, Figures* f) {
  const std::string run = spec_.name + " run " + std::to_string(generation_);
  const std::string out = run_->Output();
  const size_t problems_before = f->problems.size();
  ++f->mpi.runs;
  if (exit_code != 0) f->problems.push_back(run + ": mpirun exited " + std::to_string(exit_code));
  const auto reports = ParseMpiRun(out);
  const uint32_t ranks = static_cast<uint32_t>(spec_.nodes.size() * spec_.ppn);
  for (uint32_t r = 0; r < ranks; ++r) {
    const std::string who = run + " rank " + std::to_string(r);
    const auto it = reports.find(r);
    if (it == reports.end() || !it->second.tally) {
      f->problems.push_back(who + " ended without its tally");
      continue;
    }
    const MpiRankReport& report = it->second;
    const MpiRankTally& t = *report.tally;
    // A call is the job's, not a rank's: counted as rank 0 saw it (the others see the same
    // outcome, or a failure one call apart: client/mpi/mpi_shim_state.h).
    if (r == 0) {
      f->mpi.calls_ok += t.ok;
      f->mpi.calls_failed += t.failed;
    }
    f->mpi.wrong_bytes += t.wrong_bytes;
    if (t.wrong_bytes != 0) f->problems.push_back(who + ": " + std::to_string(t.wrong_bytes) + " wrong bytes in calls that succeeded");
    if (t.calls != spec_.calls_per_run || t.ok + t.failed + (t.wrong_bytes != 0 ? 1 : 0) > t.calls) {
      f->problems.push_back(who + "'s tally does not add up: " + std::to_string(t.calls) + " calls, " +
                            std::to_string(t.ok) + " ok, " + std::to_string(t.failed) + " failed");
    }
    for (const std::string& with : report.failed_with) {
      if (with != "MPI_ERR_OTHER") f->problems.push_back(who + ": a call failed with " + with + ", not MPI_ERR_OTHER");
    }
    // The shim says why for each failure it returns (and for each it recovered from in the library).
    if (report.reasons.size() < t.failed) {
      f->problems.push_back(who + ": " + std::to_string(t.failed) + " failed calls but " +
                            std::to_string(report.reasons.size()) + " reasons printed");
    }
    for (const std::string& why : report.reasons) {
      if (why.empty()) f->problems.push_back(who + ": the shim reported a failure without a reason");
    }
    f->mpi.reasons += report.reasons.size();
  }
  if (f->problems.size() != problems_before) f->problems.push_back(run + " in full:\n" + Tail(out, 8000));
  std::printf("%s ended after %lld ms\n", run.c_str(),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - run_started_)
                                         .count()));
  calls_made_ += spec_.calls_per_run;
}

}  // namespace ohio::soak
