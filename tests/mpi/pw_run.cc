#include "tests/mpi/pw_run.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

const char* const kServedFunctions[] = {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw"};

}  // namespace

PwRun ParsePwRun(const std::string& out) {
  PwRun r;
  r.out = out;
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("!    total energy += +-?[0-9.]+ Ry"))) r.energy = m[0];
  const std::regex step("\n     total energy += ");
  r.iterations = static_cast<int>(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), step),
                                                std::sregex_iterator()));
  for (const char* f : kServedFunctions) r.stats[f] = Stats(r.out, f);
  return r;
}

void ExpectSameAsWithout(const PwRun& without, const PwRun& with) {
  EXPECT_EQ(with.energy, without.energy) << with.out;
  EXPECT_EQ(with.iterations, without.iterations) << with.out;
  for (const char* f : kServedFunctions) {
    EXPECT_EQ(with.stats.at(f).first, without.stats.at(f).second) << f << "\n" << with.out;
    EXPECT_EQ(with.stats.at(f).second, 0) << f << "\n" << with.out;
  }
}

}  // namespace ohio::testing
