// A rail's one unreliable-datagram queue pair: every peer node outside the pool of RC queue pairs
// is reached through it, and every such peer's datagrams arrive on it. It owns a receive ring
// (each slot the 40-byte global route header UD receives carry first, then one datagram of the
// path's MTU) and the send slots a datagram is built in; a send slot stays taken while the
// datagram may have to be sent again (until acknowledged) and while the HCA may still read it (a
// posted send not completed), so a retransmission never sends bytes that were rewritten since.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "daemon/transport/verbs/qp_endpoint.h"
#include "daemon/transport/verbs/verbs_rail.h"

namespace ohio {

class UdQueuePair {
 public:
  // The queue key every ohio datagram queue pair uses: a datagram with another is dropped by the
  // HCA, so a stray sender that is not an ohiod never reaches the receive ring.
  static constexpr uint32_t kQkey = 0x0410110u;
  static constexpr uint32_t kGrhBytes = 40;

  // In RTS, every receive posted, `send_slots` slots of mtu bytes registered.
  static Result<std::unique_ptr<UdQueuePair>> Create(const Rail& rail, size_t rail_index, uint32_t recv_slots,
                                                     uint32_t send_slots, uint32_t send_depth);
  ~UdQueuePair();
  UdQueuePair(const UdQueuePair&) = delete;
  UdQueuePair& operator=(const UdQueuePair&) = delete;

  // What peers need to send to it (psn unused).
  const QpEndpoint& local() const { return local_; }
  // Bytes a datagram may have on this rail: its active MTU.
  uint32_t mtu_bytes() const { return mtu_bytes_; }

  // An address handle for a peer's datagram queue pair at `remote` (deleted with ibv_destroy_ah).
  Result<ibv_ah*> AddressOf(const QpEndpoint& remote) const;

  // Work request ids: receives and sends of this queue pair are told apart from every RC one.
  static bool Owns(uint64_t wr_id) { return (wr_id & kUdBit) != 0; }
  static bool IsReceive(uint64_t wr_id) { return (wr_id & kReceiveBit) != 0; }
  static size_t RailOf(uint64_t wr_id) { return static_cast<size_t>((wr_id >> 32) & 0xff); }
  static uint32_t SlotOf(uint64_t wr_id) { return static_cast<uint32_t>(wr_id); }

  // Receive ring. A slot is posted with its route header area zeroed.
  void RepostReceive(uint32_t slot);
  // The datagram in receive slot `slot` (after the GRH), and the 40 bytes before it: when the
  // completion says IBV_WC_GRH, an IPv6 header or an InfiniBand GRH (source GID at 8), or for
  // RoCE v2 over IPv4 20 bytes the provider leaves as they are and the IPv4 header (source
  // address at 32); without it, zeros (datagram_source.h).
  const uint8_t* received(uint32_t slot) const { return recv_base_ + size_t{slot} * recv_slot_bytes() + kGrhBytes; }
  const uint8_t* route_header(uint32_t slot) const { return recv_base_ + size_t{slot} * recv_slot_bytes(); }

  // Send slots: taken (one reference, the sender's), referenced again for each post, released by
  // each reference's owner; free once none is left.
  std::optional<uint32_t> TakeSlot();
  uint8_t* slot(uint32_t s) { return send_base_ + size_t{s} * mtu_bytes_; }
  void Release(uint32_t s);
  bool slots_exhausted() const { return free_.empty(); }
  size_t slots_free() const { return free_.size(); }
  // Bytes [0, bytes) of slot `s` to `ah`/`qpn`, staged to go out with the next PostStaged (its
  // reference and its room in the send queue taken now); false if the send queue is full.
  // Staged sends go in one post: on Soft-RoCE every post is a system call, and a put's datagrams,
  // or a pass's retransmissions, one post each made that call most of a datagram's cost.
  bool Stage(uint32_t s, uint32_t bytes, ibv_ah* ah, uint32_t qpn);
  // Posts what is staged, in the order staged; what the post refused is given back (its
  // datagrams are left to their retransmission, as if the network had lost them). The number
  // refused.
  size_t PostStaged();
  // A send of slot `s` completed (or failed): its post's reference and its room in the queue back.
  void SendCompleted(uint32_t s);
  uint32_t send_free() const { return send_free_; }

 private:
  static constexpr uint64_t kUdBit = 1ull << 62;
  static constexpr uint64_t kReceiveBit = 1ull << 61;
  UdQueuePair() = default;
  uint32_t recv_slot_bytes() const { return kGrhBytes + mtu_bytes_; }

  const Rail* rail_ = nullptr;
  size_t rail_index_ = 0;
  ibv_qp* qp_ = nullptr;
  QpEndpoint local_;
  uint32_t mtu_bytes_ = 1024;
  uint32_t recv_slots_ = 0;
  uint8_t* recv_base_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  uint32_t send_slots_ = 0;
  uint8_t* send_base_ = nullptr;
  ibv_mr* send_mr_ = nullptr;
  std::vector<uint32_t> refs_;  // per send slot
  struct Staged {
    uint32_t slot = 0;
    uint32_t bytes = 0;
    ibv_ah* ah = nullptr;
    uint32_t qpn = 0;
  };
  std::vector<Staged> staged_;
  std::vector<ibv_sge> staged_sges_;     // rebuilt at each PostStaged, reused
  std::vector<ibv_send_wr> staged_wrs_;
  std::vector<uint32_t> free_;
  uint32_t send_free_ = 0;
};

}  // namespace ohio
