#include "shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace ohio {
namespace {

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

Segment::~Segment() { Reset(); }

Segment::Segment(Segment&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      layout_(std::exchange(other.layout_, SegmentLayout{})) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    layout_ = std::exchange(other.layout_, SegmentLayout{});
  }
  return *this;
}

void Segment::Reset() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
  base_ = nullptr;
  fd_ = -1;
  bytes_ = 0;
  layout_ = SegmentLayout{};
}

Result<Segment> Segment::Create(const std::string& name, const SegmentLayout& layout) {
  Segment s;
  s.fd_ = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (s.fd_ < 0) return SystemError("memfd_create", errno);
  if (ftruncate(s.fd_, static_cast<off_t>(layout.segment_bytes)) != 0) {
    return SystemError("ftruncate of the group segment", errno);
  }
  if (fcntl(s.fd_, F_ADD_SEALS, kSeals) != 0) return SystemError("sealing the group segment", errno);
  void* p = mmap(nullptr, layout.segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (p == MAP_FAILED) return SystemError("mmap of the group segment", errno);
  s.base_ = static_cast<uint8_t*>(p);
  s.bytes_ = layout.segment_bytes;
  // The memfd is zero-filled.
  s.InitHeader(layout);
  return s;
}

Status Segment::ResetControlState(const SegmentLayout& layout) {
  if (layout.segment_bytes != bytes_) {
    return Status(Code::kInvalidArgument, "a segment of " + std::to_string(bytes_) +
                                              " bytes cannot take a layout of " + std::to_string(layout.segment_bytes));
  }
  std::memset(base_, 0, layout.ssb_offset);
  InitHeader(layout);
  return Status::Ok();
}

void Segment::InitHeader(const SegmentLayout& layout) {
  // Construct the atomics in place over zeroes (zero is their initial value).
  layout_ = layout;
  SegmentHeader* h = new (base_) SegmentHeader();
  h->magic = kSegmentMagic;
  h->version = kSegmentVersion;
  h->segment_bytes = layout.segment_bytes;
  h->group_size = layout.group_size;
  h->local_ranks = layout.local_ranks;
  h->slots_offset = layout.slots_offset;
  h->count_tables_offset = layout.count_tables_offset;
  h->ssb_offset = layout.ssb_offset;
  h->ssb_bytes = layout.ssb_bytes;
  h->srb_offset = layout.srb_offset;
  h->srb_bytes = layout.srb_bytes;
}

void Segment::Populate() {
  // Every page faulted in at once, before the group's first call moves data, instead of one fault
  // per page inside its first calls of each size: HPC Challenge's MPIFFT times a single
  // transform of three alltoalls, and those faults put its Gflop/s well below Open MPI's, where
  // populated it is not (docs/investigations/hpcc-mpifft.md has the figures). The segment is
  // sized for the calls the group was joined for (shm/plan/buffer_sizing.h): this commits what
  // they will use, charged to the job whose rank touched it first.
  if (madvise(base_, bytes_, MADV_POPULATE_WRITE) == 0) return;
  // A kernel before 5.14: reading each page faults it in too (shared memory maps no zero page).
  const long page = sysconf(_SC_PAGESIZE);
  for (uint64_t at = 0; at < bytes_; at += static_cast<uint64_t>(page)) {
    (void)*static_cast<volatile uint8_t*>(base_ + at);
  }
}

Result<Segment> Segment::Attach(int fd) {
  Segment s;
  s.fd_ = fd;
  struct stat st;
  if (fstat(fd, &st) != 0) return SystemError("fstat of the group segment", errno);
  if ((fcntl(fd, F_GET_SEALS) & kSeals) != kSeals) {
    return Status(Code::kProtocol, "the group segment received from ohiod is not sealed");
  }
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes < sizeof(SegmentHeader)) {
    return Status(Code::kProtocol, "the group segment received from ohiod is too small");
  }
  // Not populated here: a communicator whose calls the MPI library runs never touches the SSB
  // or SRB, and populating them would be part of every new communicator's first call. The
  // group's first call that moves data populates them (Populate).
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return SystemError("mmap of the group segment", errno);
  s.base_ = static_cast<uint8_t*>(p);
  s.bytes_ = bytes;
  const SegmentHeader* h = s.header();
  const bool consistent = h->magic == kSegmentMagic && h->version == kSegmentVersion &&
                          h->segment_bytes == bytes && h->ssb_offset + h->ssb_bytes <= bytes &&
                          h->srb_offset + h->srb_bytes <= bytes &&
                          h->slots_offset + uint64_t{h->local_ranks} * sizeof(RankSlot) <= h->count_tables_offset &&
                          h->count_tables_offset + 2 * uint64_t{h->local_ranks} * CountTableBytes(h->group_size) <=
                              h->ssb_offset;
  if (!consistent) {
    return Status(Code::kProtocol, "the group segment received from ohiod has an unexpected layout "
                                   "(daemon and library versions differ?)");
  }
  s.layout_ = SegmentLayout{h->local_ranks, h->group_size, h->slots_offset, h->count_tables_offset, h->ssb_offset,
                            h->ssb_bytes, h->srb_offset, h->srb_bytes, h->segment_bytes};
  return s;
}

}  // namespace ohio
