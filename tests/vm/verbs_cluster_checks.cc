#include "tests/vm/verbs_cluster_checks.h"

#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>

namespace ohio::testing {

std::vector<std::string> Verbs(std::vector<std::string> more) {
  std::vector<std::string> flags = {"--transport", "verbs"};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

void ExpectAllOk(RankJob& job, const std::string& context, Cluster& cluster) {
  auto codes = job.Wait(kVerbsDeadline);
  bool all = true;
  for (int c : codes) all &= c == 0;
  EXPECT_TRUE(all) << context << "\n" << job.Outputs() << cluster.Logs();
}

std::string RunShell(const std::string& command) {
  std::string out;
  FILE* f = popen(("PATH=\"$PATH:/usr/sbin:/sbin\" " + command + " 2>&1").c_str(), "r");
  if (f == nullptr) return out;
  char line[1024];
  while (std::fgets(line, sizeof(line), f) != nullptr) out += line;
  pclose(f);
  return out;
}

std::string Field(const std::string& line, const std::string& key) {
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    if (word == key && in >> word) return word;
  }
  return "";
}

int KernelQueuePairs(pid_t pid, const std::string& type, std::string* listing) {
  const std::string pds = RunShell("rdma resource show pd");
  const std::string qps = RunShell("rdma resource show qp");
  *listing = pds + qps;
  std::set<std::pair<std::string, std::string>> mine;  // (device, pdn)
  std::istringstream pd_lines(pds);
  for (std::string l; std::getline(pd_lines, l);) {
    if (Field(l, "pid") == std::to_string(pid)) mine.insert({Field(l, "dev"), Field(l, "pdn")});
  }
  int n = 0;
  std::istringstream qp_lines(qps);
  for (std::string l; std::getline(qp_lines, l);) {
    const std::string link = Field(l, "link");  // "rxe0/1"
    if (Field(l, "type") == type && mine.count({link.substr(0, link.find('/')), Field(l, "pdn")})) ++n;
  }
  return mine.empty() ? -1 : n;
}

}  // namespace ohio::testing
