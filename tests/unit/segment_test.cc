#include "shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/segment_layout.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;

TEST(SegmentLayout, AlignedDisjointAndCovered) {
  static_assert(sizeof(RankSlot) % kCacheLine == 0, "ranks never share a cache line");
  static_assert(alignof(SegmentHeader) == kCacheLine, "header is cache-line aligned");
  const std::vector<uint64_t> sizes = {0, 1, 63, 4095, 4096, 4097, 100000, 1ull << 30};
  for (uint32_t ranks = 0; ranks <= 200; ++ranks) {
    const uint32_t group_size = ranks * 3 + 1;
    for (uint64_t ssb : sizes) {
      for (uint64_t srb : sizes) {
        SCOPED_TRACE("ranks " + std::to_string(ranks) + " ssb " + std::to_string(ssb) + " srb " +
                     std::to_string(srb));
        const SegmentLayout l = ComputeSegmentLayout(ranks, group_size, ssb, srb);
        EXPECT_GE(l.slots_offset, sizeof(SegmentHeader));
        EXPECT_EQ(l.slots_offset % kCacheLine, 0u);
        EXPECT_LE(l.slots_offset + uint64_t{ranks} * sizeof(RankSlot), l.count_tables_offset);
        EXPECT_EQ(l.count_tables_offset % kCacheLine, 0u);
        const uint64_t tables_end = l.count_tables_offset + 2 * uint64_t{ranks} * CountTableBytes(group_size);
        // The daemon's hypercube lines of both parities between the count tables and the SSB.
        EXPECT_LE(tables_end, l.cube_out_offset);
        EXPECT_EQ(l.cube_out_offset % kCacheLine, 0u);
        EXPECT_EQ(l.cube_out_bytes, CubeOutBytes(group_size));
        const uint64_t cube_end = l.cube_out_offset + 2 * l.cube_out_bytes;
        EXPECT_LE(cube_end, l.ssb_offset);
        EXPECT_EQ(l.ssb_offset % kPage, 0u);
        EXPECT_EQ(l.ssb_bytes, ssb);
        EXPECT_LE(l.ssb_offset + l.ssb_bytes, l.srb_offset);
        EXPECT_EQ(l.srb_offset % kPage, 0u);
        // A header line per eager slot of both halves besides what the group plans with.
        const uint64_t srb_held = srb == 0 ? 0 : srb + SrbHeaderRoomBytes(group_size);
        EXPECT_EQ(l.srb_bytes, srb_held);
        EXPECT_LE(l.srb_offset + l.srb_bytes, l.segment_bytes);
        EXPECT_EQ(l.segment_bytes % kPage, 0u);
        // No more padding than page alignment needs.
        EXPECT_LT(l.cube_out_offset, tables_end + kCacheLine);
        EXPECT_LT(l.ssb_offset, cube_end + kPage);
        EXPECT_LT(l.srb_offset, l.ssb_offset + ssb + kPage);
        EXPECT_LT(l.segment_bytes, l.srb_offset + srb_held + kPage);
      }
    }
  }
}

class SegmentTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kRanks = 5;
  SegmentLayout layout_ = ComputeSegmentLayout(kRanks, 2 * kRanks, 3 * 4096 + 100, 2 * 4096);

  Segment MakeSegment() {
    Result<Segment> r = Segment::Create("ohio-unit-test", layout_);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return Segment();
    Segment s = std::move(r).value();
    s.header()->local_ranks = kRanks;
    return s;
  }
};

// Any rank of the group may write the header. The daemon maps the same memory: a rank that
// rewrites the offsets or the count of local ranks there must not move where the daemon's
// segment finds its slots, count tables, SSB and SRB, nor how far its loops over slots go.
TEST_F(SegmentTest, TheHeaderWrittenByARankDoesNotMoveTheDaemonsView) {
  Segment s = MakeSegment();
  uint8_t* const ssb = s.ssb();
  uint8_t* const srb = s.srb();
  RankSlot* const slot1 = s.slot(1);
  CountEntry* const table = s.count_table(2, 1);
  SegmentHeader* h = s.header();
  h->ssb_offset = uint64_t{1} << 40;
  h->srb_offset = uint64_t{1} << 40;
  h->slots_offset = uint64_t{1} << 40;
  h->count_tables_offset = uint64_t{1} << 40;
  h->local_ranks = 1u << 30;
  h->group_size = 1u << 30;
  EXPECT_EQ(s.ssb(), ssb);
  EXPECT_EQ(s.srb(), srb);
  EXPECT_EQ(s.slot(1), slot1);
  EXPECT_EQ(s.count_table(2, 1), table);
  // The loop stops at the daemon's own count (it would run off the mapping at 2^30).
  for (uint32_t l = 0; l < kRanks; ++l) s.slot(l)->arrived_round.store(7);
  EXPECT_TRUE(s.AllArrived(7));
}

TEST_F(SegmentTest, CreateIsSealedZeroedAndDescribed) {
  Segment s = MakeSegment();
  ASSERT_GE(s.fd(), 0);
  EXPECT_EQ(s.bytes(), layout_.segment_bytes);

  const int seals = fcntl(s.fd(), F_GET_SEALS);
  ASSERT_GE(seals, 0);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
  EXPECT_NE(seals & F_SEAL_SEAL, 0) << "seals could be removed again";
  EXPECT_NE(ftruncate(s.fd(), static_cast<off_t>(layout_.segment_bytes / 2)), 0);
  EXPECT_NE(ftruncate(s.fd(), static_cast<off_t>(layout_.segment_bytes * 2)), 0);
  EXPECT_NE(ftruncate(s.fd(), 0), 0);
  EXPECT_EQ(lseek(s.fd(), 0, SEEK_END), static_cast<off_t>(layout_.segment_bytes));

  const SegmentHeader* h = s.header();
  EXPECT_EQ(h->magic, kSegmentMagic);
  EXPECT_EQ(h->version, kSegmentVersion);
  EXPECT_EQ(h->segment_bytes, layout_.segment_bytes);
  EXPECT_EQ(h->slots_offset, layout_.slots_offset);
  EXPECT_EQ(h->ssb_offset, layout_.ssb_offset);
  EXPECT_EQ(h->ssb_bytes, layout_.ssb_bytes);
  EXPECT_EQ(h->srb_offset, layout_.srb_offset);
  EXPECT_EQ(h->srb_bytes, layout_.srb_bytes);
  EXPECT_EQ(h->event_count.load(), 0u);
  EXPECT_EQ(h->state.load(), static_cast<uint32_t>(GroupState::kOpen));
  EXPECT_EQ(s.ssb(), reinterpret_cast<uint8_t*>(s.header()) + layout_.ssb_offset);
  EXPECT_EQ(s.srb(), reinterpret_cast<uint8_t*>(s.header()) + layout_.srb_offset);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(s.slot(0)), reinterpret_cast<uint8_t*>(s.header()) + layout_.slots_offset);
  for (uint64_t i = 0; i < layout_.ssb_bytes; ++i) ASSERT_EQ(s.ssb()[i], 0) << i;
  for (uint64_t i = 0; i < layout_.srb_bytes; ++i) ASSERT_EQ(s.srb()[i], 0) << i;
}

// A rank's mapping is populated at the join: no page of the segment faults inside the group's
// first calls (shm/segment.cc). The daemon's own mapping has touched only the header.
// Attach maps without faulting the SSB and SRB in (a communicator whose calls the MPI library
// runs never uses them); Populate, at the group's first call that moves data, faults in every
// page at once instead of one fault per page inside the first calls.
TEST_F(SegmentTest, PopulateFaultsInEveryPageAtOnceAttachNone) {
  Segment daemon = MakeSegment();
  const int fd = dup(daemon.fd());
  ASSERT_GE(fd, 0);
  Result<Segment> attached = Segment::Attach(fd);
  ASSERT_TRUE(attached.ok()) << attached.status().message();
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t pages = (attached->bytes() + page - 1) / page;
  ASSERT_GT(pages, 2u) << "a segment of more than its header's pages";
  auto resident_pages = [&] {
    std::vector<unsigned char> resident(pages);
    EXPECT_EQ(mincore(attached->header(), attached->bytes(), resident.data()), 0) << errno;
    uint64_t in = 0;
    for (unsigned char r : resident) in += r & 1;
    return in;
  };
  EXPECT_LT(resident_pages(), pages) << "Attach faulted the SSB and SRB in";
  attached->Populate();
  EXPECT_EQ(resident_pages(), pages) << "pages of the SSB/SRB left to fault in at the first calls";
}

TEST_F(SegmentTest, AttachMapsTheSameMemory) {
  Segment daemon = MakeSegment();
  ASSERT_GE(daemon.fd(), 0);
  const int fd = dup(daemon.fd());
  ASSERT_GE(fd, 0);
  Result<Segment> attached = Segment::Attach(fd);
  ASSERT_TRUE(attached.ok()) << attached.status().message();
  Segment& client = attached.value();
  EXPECT_EQ(client.fd(), fd);
  EXPECT_EQ(client.bytes(), daemon.bytes());
  EXPECT_NE(client.header(), daemon.header()) << "expected a second mapping";
  EXPECT_EQ(client.header()->local_ranks, kRanks);

  // Daemon -> client, through every region.
  std::memcpy(daemon.ssb(), "ssb data", 8);
  daemon.srb()[layout_.srb_bytes - 1] = 0x5a;
  daemon.header()->finished_round.store(7);
  EXPECT_EQ(std::memcmp(client.ssb(), "ssb data", 8), 0);
  EXPECT_EQ(client.srb()[layout_.srb_bytes - 1], 0x5a);
  EXPECT_EQ(client.header()->finished_round.load(), 7u);

  // Client -> daemon.
  client.slot(kRanks - 1)->arrived_round.store(42);
  client.ssb()[layout_.ssb_bytes - 1] = 0xa5;
  EXPECT_EQ(daemon.slot(kRanks - 1)->arrived_round.load(), 42u);
  EXPECT_EQ(daemon.ssb()[layout_.ssb_bytes - 1], 0xa5);
}

TEST_F(SegmentTest, MovedSegmentKeepsMapping) {
  Segment a = MakeSegment();
  ASSERT_GE(a.fd(), 0);
  SegmentHeader* h = a.header();
  Segment b(std::move(a));
  EXPECT_EQ(a.fd(), -1);
  EXPECT_EQ(b.header(), h);
  Segment c;
  c = std::move(b);
  EXPECT_EQ(c.header(), h);
  EXPECT_EQ(c.header()->magic, kSegmentMagic);
}

// A memfd holding a copy of a valid segment's bytes, with the given seals added.
int CopyIntoMemfd(const Segment& from, bool allow_sealing, int seals) {
  const int fd = memfd_create("ohio-unit-copy", MFD_CLOEXEC | (allow_sealing ? MFD_ALLOW_SEALING : 0));
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(from.bytes())) != 0) return -1;
  void* p = mmap(nullptr, from.bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  std::memcpy(p, from.header(), from.bytes());
  munmap(p, from.bytes());
  if (seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0) return -1;
  return fd;
}

TEST_F(SegmentTest, AttachAcceptsAnIdenticalSealedCopy) {
  Segment s = MakeSegment();
  const int fd = CopyIntoMemfd(s, true, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  ASSERT_GE(fd, 0);
  Result<Segment> r = Segment::Attach(fd);
  EXPECT_TRUE(r.ok()) << r.status().message();
}

TEST_F(SegmentTest, AttachRejectsUnsealedMemfd) {
  Segment s = MakeSegment();
  for (int seals : {0, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SHRINK | F_SEAL_GROW}) {
    for (bool allow : {false, true}) {
      if (!allow && seals != 0) continue;
      SCOPED_TRACE("seals " + std::to_string(seals) + " allow " + std::to_string(allow));
      const int fd = CopyIntoMemfd(s, allow, seals);
      ASSERT_GE(fd, 0);
      Result<Segment> r = Segment::Attach(fd);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), Code::kProtocol);
      EXPECT_THAT(r.status().message(), HasSubstr("sealed"));
    }
  }
}

TEST_F(SegmentTest, AttachRejectsWrongMagicVersionOrLayout) {
  struct Case {
    const char* what;
    void (*corrupt)(SegmentHeader*);
  };
  const Case cases[] = {
      {"magic", [](SegmentHeader* h) { h->magic ^= 1; }},
      {"version", [](SegmentHeader* h) { h->version = kSegmentVersion + 1; }},
      {"size", [](SegmentHeader* h) { h->segment_bytes += kPage; }},
      {"ssb past end", [](SegmentHeader* h) { h->ssb_bytes = h->segment_bytes; }},
      {"srb past end", [](SegmentHeader* h) { h->srb_bytes += kPage; }},
      {"slots overlap ssb", [](SegmentHeader* h) { h->local_ranks = 1000; }},
      {"count tables overlap ssb", [](SegmentHeader* h) { h->group_size = 1u << 20; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Segment s = MakeSegment();
    ASSERT_GE(s.fd(), 0);
    c.corrupt(s.header());
    Result<Segment> r = Segment::Attach(dup(s.fd()));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kProtocol);
  }
}

TEST(SegmentAttach, RejectsTooSmallSealedMemfd) {
  const int fd = memfd_create("ohio-unit-small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 16), 0);
  ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  Result<Segment> r = Segment::Attach(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kProtocol);
}

TEST(SegmentAttach, RejectsSomethingThatIsNotAFile) {
  Result<Segment> r = Segment::Attach(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kSystem);
}

}  // namespace
}  // namespace ohio
