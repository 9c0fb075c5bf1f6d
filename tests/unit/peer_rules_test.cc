// The rules that make a node one of this cluster's: Slurm hostlists and globs (peer-hosts), and
// the networks DNS answers must lie in (peer-networks); and the settings refused at load.
#include <arpa/inet.h>

#include <gtest/gtest.h>

#include "daemon/ops/address_ranges.h"
#include "daemon/ops/config.h"
#include "daemon/ops/host_pattern.h"

namespace ohio {
namespace {

TEST(HostPatterns, HostlistsMatchTheirNumbersAsWrittenAndGlobsTheirText) {
  auto p = HostPatterns::Parse("node[001-128,200],gpu[1-4]-ib, login*, cn?");
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (const char* yes : {"node001", "node128", "node200", "gpu3-ib", "login", "login07.site", "cn1"}) {
    EXPECT_TRUE(p->Matches(yes)) << yes;
  }
  for (const char* no : {"node1", "node000", "node129", "node0010", "gpu5-ib", "gpu3", "cn12", "xnode001", "node001x"}) {
    EXPECT_FALSE(p->Matches(no)) << no;
  }
  EXPECT_TRUE(HostPatterns::Parse("").value().empty());
  EXPECT_FALSE(HostPatterns::Parse("").value().Matches("anything"));
  EXPECT_FALSE(HostPatterns::Parse("*").value().Matches(std::string(300, 'a')));  // longer than a host name
}

TEST(HostPatterns, ABadPatternIsNamedWithWhatIsWrong) {
  EXPECT_EQ(HostPatterns::Parse("node[1-").status().message(),
            "peer-hosts: 'node[1-': a '[' without its ']' (expected names, globs with * and ?, or Slurm hostlists "
            "such as node[001-128])");
  EXPECT_NE(HostPatterns::Parse("node[9-1]").status().message().find("the range 9-1 runs backwards"), std::string::npos);
  EXPECT_NE(HostPatterns::Parse("node[a-b]").status().message().find("'a-b' in brackets is not a number"),
            std::string::npos);
  EXPECT_NE(HostPatterns::Parse("a,,b").status().message().find("an empty pattern"), std::string::npos);
}

bool In(const AddressRanges& r, const char* address) {
  sockaddr_storage s{};
  if (inet_pton(AF_INET, address, &reinterpret_cast<sockaddr_in*>(&s)->sin_addr) == 1) {
    s.ss_family = AF_INET;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, address, &reinterpret_cast<sockaddr_in6*>(&s)->sin6_addr), 1) << address;
    s.ss_family = AF_INET6;
  }
  return r.Contains(reinterpret_cast<const sockaddr*>(&s));
}

TEST(AddressRanges, AddressesInsideTheNetworksOnly) {
  auto r = AddressRanges::Parse("10.1.0.0/16, 192.168.7.9, fd00::/8");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(In(r.value(), "10.1.255.3"));
  EXPECT_FALSE(In(r.value(), "10.2.0.1"));
  EXPECT_TRUE(In(r.value(), "192.168.7.9"));
  EXPECT_FALSE(In(r.value(), "192.168.7.8"));
  EXPECT_TRUE(In(r.value(), "fd12::1"));
  EXPECT_FALSE(In(r.value(), "fe80::1"));
  EXPECT_TRUE(In(r.value(), "::ffff:10.1.0.1"));  // IPv4 as IPv6 writes it
  EXPECT_TRUE(In(AddressRanges::Parse("0.0.0.0/0").value(), "8.8.8.8"));
  EXPECT_NE(AddressRanges::Parse("10.0.0.0/33").status().message().find("prefix length must be 0 to 32"),
            std::string::npos);
  EXPECT_NE(AddressRanges::Parse("node1").status().message().find("'node1': not an IPv4 or IPv6 address"),
            std::string::npos);
}

TEST(PeerSettings, AreCheckedWhenLoaded) {
  const char* bad_hosts[] = {"ohiod", "--config=", "--peer-hosts", "node[1-"};
  ConfigOutcome out = LoadDaemonConfig(4, bad_hosts);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.output.find("a '[' without its ']'"), std::string::npos) << out.output;
  const char* networks_alone[] = {"ohiod", "--config=", "--peer-networks", "10.0.0.0/8"};
  out = LoadDaemonConfig(4, networks_alone);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.output.find("peer-networks restricts the DNS addresses of the nodes peer-hosts admits"),
            std::string::npos)
      << out.output;
  const char* good[] = {"ohiod", "--config=", "--peer-hosts", "node[001-128],gpu*", "--peer-networks", "10.0.0.0/8",
                        "--peer-calls-at-once", "8"};
  out = LoadDaemonConfig(8, good);
  EXPECT_FALSE(out.exit_now) << out.output;
  EXPECT_EQ(out.config.peer_hosts, "node[001-128],gpu*");
  EXPECT_EQ(out.config.peer_calls_at_once, 8u);
}

}  // namespace
}  // namespace ohio
