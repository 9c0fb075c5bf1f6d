// Real verbs traffic over Soft-RoCE, inside the guest that tests/vm/rxe_guest.sh boots (rxe0 and
// rxe1 on the two ends of a veth pair). It proves the harness and the stack the verbs transport
// will use: RC QPs on separate devices and on one shared device, RDMA WRITE WITH IMM of 1 MiB,
// completions through a completion channel. Outside that guest there is no rxe0 and it fails.
//
// Every wait is bounded (poll() on the completion channel's fd): under emulation things are
// slow, but never forever. RTR resolves the peer's address (the kernel waits a second for its
// neighbour entry) and is tried again as the daemon does (daemon/transport/verbs/rc/modify_qp_retrying.h):
// the first connection after the guest's boot once failed there.

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "daemon/transport/verbs/rc/modify_qp_retrying.h"
#include "gtest/gtest.h"

namespace {

constexpr uint8_t kPort = 1;
constexpr int kGidIndex = 0;  // link-local IPv6 GID: needs no routing set-up
constexpr size_t kMessageBytes = 1 << 20;
constexpr size_t kGuardBytes = 4096;  // after the target region; must stay untouched
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint32_t kImmediate = 0x0A1B2C3D;
// Generous: TCG on a busy two-core machine, and a retransmit or two is normal for rxe.
constexpr std::chrono::seconds kCompletionTimeout(60);
// How long RTR is tried again while the peer's address is not resolved.
constexpr std::chrono::seconds kRtrRetryTimeout(30);

std::string Errno(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// The byte the sender writes at offset i: depends on the position within and across 4 KiB pages,
// so a misplaced, repeated or missing packet shows.
uint8_t PatternByte(size_t i) {
  return static_cast<uint8_t>((i * 7) ^ (i >> 12) ^ 0x5C);
}

// What the other side needs to send to a QP and write into its buffer.
struct Remote {
  uint32_t qpn;
  uint32_t psn;
  ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
};

// One verbs endpoint: its own device context (as a separate daemon would have), protection domain,
// completion channel, one CQ for sends and receives, an RC QP and a registered buffer
// (message + guard).
class Endpoint {
 public:
  ~Endpoint() {
    if (qp_) ibv_destroy_qp(qp_);
    if (mr_) ibv_dereg_mr(mr_);
    if (cq_) {
      if (unacked_events_) ibv_ack_cq_events(cq_, unacked_events_);
      ibv_destroy_cq(cq_);
    }
    if (channel_) ibv_destroy_comp_channel(channel_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
    std::free(buf_);
  }

  // Opens `device` and creates everything up to a QP in RESET. Fails the test on error.
  void Open(const std::string& device, uint32_t psn) {
    psn_ = psn;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr) << Errno("ibv_get_device_list", errno);
    for (int i = 0; i < n && !ctx_; ++i) {
      if (device == ibv_get_device_name(list[i])) ctx_ = ibv_open_device(list[i]);
    }
    ibv_free_device_list(list);
    ASSERT_NE(ctx_, nullptr) << "no RDMA device " << device
                             << " (this test runs inside tests/vm/rxe_guest.sh)";

    ASSERT_EQ(ibv_query_port(ctx_, kPort, &port_), 0) << Errno("ibv_query_port", errno);
    ASSERT_EQ(port_.state, IBV_PORT_ACTIVE) << device << " port " << int(kPort) << " not active";
    ASSERT_EQ(ibv_query_gid(ctx_, kPort, kGidIndex, &gid_), 0) << Errno("ibv_query_gid", errno);
    ibv_gid zero{};
    ASSERT_NE(std::memcmp(&gid_, &zero, sizeof gid_), 0) << device << " has no GID " << kGidIndex;

    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr) << Errno("ibv_alloc_pd", errno);
    channel_ = ibv_create_comp_channel(ctx_);
    ASSERT_NE(channel_, nullptr) << Errno("ibv_create_comp_channel", errno);
    cq_ = ibv_create_cq(ctx_, 16, nullptr, channel_, 0);
    ASSERT_NE(cq_, nullptr) << Errno("ibv_create_cq", errno);

    ASSERT_EQ(posix_memalign(&buf_, 4096, kMessageBytes + kGuardBytes), 0);
    mr_ = ibv_reg_mr(pd_, buf_, kMessageBytes + kGuardBytes,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(mr_, nullptr) << Errno("ibv_reg_mr (is `ulimit -l` unlimited?)", errno);

    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp_ = ibv_create_qp(pd_, &init);
    ASSERT_NE(qp_, nullptr) << Errno("ibv_create_qp", errno);
  }

  Remote Describe() const {
    return Remote{qp_->qp_num, psn_, gid_, reinterpret_cast<uintptr_t>(buf_), mr_->rkey};
  }

  // RESET -> INIT -> RTR -> RTS towards `remote`.
  void Connect(const Remote& remote) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = kPort;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    int rc = ibv_modify_qp(qp_, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    ASSERT_EQ(rc, 0) << Errno("modify_qp INIT", rc);

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = port_.active_mtu;
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;  // 0.64 ms
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = kGidIndex;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = kPort;
    const ohio::ModifyQpOutcome rtr = ohio::ModifyQpRetrying(
        qp_, a,
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
        ohio::TransitionRetryPolicy{}, std::chrono::steady_clock::now() + kRtrRetryTimeout,
        [](int attempt, int err, std::chrono::milliseconds pause) {
          std::fprintf(stderr, "modify_qp RTR attempt %d: %s; trying again in %lld ms\n", attempt,
                       std::strerror(err), static_cast<long long>(pause.count()));
        });
    rtr_attempts_ = rtr.attempts;
    ASSERT_EQ(rtr.error, 0) << "modify_qp RTR: "
                            << ohio::DescribeAttempts(rtr.error, rtr.attempts, rtr.took);

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn_;
    a.timeout = 14;  // 4.096 us * 2^14 = 67 ms before a retransmit
    a.retry_cnt = 7;
    a.rnr_retry = 7;  // retry forever on receiver-not-ready (the receive is posted first anyway)
    a.max_rd_atomic = 1;
    rc = ibv_modify_qp(qp_, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    ASSERT_EQ(rc, 0) << Errno("modify_qp RTS", rc);
  }

  uint8_t* data() { return static_cast<uint8_t*>(buf_); }
  // How many tries the last Connect's RTR took.
  int rtr_attempts() const { return rtr_attempts_; }

  void PostReceive(uint64_t wr_id) {
    // RDMA WRITE WITH IMM consumes a receive but puts no data in it: a small scatter entry in
    // the guard area is never written.
    ibv_sge sge{reinterpret_cast<uintptr_t>(data() + kMessageBytes), 64, mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(qp_, &wr, &bad);
    ASSERT_EQ(rc, 0) << Errno("ibv_post_recv", rc);
  }

  void PostWriteWithImm(uint64_t wr_id, const Remote& remote, size_t bytes, uint32_t imm) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(qp_, &wr, &bad);
    ASSERT_EQ(rc, 0) << Errno("ibv_post_send", rc);
  }

  // Waits for the next completion on this endpoint's CQ, at most `timeout`. Arms the CQ, polls
  // once more (a completion may have arrived before arming), then sleeps in poll() on the
  // channel's fd. False on timeout or error, with the reason in *why.
  bool WaitCompletion(ibv_wc* wc, std::chrono::milliseconds timeout, std::string* why) {
    auto fail = [why](std::string reason) {
      *why = std::move(reason);
      return false;
    };
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int n = ibv_poll_cq(cq_, 1, wc);
      if (n > 0) return true;
      if (n < 0) return fail("ibv_poll_cq failed");
      if (int rc = ibv_req_notify_cq(cq_, 0)) return fail(Errno("ibv_req_notify_cq", rc));
      n = ibv_poll_cq(cq_, 1, wc);
      if (n > 0) return true;
      if (n < 0) return fail("ibv_poll_cq failed");

      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return fail("no completion within the timeout");
      pollfd p{channel_->fd, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno != EINTR) return fail(Errno("poll", errno));
      if (ready <= 0) continue;  // EINTR, or the deadline: the checks above decide
      ibv_cq* cq = nullptr;
      void* cq_context = nullptr;
      if (ibv_get_cq_event(channel_, &cq, &cq_context)) {
        return fail(Errno("ibv_get_cq_event", errno));
      }
      // Acknowledged in batches (and in the destructor): acking takes a lock.
      if (++unacked_events_ == 16) {
        ibv_ack_cq_events(cq_, unacked_events_);
        unacked_events_ = 0;
      }
    }
  }

 private:
  uint32_t psn_ = 0;
  int rtr_attempts_ = 0;
  ibv_context* ctx_ = nullptr;
  ibv_port_attr port_{};
  ibv_gid gid_{};
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  unsigned unacked_events_ = 0;
  void* buf_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_qp* qp_ = nullptr;
};

uint32_t RandomPsn() {
  static std::mt19937 gen(std::random_device{}());
  return gen() & 0xFFFFFF;  // PSNs are 24 bits
}

// Connects an endpoint on `from_device` to one on `to_device`, writes kMessageBytes of the
// pattern with an immediate from the first into the second's buffer, and checks what arrived.
void WriteWithImmAndCheck(const std::string& from_device, const std::string& to_device) {
  Endpoint sender, receiver;
  ASSERT_NO_FATAL_FAILURE(sender.Open(from_device, RandomPsn()));
  ASSERT_NO_FATAL_FAILURE(receiver.Open(to_device, RandomPsn()));
  ASSERT_NO_FATAL_FAILURE(sender.Connect(receiver.Describe()));
  ASSERT_NO_FATAL_FAILURE(receiver.Connect(sender.Describe()));

  for (size_t i = 0; i < kMessageBytes; ++i) sender.data()[i] = PatternByte(i);
  std::memset(receiver.data(), 0, kMessageBytes);
  std::memset(receiver.data() + kMessageBytes, kGuardByte, kGuardBytes);

  constexpr uint64_t kRecvId = 0xBEEF, kSendId = 0xF00D;
  ASSERT_NO_FATAL_FAILURE(receiver.PostReceive(kRecvId));
  ASSERT_NO_FATAL_FAILURE(sender.PostWriteWithImm(kSendId, receiver.Describe(), kMessageBytes,
                                                  kImmediate));

  ibv_wc wc{};
  std::string why;
  ASSERT_TRUE(sender.WaitCompletion(&wc, kCompletionTimeout, &why)) << "sender: " << why;
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << "sender: " << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, kSendId);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);

  wc = {};
  ASSERT_TRUE(receiver.WaitCompletion(&wc, kCompletionTimeout, &why)) << "receiver: " << why;
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "receiver: " << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, kRecvId);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc.imm_data), kImmediate);
  EXPECT_EQ(wc.byte_len, kMessageBytes);

  // Every byte; report the first few differences and how many, not a million failures.
  size_t wrong = 0;
  for (size_t i = 0; i < kMessageBytes; ++i) {
    const uint8_t want = PatternByte(i), got = receiver.data()[i];
    if (got != want && ++wrong <= 5) {
      ADD_FAILURE() << "byte " << i << ": got " << int(got) << ", want " << int(want);
    }
  }
  EXPECT_EQ(wrong, 0u) << "bytes wrong out of " << kMessageBytes;
  size_t guard_hit = 0;
  for (size_t i = 0; i < kGuardBytes; ++i) {
    guard_hit += receiver.data()[kMessageBytes + i] != kGuardByte;
  }
  EXPECT_EQ(guard_hit, 0u) << "bytes written past the end of the target region";
}

TEST(VerbsSmoke, BothDevicesActive) {
  for (const char* device : {"rxe0", "rxe1"}) {
    SCOPED_TRACE(device);
    Endpoint e;
    ASSERT_NO_FATAL_FAILURE(e.Open(device, 0));
  }
}

// rxe0 -> rxe1: the packets cross the veth pair.
TEST(VerbsSmoke, WriteWithImmAcrossDevices) { WriteWithImmAndCheck("rxe0", "rxe1"); }

// rxe1 -> rxe0 too: both directions of the pair work.
TEST(VerbsSmoke, WriteWithImmAcrossDevicesReverse) { WriteWithImmAndCheck("rxe1", "rxe0"); }

// Two QPs on one device (separate contexts, as two daemons sharing an HCA would have).
TEST(VerbsSmoke, WriteWithImmLoopbackOnOneDevice) { WriteWithImmAndCheck("rxe0", "rxe0"); }

}  // namespace
