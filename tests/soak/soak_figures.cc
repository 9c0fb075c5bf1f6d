#include "tests/soak/soak_figures.h"

#include <cstdio>
#include <sstream>

#include "tests/soak/error_causes.h"

namespace ohio::soak {

std::string FormatFigures(const Figures& f) {
  std::ostringstream o;
  o << "soak figures\n";
  o << "  calls verified      " << f.calls_verified << " (wanted " << f.calls_wanted << ") in " << f.runs
    << " job runs, " << static_cast<uint64_t>(f.seconds) << " s\n";
  o << "  calls failed        " << f.calls_failed << "\n";
  o << "  wrong bytes         " << f.wrong_bytes << "\n";
  o << "  faults injected\n";
  for (const auto& [kind, n] : f.faults) o << "    " << kind << ": " << n << "\n";
  o << "    (garbage connections: " << f.garbage_connections << ")\n";
  o << "    (slowest run end after a rank kill: " << f.slowest_kill_to_end_ms << " ms)\n";
  o << "    (longest daemon stop: " << f.longest_stop_ms << " ms)\n";
  o << "    (hostile uid's connections: " << f.hostile.connections << ", cut off by the daemon: " << f.hostile.cut_off
    << "; its 32 MiB nonblocking calls moved: " << f.hostile.large_calls
    << "; its oversized joins: " << f.hostile.joins << ")\n";
  o << "  MPI job (Open MPI, MPI_ERRORS_RETURN)\n";
  o << "    runs " << f.mpi.runs << ", calls ok " << f.mpi.calls_ok << ", failed (MPI_ERR_OTHER) " << f.mpi.calls_failed
    << ", wrong bytes " << f.mpi.wrong_bytes << ", the shim's reasons printed " << f.mpi.reasons << "\n";
  o << "  errors by cause (one per rank that got one)\n";
  for (const ErrorCause& c : ExpectedCauses()) {
    auto it = f.errors_by_cause.find(c.name);
    o << "    " << c.name << ": " << (it == f.errors_by_cause.end() ? 0 : it->second) << "\n";
  }
  o << "  daemons        fds before/after  memfds after  RSS KiB before/after  restarts\n";
  for (const NodeFigures& n : f.nodes) {
    char line[160];
    std::snprintf(line, sizeof(line), "    %-10s %6d / %-6d %12d %12llu / %-10llu %u\n", n.name.c_str(), n.before.fds,
                  n.after.fds, n.after.memfds, static_cast<unsigned long long>(n.before.rss_kib),
                  static_cast<unsigned long long>(n.after.rss_kib), n.restarts);
    o << line;
  }
  o << "  problems            " << f.problems.size() << "\n";
  for (const std::string& p : f.problems) o << "    " << p << "\n";
  return o.str();
}

}  // namespace ohio::soak
