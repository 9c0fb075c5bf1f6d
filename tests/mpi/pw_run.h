// What a Quantum ESPRESSO pw.x run under mpirun printed, as the QE tests compare it
// (tests/mpi/apps/qe_test.cc on Debian 12, tests/trixie/trixie_qe_test.cc on Debian 13): the converged
// total energy, the SCF steps, and the OHIO_STATS counts of the functions its FFTs call.
#pragma once

#include <map>
#include <string>
#include <utility>

namespace ohio::testing {

struct PwRun {
  std::string out;                                     // mpirun's (pw.x prints to stdout)
  std::string energy;                                  // the converged "!    total energy" line
  int iterations = 0;                                  // "total energy" lines, one per SCF step
  std::map<std::string, std::pair<long, long>> stats;  // OHIO_STATS per served function
};

PwRun ParsePwRun(const std::string& out);

// The same energy, after as many SCF steps, and every call the run without ohio made was served
// in the run with it (as many, none handed back) (gtest expectations).
void ExpectSameAsWithout(const PwRun& without, const PwRun& with);

}  // namespace ohio::testing
