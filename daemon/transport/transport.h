// How ohiod moves bytes to other nodes. Shaped by RDMA: memory is registered before peers may
// write into it; a put names the peer's region by the key the peer handed out and carries a
// 32-bit immediate the receiver is told about; small messages (credits, round announcements)
// travel as sends; completions are reported through a pollable fd. One connection per peer
// node, shared by every group.
//
// Threads: RegisterRegion, DeregisterRegion, PeerFor, Connect and the statistics may be called
// from any thread. Put, Send, Poll and PrepareToSleep belong to the progress engine's thread:
// the engine drives the connections itself (no hop to another thread per frame), and a put is
// written to the wire inside Put when the connection has nothing queued.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "common/connection_refusals.h"
#include "common/status.h"
#include "shm/placement/rail_choice.h"

namespace ohio {

// A peer node as the transport knows it: a small index handed out once per node name and kept
// for the daemon's life, so that the per-call path names peers without strings.
using PeerId = uint32_t;

// Local memory a put gathers, in order; it must stay untouched until the put is done.
struct LocalPiece {
  const void* base = nullptr;
  uint64_t bytes = 0;
};

// What a transport has done with memory, queue pairs and frames, for Status and Counters. A
// transport without registration or queue pairs (tcp) leaves those zero.
struct TransportStats {
  uint64_t registrations = 0;      // regions registered so far (verbs: with the HCAs; tcp: made writable by peers)
  uint64_t deregistrations = 0;
  uint64_t registered_bytes = 0;   // registered now
  uint64_t registrations_pending = 0;
  uint64_t direct_puts = 0;        // puts written straight from and into registered regions
  uint64_t bounce_puts = 0;        // puts that went through pre-registered bounce buffers
  uint64_t bounce_bytes = 0;
  uint32_t queue_pairs = 0;        // connected queue pairs, over every rail
  std::vector<std::string> rails;  // devices and ports carrying data, e.g. "rxe0:1"
  std::vector<uint64_t> rail_put_bytes;  // bytes of puts posted on each rail, as `rails`
  uint64_t striped_puts = 0;       // puts large enough to be cut across every rail
  // Queue pair moves to RTR tried again because the peer's address was not resolved yet (or the
  // device was busy): each is a second the kernel waited (verbs).
  uint64_t rtr_retries = 0;
  // Frames on the wire, counted where they are posted and where they complete arriving. A put
  // is one data frame however many pieces it gathers; a Send is one control frame; frames the
  // transport makes for itself (hellos, keepalives, region announcements) are not counted.
  uint64_t data_frames_sent = 0;
  uint64_t data_frames_received = 0;
  uint64_t control_frames_sent = 0;
  uint64_t control_frames_received = 0;
  // The verbs transport's UD service: the pool of RC queue pairs per rail (UINT32_MAX:
  // unlimited), the peers reached over UD instead, and what their datagrams did.
  uint32_t rc_pool = UINT32_MAX;
  uint32_t datagram_peers = 0;
  uint64_t datagram_puts = 0;
  uint64_t datagrams_sent = 0;
  uint64_t datagrams_received = 0;
  uint64_t datagram_acks_sent = 0;
  uint64_t datagram_retransmissions = 0;
  uint64_t datagram_duplicates = 0;
  uint64_t datagrams_refused = 0;  // from no peer of ours, malformed, or outside the window
  uint64_t datagrams_dropped = 0;  // by the loss the daemon was told to make (tests)
  // Peers moved between the services by their traffic (both ends count a move), and moves to RC
  // the other end refused, its own pool being full.
  uint64_t rc_promotions = 0;
  uint64_t rc_demotions = 0;
  uint64_t rc_moves_refused = 0;
  // Connections to the data port refused or closed unserved, by ConnectionRefusal (tcp).
  ConnectionRefusals::Counts refusals{};
};

// The largest message Send takes: the exchange's messages are a few dozen bytes, and a fixed
// bound lets events carry them without allocating.
constexpr size_t kMaxTransportMessage = 64;

struct TransportEvent {
  enum class Kind {
    kPutDone,   // a local put finished; its source memory may be reused
    kArrived,   // a peer's put landed in one of our regions
    kMessage,   // a peer's small message
    kPeerDown,  // the connection to a peer broke; puts to it are lost
  };
  Kind kind = Kind::kPutDone;
  PeerId peer = 0;
  uint32_t imm = 0;       // kArrived
  uint64_t cookie = 0;    // kPutDone: what the caller passed to Put
  uint64_t bytes = 0;     // kArrived: payload bytes that landed; kPutDone: bytes put
  uint32_t message_bytes = 0;                           // kMessage
  std::array<uint8_t, kMaxTransportMessage> message{};  // kMessage: the first message_bytes
  std::string reason;     // kPeerDown only
  // kPeerDown: the connection never came up (it could not be made, or one of its rails never
  // reached the peer's), rather than broke after it had: the ranks are told which.
  bool never_up = false;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  // Where peers reach this transport; exchanged through the peer service.
  virtual std::string address() const = 0;

  // Memory that peers may put into; the key is what they must name.
  virtual Result<uint64_t> RegisterRegion(void* base, uint64_t bytes) = 0;
  // Peers may no longer put into it; the registration is released once none of their puts
  // can still land. Also takes a parked region (below).
  virtual void DeregisterRegion(uint64_t key) = 0;
  // As DeregisterRegion for the peers (the key is dead to them), but the memory stays
  // registered, to be given to another group by ReuseRegion. False if there was nothing to
  // keep (the registration had not completed, or failed): the region is then deregistered.
  virtual bool ParkRegion(uint64_t key) = 0;
  // A parked region under a new key, announced to peers as a new region would be, without
  // registering anything. Empty while a peer's put under the old key may still land (the
  // peers have not all said they are done with it), or if `key` is not parked here.
  virtual std::optional<uint64_t> ReuseRegion(uint64_t key) = 0;
  // The rails that the puts of the group whose segment is region `key` should take, nearest
  // first (its segment placement's rail tiers, as indices of stats().rails). Called once the
  // group's ranks have all joined, before its first put; a transport without rails ignores it.
  virtual void PreferRails(uint64_t /*key*/, RailTiers /*tiers*/) {}

  // The id of node `node`, the same on every call for the daemon's life.
  virtual PeerId PeerFor(const std::string& node) = 0;
  virtual std::string PeerName(PeerId peer) const = 0;

  // Makes sure a connection to `peer` exists or is being made. Idempotent; puts and sends
  // issued before it is up are queued.
  virtual Status Connect(PeerId peer, const std::string& address) = 0;

  // Writes the pieces, one after another, to remote_offset in the peer's region remote_key;
  // the peer gets one kArrived with `imm` once all of it has landed. Engine thread only.
  virtual Status Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key,
                     uint64_t remote_offset, uint32_t imm, uint64_t cookie) = 0;
  // At most kMaxTransportMessage bytes. Engine thread only.
  virtual Status Send(PeerId peer, const void* message, size_t bytes) = 0;

  // Readable while the transport has work for Poll (the engine sleeps in epoll on it).
  virtual int event_fd() const = 0;
  // Does the transport's pending work and appends what happened to `out` (which the engine
  // reuses, so that a quiet pass allocates nothing). Called on every pass of a spinning
  // engine: a pass with nothing to do should cost no system call where the transport can
  // tell without one. Engine thread only.
  virtual void Poll(std::vector<TransportEvent>* out) = 0;
  // The engine is about to sleep on event_fd(): arm whatever notification the transport needs
  // (e.g. completion queues). False when work arrived meanwhile, so the engine polls again
  // instead of sleeping. Engine thread only.
  virtual bool PrepareToSleep() = 0;

  // Data connections established now.
  virtual size_t connections() const = 0;
  virtual std::vector<std::string> connected_peers() const = 0;
  // What carries the data to each connected peer, where a transport has more than one way:
  // verbs says "RC" (a queue pair of the pool) or "UD" (datagrams). Empty: one way for all.
  virtual std::map<std::string, std::string> peer_links() const { return {}; }
  virtual TransportStats stats() const { return {}; }
};

}  // namespace ohio
