// The sizes the verbs transport gives its queues and buffers, apart from the verbs headers so
// that planning (ohio-plan's queue pair budget) reads the same numbers the transport allocates.
#pragma once

#include <cstdint>

namespace ohio::verbs_sizes {

// A bounce or receive slot holds one SEND: the 40-byte header and up to 64 KiB - 40 of payload.
// Big enough that a bounced 4 MiB put is 65 sends, small enough that the rings stay a few MiB.
constexpr uint32_t kSlotBytes = 64u << 10;
constexpr uint32_t kBounceSlots = 64;  // per rail, shared by every peer

// One RC connection (a peer node on a rail).
constexpr uint32_t kRcRecvSlots = 32;   // its receive ring, kSlotBytes each
constexpr uint32_t kRcSendDepth = 128;  // work requests in flight
constexpr uint32_t kRcMaxGather = 30;   // SGEs per work request asked for (the device may allow fewer)

// The UD path: one queue pair per rail for every peer outside the RC pool (the transport allocates
// these, and ohio-plan's queue pair budget reads them). Its receive ring
// takes the datagrams of all of them, so it is deeper than an RC connection's; a slot holds a
// datagram of the path's MTU and the 40-byte global route header UD receives carry first.
constexpr uint32_t kUdMtu = 4096;
constexpr uint32_t kUdGrhBytes = 40;
constexpr uint32_t kUdRecvSlots = 4096;
constexpr uint32_t kUdSendDepth = 1024;

// What one work queue entry takes in the queue's memory, as mlx5 lays out a send (a 16-byte
// control segment, a 16-byte remote address, 16 bytes per SGE, in 64-byte units) and a receive
// (16 bytes per SGE): an estimate of the queues' size, not the HCA's own context memory.
constexpr uint32_t SendEntryBytes(uint32_t sges) { return (32 + 16 * sges + 63) / 64 * 64; }
constexpr uint32_t kRecvEntryBytes = 16;

}  // namespace ohio::verbs_sizes
