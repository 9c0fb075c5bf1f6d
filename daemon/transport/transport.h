// How ohiod moves bytes to other nodes. Shaped by RDMA: memory is registered before peers may
// write into it; a put names the peer's region by the key the peer handed out and carries a
// 32-bit immediate the receiver is told about; small messages (credits, round announcements)
// travel as sends; completions are reported through a pollable fd. One connection per peer
// node, shared by every group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio {

// Local memory a put gathers, in order; it must stay untouched until the put is done.
struct LocalPiece {
  const void* base = nullptr;
  uint64_t bytes = 0;
};

// What a transport has done with memory and queue pairs, for Status and Counters. A transport
// without registration or queue pairs (tcp) leaves them zero.
struct TransportStats {
  uint64_t registrations = 0;      // regions registered with the hardware so far
  uint64_t deregistrations = 0;
  uint64_t registered_bytes = 0;   // registered now
  uint64_t registrations_pending = 0;
  uint64_t direct_puts = 0;        // puts written straight from and into registered regions
  uint64_t bounce_puts = 0;        // puts that went through pre-registered bounce buffers
  uint64_t bounce_bytes = 0;
  uint32_t queue_pairs = 0;        // connected queue pairs, over every rail
  std::vector<std::string> rails;  // devices and ports carrying data, e.g. "rxe0:1"
};

struct TransportEvent {
  enum class Kind {
    kPutDone,   // a local put finished; its source memory may be reused
    kArrived,   // a peer's put landed in one of our regions
    kMessage,   // a peer's small message
    kPeerDown,  // the connection to a peer broke; puts to it are lost
  };
  Kind kind = Kind::kPutDone;
  std::string peer;
  uint32_t imm = 0;       // kArrived
  uint64_t cookie = 0;    // kPutDone: what the caller passed to Put
  uint64_t bytes = 0;     // kArrived
  std::string payload;    // kMessage; kPeerDown: the reason
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  // Where peers reach this transport; exchanged through the peer service.
  virtual std::string address() const = 0;

  // Memory that peers may put into; the key is what they must name.
  virtual Result<uint64_t> RegisterRegion(void* base, uint64_t bytes) = 0;
  virtual void DeregisterRegion(uint64_t key) = 0;

  // Makes sure a connection to `peer` (a node name) exists or is being made. Idempotent;
  // puts and sends issued before it is up are queued.
  virtual Status Connect(const std::string& peer, const std::string& address) = 0;

  // Writes the pieces, one after another, to remote_offset in the peer's region remote_key;
  // the peer gets one kArrived with `imm` once all of it has landed.
  virtual Status Put(const std::string& peer, const std::vector<LocalPiece>& pieces, uint64_t remote_key,
                     uint64_t remote_offset, uint32_t imm, uint64_t cookie) = 0;
  Status Put(const std::string& peer, const void* local, uint64_t bytes, uint64_t remote_key, uint64_t remote_offset,
             uint32_t imm, uint64_t cookie) {
    return Put(peer, std::vector<LocalPiece>{{local, bytes}}, remote_key, remote_offset, imm, cookie);
  }
  virtual Status Send(const std::string& peer, const std::string& message) = 0;

  // Readable while events are pending; Poll takes them.
  virtual int event_fd() const = 0;
  virtual void Poll(std::vector<TransportEvent>* out) = 0;

  // Data connections established now.
  virtual size_t connections() const = 0;
  virtual std::vector<std::string> connected_peers() const = 0;
  virtual TransportStats stats() const { return {}; }
};

}  // namespace ohio
