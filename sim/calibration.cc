#include "sim/calibration.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ohio::sim {
namespace {

constexpr const char* kCopyPrefix = "copy_bandwidth_threads_";
constexpr uint32_t kMostCopyThreads = 1024;

Status LineError(const std::string& source, size_t line, const std::string& what) {
  return Status(Code::kInvalidArgument, source + ":" + std::to_string(line) + ": " + what);
}

// A finite, non-negative number filling the whole token.
bool ParseNumber(const std::string& token, double* out) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (token.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

double PerRankCopyBandwidth(const Calibration& c, uint32_t copying, uint32_t cores) {
  const uint32_t threads = std::max<uint32_t>(1, std::min(copying, std::max<uint32_t>(cores, 1)));
  const size_t i = std::min<size_t>(threads, c.copy_bandwidth.size()) - 1;
  return c.copy_bandwidth[i] / std::max<uint32_t>(copying, 1);
}

Result<Calibration> ParseCalibration(const std::string& text, const std::string& source) {
  Calibration c;
  std::vector<bool> copy_seen;
  std::istringstream in(text);
  std::string raw;
  size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string content = raw.substr(0, raw.find('#'));
    std::istringstream words(content);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    if (w.size() != 3) {
      return LineError(source, line, "expected 'key value unit', got " + std::to_string(w.size()) + " words");
    }
    double v = 0;
    if (!ParseNumber(w[1], &v)) return LineError(source, line, "'" + w[1] + "' is not a non-negative number");
    auto unit = [&](const char* want) -> Status {
      if (w[2] == want) return Status::Ok();
      return LineError(source, line, w[0] + " is in " + want + ", not '" + w[2] + "'");
    };
    Status s;
    if (w[0].rfind(kCopyPrefix, 0) == 0) {
      const std::string n = w[0].substr(std::string(kCopyPrefix).size());
      double t = 0;
      if (!ParseNumber(n, &t) || t < 1 || t > kMostCopyThreads || t != std::floor(t)) {
        return LineError(source, line, "'" + w[0] + "': the thread count must be 1.." + std::to_string(kMostCopyThreads));
      }
      if (v <= 0) return LineError(source, line, w[0] + " must be above 0");
      s = unit("B/s");
      const size_t i = static_cast<size_t>(t) - 1;
      if (c.copy_bandwidth.size() <= i) {
        c.copy_bandwidth.resize(i + 1, 0);
        copy_seen.resize(i + 1, false);
      }
      if (copy_seen[i]) return LineError(source, line, w[0] + " given twice");
      copy_seen[i] = true;
      c.copy_bandwidth[i] = v;
    } else if (w[0] == "handoff_latency") {
      s = unit("s");
      c.handoff_latency = v;
    } else if (w[0] == "daemon_message_cost") {
      s = unit("s");
      c.daemon_message_cost = v;
    } else if (w[0] == "daemon_round_cost") {
      s = unit("s");
      c.daemon_round_cost = v;
    } else if (w[0] == "qp_cache_entries") {
      s = unit("qps");
      if (v != std::floor(v) || v > 1e9) return LineError(source, line, "qp_cache_entries must be a whole number");
      c.qp_cache_entries = static_cast<uint64_t>(v);
    } else if (w[0] == "qp_miss_penalty") {
      s = unit("s");
      c.qp_miss_penalty = v;
    } else {
      return LineError(source, line, "unknown key '" + w[0] + "'");
    }
    if (!s.ok()) return s;
  }
  if (c.copy_bandwidth.empty()) {
    return Status(Code::kInvalidArgument, source + ": no " + kCopyPrefix + "1 line: the copy bandwidth is needed");
  }
  for (size_t i = 0; i < copy_seen.size(); ++i) {
    if (!copy_seen[i]) {
      return Status(Code::kInvalidArgument, source + ": " + kCopyPrefix + std::to_string(i + 1) + " is missing (" +
                                                kCopyPrefix + std::to_string(copy_seen.size()) + " is given)");
    }
  }
  return c;
}

Result<Calibration> ReadCalibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, path + ": cannot read the calibration file");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseCalibration(text.str(), path);
}

std::string RenderCalibration(const Calibration& c) {
  std::string out = "# ohio-sim calibration: key value unit (docs/SIMULATION.md)\n";
  std::istringstream note(c.note);
  for (std::string line; std::getline(note, line);) out += "# " + line + "\n";
  for (size_t i = 0; i < c.copy_bandwidth.size(); ++i) {
    out += kCopyPrefix + std::to_string(i + 1) + " " + Num(c.copy_bandwidth[i]) + " B/s\n";
  }
  out += "handoff_latency " + Num(c.handoff_latency) + " s\n";
  out += "daemon_message_cost " + Num(c.daemon_message_cost) + " s\n";
  out += "daemon_round_cost " + Num(c.daemon_round_cost) + " s\n";
  out += "qp_cache_entries " + std::to_string(c.qp_cache_entries) + " qps\n";
  out += "qp_miss_penalty " + Num(c.qp_miss_penalty) + " s\n";
  return out;
}

}  // namespace ohio::sim
