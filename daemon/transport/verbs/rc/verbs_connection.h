// One peer node's queue pair on one rail, with its receive ring: registered slots the peer's
// SENDs land in, each posted again once handled, and the send credits left on the queue pair.
// A receive's work request id names the connection (its serial) and the slot, so that its
// completion finds the connection, or is recognised as one for a connection dropped since.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/transport/verbs/rc/queue_pair.h"
#include "daemon/transport/verbs/registration/bounce_pool.h"
#include "daemon/transport/verbs/verbs_rail.h"
#include "daemon/transport/verbs/verbs_sizes.h"

namespace ohio {

struct VerbsConnection {
  static constexpr uint32_t kRecvSlots = verbs_sizes::kRcRecvSlots;
  static constexpr uint32_t kRecvSlotBytes = BouncePool::kSlotBytes;  // a slot takes any SEND
  static constexpr uint32_t kSendDepth = verbs_sizes::kRcSendDepth;
  static constexpr uint32_t kMaxGather = verbs_sizes::kRcMaxGather;

  // A queue pair in INIT on `rail` (index `rail_index`) with every receive slot posted.
  static Result<std::unique_ptr<VerbsConnection>> Make(const Rail& rail, size_t rail_index, uint32_t serial);
  ~VerbsConnection();

  // Whether a completion's work request id is a receive's, and which connection and slot.
  static bool IsReceive(uint64_t wr_id) { return (wr_id & kReceiveBit) != 0; }
  static uint32_t ReceiveSerial(uint64_t wr_id) { return static_cast<uint32_t>((wr_id & ~kReceiveBit) >> 20); }
  static uint32_t ReceiveSlot(uint64_t wr_id) { return static_cast<uint32_t>(wr_id & 0xfffff); }

  // Posts receive slot `slot` again (a failure is logged: the slot is then lost to the ring).
  void RepostReceive(uint32_t slot);
  const uint8_t* received(uint32_t slot) const { return recv_base + size_t{slot} * kRecvSlotBytes; }

  size_t rail = 0;
  uint32_t serial = 0;
  std::unique_ptr<QueuePair> qp;
  uint8_t* recv_base = nullptr;
  ibv_mr* recv_mr = nullptr;
  uint32_t send_free = kSendDepth;
  bool reached = false;  // a send on it completed: the peer's rail of the same index answers

 private:
  static constexpr uint64_t kReceiveBit = 1ull << 63;
};

// Why rail `rail` of this node cannot be used with node `peer`: its queue pair there would not
// connect, or the peer, alive on other rails, never acknowledged a send on it. Rails pair by
// position, so this is nearly always rails listed in different orders or cabled to another
// network, which only the admin can fix: said so, with both ends named.
std::string RailUnreachable(size_t rail, const QpEndpoint& local, const QpEndpoint& remote, const std::string& peer,
                            const std::string& why);

}  // namespace ohio
