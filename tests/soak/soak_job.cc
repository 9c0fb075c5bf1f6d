#include "tests/soak/soak_job.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tests/soak/error_causes.h"
#include "tests/soak/rank_report.h"

namespace ohio::soak {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string LastLines(const std::string& s, int lines) {
  size_t at = s.size();
  for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) at = s.rfind('\n', at - 1);
  return at == std::string::npos ? s : s.substr(at + 1);
}

}  // namespace

SoakJob::SoakJob(JobSpec spec, testing::Cluster& cluster, const testing::TempDir& dir, uint64_t seed, uint64_t calls)
    : spec_(std::move(spec)), cluster_(cluster), dir_(dir), seed_(seed), calls_(calls) {}

bool SoakJob::Spans(uint32_t node) const {
  return std::find(spec_.rank_node.begin(), spec_.rank_node.end(), node) != spec_.rank_node.end();
}

void SoakJob::Launch() {
  // The group's nodes, in the order of their first rank, and each rank's index among them.
  std::vector<uint32_t> nodes, placement;
  for (uint32_t n : spec_.rank_node) {
    auto it = std::find(nodes.begin(), nodes.end(), n);
    if (it == nodes.end()) it = nodes.insert(nodes.end(), n);
    placement.push_back(static_cast<uint32_t>(it - nodes.begin()));
  }
  std::vector<std::string> sockets, names;
  for (uint32_t n : nodes) {
    sockets.push_back(cluster_.node(n).socket());
    names.push_back(cluster_.name(n));
  }
  ++generation_;
  run_calls_ = static_cast<uint32_t>(std::min<uint64_t>(spec_.calls_per_run, calls_ - verified_));
  static const char* kAlgorithms[] = {"v1", "v2", "v3"};
  const std::vector<std::string> common = {
      "--random-bytes", std::to_string(spec_.max_bytes),  "--iterations", std::to_string(run_calls_),
      "--seed",         std::to_string(Mix(seed_ + generation_)), "--algorithm", kAlgorithms[generation_ % 3]};
  killed_.clear();
  met_stop_ = false;
  run_started_ = std::chrono::steady_clock::now();
  run_ = std::make_unique<testing::RankJob>(dir_, sockets, names, placement,
                                            spec_.name + ".run" + std::to_string(generation_), common, nullptr,
                                            spec_.uid);
}

std::string SoakJob::KillRank(uint64_t pick) {
  if (!run_ || !killed_.empty()) return "";
  killed_at_ = std::chrono::steady_clock::now();
  const uint32_t r = static_cast<uint32_t>(pick % run_->size());
  run_->rank(r).Signal(SIGKILL);
  killed_.insert(r);
  return spec_.name + " run " + std::to_string(generation_) + " rank " + std::to_string(r);
}

void SoakJob::NoteStopped(uint32_t node) {
  if (run_ && Spans(node)) met_stop_ = true;
}

void SoakJob::Step(std::chrono::milliseconds run_deadline, bool launch, Figures* f) {
  if (run_) {
    bool ended = true;
    for (uint32_t r = 0; r < run_->size() && ended; ++r) ended = !run_->rank(r).Running();
    if (!ended && std::chrono::steady_clock::now() - run_started_ < run_deadline) return;
    if (!ended) {
      f->problems.push_back(spec_.name + " run " + std::to_string(generation_) + " hung: ranks still running after " +
                            std::to_string(run_deadline.count()) + " ms:\n" + run_->Outputs());
    }
    Judge(run_->Wait(std::chrono::milliseconds(ended ? 5000 : 1)), f);
    run_.reset();
    ++judged_;
  }
  if (!launch || verified_ >= calls_) return;
  // A node being restarted is not there to join: wait for it rather than fail on purpose.
  for (uint32_t n : spec_.rank_node) {
    if (!cluster_.node(n).running()) return;
  }
  Launch();
}

void SoakJob::Judge(const std::vector<int>& codes, Figures* f) {
  const std::string run = spec_.name + " run " + std::to_string(generation_);
  const size_t problems_before = f->problems.size();
  ++f->runs;
  std::optional<uint32_t> verified;
  bool failed = false;
  for (uint32_t r = 0; r < run_->size(); ++r) {
    if (killed_.count(r) != 0) continue;
    const std::string out = run_->rank(r).Output();
    const RankReport report = ParseRankReport(out);
    const std::string who = run + " rank " + std::to_string(r);
    if (report.wrong_bytes > 0) {
      f->wrong_bytes += report.wrong_bytes;
      f->problems.push_back(who + " received wrong bytes: " + LastLines(out, 3));
    }
    if (!report.verified) {
      f->problems.push_back(who + " ended (exit " + std::to_string(codes[r]) + ") without saying what it verified: " +
                            LastLines(out, 3));
      continue;
    }
    verified = std::min(verified.value_or(*report.verified), *report.verified);
    if (report.error) {
      failed = true;
      const RankError& e = *report.error;
      const ErrorCause* cause = CauseOf(e.code_name, e.message);
      if (cause && cause->after_kill_only && killed_.empty()) {
        f->problems.push_back(who + ": a timeout in a run where no rank was killed: '" + e.message + "'");
      } else if (cause && cause->after_stop_only && !met_stop_) {
        f->problems.push_back(who + ": '" + e.message + "' in a run that met no stopped daemon");
      } else if (cause) {
        ++f->errors_by_cause[cause->name];
      } else {
        f->problems.push_back(who + ": " + e.step + " error of no expected cause: (" + e.code_name + ") '" +
                              e.message + "'");
      }
    } else if (codes[r] != 0 || *report.verified != run_calls_) {
      f->problems.push_back(who + " exited " + std::to_string(codes[r]) + " having verified " +
                            std::to_string(*report.verified) + " of " + std::to_string(run_calls_) +
                            " calls, and no error: " + LastLines(out, 3));
    }
  }
  if (f->problems.size() != problems_before) {
    // What every rank said and what the daemons logged of its group, to tell what went wrong.
    std::string detail = run + " in full:\n" + run_->Outputs();
    const std::string key = testing::KeyHex(spec_.name + ".run" + std::to_string(generation_));
    for (uint32_t n = 0; n < cluster_.size(); ++n) {
      std::istringstream log(cluster_.node(n).Log());
      for (std::string line; std::getline(log, line);) {
        if (line.find(key) != std::string::npos) detail += cluster_.name(n) + ": " + line + "\n";
      }
    }
    f->problems.push_back(detail);
  }
  // A rank killed past its last call leaves its peers nothing to fail: no failed call then.
  if (failed) ++f->calls_failed;
  if (!killed_.empty()) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at_);
    f->slowest_kill_to_end_ms = std::max<uint64_t>(f->slowest_kill_to_end_ms, static_cast<uint64_t>(ms.count()));
  }
  verified_ += verified.value_or(0);
  f->calls_verified += verified.value_or(0);
}

}  // namespace ohio::soak
