#include "sim/sim_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace ohio::sim {
namespace {

std::string Fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

uint64_t Ranks(const SimRequest& req) {
  uint64_t ranks = 0;
  for (uint32_t p : req.ppn) ranks += p;
  return ranks;
}

}  // namespace

std::string RenderSimText(const SimRequest& req, const SimResult& r) {
  std::string out = "ohio-sim: " + std::to_string(req.ppn.size()) + " nodes, " + std::to_string(Ranks(req)) +
                    " ranks, " + NodeLevelDesignName(req.settings.algo) + ", platform " + req.platform + ", " +
                    std::to_string(req.iterations) + " calls per size\n";
  out += "qp cache model: ";
  out += req.qp_cache.enabled() ? std::to_string(req.qp_cache.entries) + " entries, " +
                                      Fixed(req.qp_cache.penalty * 1e6, "%.3f") + " us per miss\n"
                                : "off\n";
  char line[256];
  std::snprintf(line, sizeof line, "%12s  %-9s  %-9s  %8s  %9s  %14s  %14s  %14s\n", "bytes", "kind", "internode",
                "rounds", "simulated", "median_us", "min_us", "max_us");
  out += line;
  for (const SizeSummary& s : r.sizes) {
    if (s.vector) {
      // One row for the alltoallv calls: its kind is the protocol's, its rounds the first call's.
      std::snprintf(line, sizeof line, "%12s  %-9s  %-9s  %8llu  %9llu  %14.3f  %14.3f  %14.3f\n", "alltoallv",
                    "eager", InterNodeAlgorithmName(s.internode), static_cast<unsigned long long>(s.rounds),
                    static_cast<unsigned long long>(s.simulated_rounds), s.median * 1e6, s.min * 1e6, s.max * 1e6);
      out += line;
      out += "alltoallv: " + std::to_string(s.stream_rounds) + " stream rounds after the first; " +
             std::to_string(s.cube_went_again) + " calls whose hypercube round went again pairwise\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%12llu  %-9s  %-9s  %8llu  %9llu  %14.3f  %14.3f  %14.3f\n",
                  static_cast<unsigned long long>(s.bytes_per_rank), s.eager ? "eager" : "announced",
                  InterNodeAlgorithmName(s.internode), static_cast<unsigned long long>(s.rounds),
                  static_cast<unsigned long long>(s.simulated_rounds), s.median * 1e6, s.min * 1e6, s.max * 1e6);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-8s  %-12s  %12s  %12s  %16s  %16s  %10s  %10s  %10s\n", "node", "host",
                "data_sent", "data_recv", "bytes_sent", "bytes_recv", "ctrl_sent", "ctrl_recv", "qp_misses");
  out += line;
  for (size_t n = 0; n < r.nodes.size(); ++n) {
    const NodeCounters& c = r.nodes[n];
    std::snprintf(line, sizeof line, "%-8zu  %-12s  %12llu  %12llu  %16llu  %16llu  %10llu  %10llu  %10llu\n", n,
                  r.hosts[n].c_str(), static_cast<unsigned long long>(c.data_frames_sent),
                  static_cast<unsigned long long>(c.data_frames_received), static_cast<unsigned long long>(c.bytes_sent),
                  static_cast<unsigned long long>(c.bytes_received),
                  static_cast<unsigned long long>(c.control_frames_sent),
                  static_cast<unsigned long long>(c.control_frames_received),
                  static_cast<unsigned long long>(c.qp_misses));
    out += line;
  }
  out += "simulated time " + Fixed(r.simulated_seconds, "%.6f") + " s (every call, back to back)\n";
  if (req.max_slices > 0) {
    out += "calls of more than " + std::to_string(req.max_slices) +
           " slices: the rest predicted from the last simulated one; frames count the simulated rounds only\n";
  }
  return out;
}

std::string RenderSimJson(const SimRequest& req, const SimResult& r) {
  nlohmann::ordered_json j;
  j["nodes"] = req.ppn.size();
  j["ranks"] = Ranks(req);
  j["ppn"] = req.ppn;
  j["algo"] = NodeLevelDesignName(req.settings.algo);
  j["platform"] = req.platform;
  j["iterations"] = req.iterations;
  j["max_slices"] = req.max_slices;
  j["qp_cache_entries"] = req.qp_cache.entries;
  j["qp_miss_penalty_s"] = req.qp_cache.penalty;
  j["sizes"] = nlohmann::ordered_json::array();
  for (const SizeSummary& s : r.sizes) {
    if (s.vector) {
      j["alltoallv"] = {{"internode", InterNodeAlgorithmName(s.internode)},
                        {"rounds", s.rounds},
                        {"stream_rounds", s.stream_rounds},
                        {"cube_went_again", s.cube_went_again},
                        {"median_s", s.median},
                        {"min_s", s.min},
                        {"max_s", s.max}};
      continue;
    }
    j["sizes"].push_back({{"bytes", s.bytes_per_rank},
                          {"eager", s.eager},
                          {"internode", InterNodeAlgorithmName(s.internode)},
                          {"rounds", s.rounds},
                          {"simulated_rounds", s.simulated_rounds},
                          {"median_s", s.median},
                          {"min_s", s.min},
                          {"max_s", s.max}});
  }
  j["per_node"] = nlohmann::ordered_json::array();
  for (size_t n = 0; n < r.nodes.size(); ++n) {
    const NodeCounters& c = r.nodes[n];
    j["per_node"].push_back({{"node", n},
                             {"host", r.hosts[n]},
                             {"data_frames_sent", c.data_frames_sent},
                             {"data_frames_received", c.data_frames_received},
                             {"bytes_sent", c.bytes_sent},
                             {"bytes_received", c.bytes_received},
                             {"control_frames_sent", c.control_frames_sent},
                             {"control_frames_received", c.control_frames_received},
                             {"qp_misses", c.qp_misses}});
  }
  j["simulated_s"] = r.simulated_seconds;
  return j.dump() + "\n";
}

}  // namespace ohio::sim
