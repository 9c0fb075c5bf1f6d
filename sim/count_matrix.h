// An alltoallv's counts for ohio-sim: the bytes each rank of a group sends each other rank, read
// from a file (one row per rank) or drawn by a generator with a seed, so that ohio-sim, the SMPI
// bench program and a test's real ranks run the same call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio::sim {

struct CountMatrix {
  uint32_t ranks = 0;
  std::vector<uint64_t> bytes;  // row-major: bytes[i * ranks + j], what rank i sends rank j
  uint64_t at(uint32_t from, uint32_t to) const { return bytes[uint64_t{from} * ranks + to]; }
};

// The file: `ranks` lines of `ranks` decimal byte counts each, separated by spaces or commas;
// `#` starts a comment, blank lines are skipped. Errors name `name` and the line.
Result<CountMatrix> ParseCountMatrix(const std::string& text, const std::string& name, uint32_t ranks);

// A generator, `KIND:MAX:SEED`:
// - uniform: every count drawn in [0, MAX], a quarter of them 0 (zero pairs cost nothing on the
//   wire, and applications have them);
// - skewed: as uniform up to MAX/16, except every rank's count to one rank (drawn per sender)
//   is MAX: a few heavy pairs, the case that makes a node's part stream while others' fit.
Result<CountMatrix> GenerateCountMatrix(const std::string& spec, uint32_t ranks);

// A generator spec, or else a file to read: the --counts argument.
Result<CountMatrix> CountMatrixFrom(const std::string& spec_or_path, uint32_t ranks);

// The file form ParseCountMatrix reads.
std::string RenderCountMatrix(const CountMatrix& m);

}  // namespace ohio::sim
