#include "sim/count_matrix.h"

#include <fstream>
#include <sstream>

#include "common/mix64.h"

namespace ohio::sim {
namespace {

constexpr uint64_t kMostCount = uint64_t{1} << 50;  // far below any sum wrapping around

Status Bad(const std::string& where, const std::string& what) {
  return Status(Code::kInvalidArgument, where + ": " + what);
}

// A decimal count; false if `word` is not one or is above kMostCount.
bool ParseCount(const std::string& word, uint64_t* value) {
  if (word.empty() || word.size() > 16 || word.find_first_not_of("0123456789") != std::string::npos) return false;
  *value = std::stoull(word);
  return *value <= kMostCount;
}

}  // namespace

Result<CountMatrix> ParseCountMatrix(const std::string& text, const std::string& name, uint32_t ranks) {
  CountMatrix m;
  m.ranks = ranks;
  std::istringstream in(text);
  std::string line;
  uint32_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = name + ":" + std::to_string(line_no);
    line = line.substr(0, line.find('#'));
    for (char& c : line) {
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    }
    std::istringstream words(line);
    std::vector<uint64_t> row;
    std::string word;
    while (words >> word) {
      uint64_t v = 0;
      if (!ParseCount(word, &v)) return Bad(where, "'" + word + "' is not a byte count (decimal, at most 2^50)");
      row.push_back(v);
    }
    if (row.empty()) continue;
    if (m.bytes.size() / ranks >= ranks) {
      return Bad(where, "more than " + std::to_string(ranks) + " rows: the group has " + std::to_string(ranks) + " ranks");
    }
    if (row.size() != ranks) {
      return Bad(where, "row of rank " + std::to_string(m.bytes.size() / ranks) + " has " + std::to_string(row.size()) +
                            " counts; the group has " + std::to_string(ranks) + " ranks");
    }
    m.bytes.insert(m.bytes.end(), row.begin(), row.end());
  }
  if (m.bytes.size() != uint64_t{ranks} * ranks) {
    return Bad(name, std::to_string(m.bytes.size() / ranks) + " rows; the group has " + std::to_string(ranks) + " ranks");
  }
  return m;
}

Result<CountMatrix> GenerateCountMatrix(const std::string& spec, uint32_t ranks) {
  const size_t c1 = spec.find(':');
  const size_t c2 = c1 == std::string::npos ? std::string::npos : spec.find(':', c1 + 1);
  const std::string usage = "counts '" + spec + "': expected uniform:MAX:SEED or skewed:MAX:SEED";
  if (c2 == std::string::npos) return Status(Code::kInvalidArgument, usage);
  const std::string kind = spec.substr(0, c1);
  uint64_t most = 0, seed = 0;
  if ((kind != "uniform" && kind != "skewed") || !ParseCount(spec.substr(c1 + 1, c2 - c1 - 1), &most) ||
      !ParseCount(spec.substr(c2 + 1), &seed)) {
    return Status(Code::kInvalidArgument, usage);
  }
  CountMatrix m;
  m.ranks = ranks;
  m.bytes.resize(uint64_t{ranks} * ranks);
  const bool skewed = kind == "skewed";
  const uint64_t light = skewed ? most / 16 : most;
  for (uint32_t i = 0; i < ranks; ++i) {
    const uint32_t heavy = static_cast<uint32_t>(Mix64(seed ^ Mix64(i)) % ranks);
    for (uint32_t j = 0; j < ranks; ++j) {
      const uint64_t h = Mix64(seed ^ Mix64(uint64_t{i} << 32 | j));
      uint64_t& count = m.bytes[uint64_t{i} * ranks + j];
      count = h % 4 == 0 ? 0 : (h >> 8) % (light + 1);
      if (skewed && j == heavy) count = most;
    }
  }
  return m;
}

Result<CountMatrix> CountMatrixFrom(const std::string& spec_or_path, uint32_t ranks) {
  if (spec_or_path.rfind("uniform:", 0) == 0 || spec_or_path.rfind("skewed:", 0) == 0) {
    return GenerateCountMatrix(spec_or_path, ranks);
  }
  std::ifstream in(spec_or_path);
  if (!in) return Status(Code::kInvalidArgument, spec_or_path + ": cannot read the count matrix");
  std::stringstream text;
  text << in.rdbuf();
  return ParseCountMatrix(text.str(), spec_or_path, ranks);
}

std::string RenderCountMatrix(const CountMatrix& m) {
  std::string out = "# alltoallv counts: row i is what rank i sends ranks 0.." + std::to_string(m.ranks - 1) + "\n";
  for (uint32_t i = 0; i < m.ranks; ++i) {
    for (uint32_t j = 0; j < m.ranks; ++j) out += (j ? " " : "") + std::to_string(m.at(i, j));
    out += "\n";
  }
  return out;
}

}  // namespace ohio::sim
