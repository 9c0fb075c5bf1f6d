#include "daemon/transport/verbs/rc/verbs_connection.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/receive_slot.h"

namespace ohio {

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::Make(const Rail& rail, size_t rail_index,
                                                               uint32_t serial) {
  auto c = std::make_unique<VerbsConnection>();
  c->rail = rail_index;
  c->serial = serial;
  auto qp = QueuePair::Create(rail, kSendDepth, kRecvSlots, kMaxGather);
  if (!qp.ok()) return qp.status();
  c->qp = std::move(qp.value());
  const size_t ring = size_t{kRecvSlots} * kRecvSlotBytes;
  c->recv_base = static_cast<uint8_t*>(rail.AllocateNear(ring));
  if (c->recv_base == nullptr) return SystemError("allocating a receive ring", errno);
  c->recv_mr = ibv_reg_mr(rail.pd(), c->recv_base, ring, IBV_ACCESS_LOCAL_WRITE);
  if (c->recv_mr == nullptr) return SystemError("registering a receive ring on " + rail.name(), errno);
  for (uint32_t s = 0; s < kRecvSlots; ++s) c->RepostReceive(s);
  return c;
}

VerbsConnection::~VerbsConnection() {
  qp.reset();  // the queue pair first: then the HCA no longer touches the ring
  if (recv_mr != nullptr) ibv_dereg_mr(recv_mr);
  if (recv_base != nullptr) munmap(recv_base, size_t{kRecvSlots} * kRecvSlotBytes);
}

void VerbsConnection::RepostReceive(uint32_t slot) {
  if (int e = PostReceiveSlot(qp->qp(), recv_base + size_t{slot} * kRecvSlotBytes, kRecvSlotBytes, recv_mr->lkey,
                              kReceiveBit | uint64_t{serial} << 20 | slot);
      e != 0) {
    spdlog::warn("verbs: cannot post a receive on {}: {}", qp->local().rail, std::strerror(e));
  }
}

std::string RailUnreachable(size_t rail, const QpEndpoint& local, const QpEndpoint& remote, const std::string& peer,
                            const std::string& why) {
  return "rail " + std::to_string(rail) + " (" + local.rail + ", GID " + GidText(local.gid) + ") cannot reach rail " +
         std::to_string(rail) + " of node " + peer + " (" + remote.rail + ", GID " + GidText(remote.gid) + "): " + why +
         ". Rails pair by position: rail i of every node must be on the network of rail i of every other node "
         "(list the same HCAs in the same order in hca on every node)";
}

}  // namespace ohio
