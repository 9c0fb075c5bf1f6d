// The small messages daemons of a group send each other over the transport: ROUND_READY (my
// ranks are in for this round with this M, my SRB is free for it), CREDIT (v3: the SRB half
// for this delivery is free again) and RANK_GONE (a rank of mine departed and the group is
// closed here: close it too, naming that rank). Fixed 40-byte little-endian layout.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>
#include <optional>

namespace ohio {

struct ExchangeMessage {
  enum class Type : uint8_t { kRoundReady = 1, kCredit = 2, kRankGone = 3 };
  Type type = Type::kRoundReady;
  bool sizes_disagree = false;  // ROUND_READY: the sender's own ranks already disagree on M
  bool opted_out = false;         // ROUND_READY: one of the sender's ranks opted out of the call
  uint32_t tag = 0;             // the receiver's tag for the group
  uint32_t round = 0;
  uint32_t delivery = 0;        // CREDIT: the receiver may now put this delivery of the sender's;
                                // RANK_GONE: the group rank that departed;
                                // ROUND_READY: kReadyTooLarge, kReadyMixed or 0
  bool left = false;            // RANK_GONE: it said LeaveGroup (else its connection dropped)
  uint64_t bytes_per_rank = 0;  // ROUND_READY: M
  std::array<uint8_t, 16> key{};

  // ROUND_READY of an alltoallv round instead of its data: the sender's part of the call would
  // take more stream rounds than are served (shm/plan/vector_staging.h), so the call is not served on
  // any node.
  static constexpr uint32_t kReadyTooLarge = 1;
  // ROUND_READY sent to every node by a node whose round runs as a hypercube and that saw a
  // sign the group's nodes do not all run it (another M, a node's own ranks disagreeing or
  // opting out, a pairwise eager put): hypercube nodes hear directly from only log2 N nodes,
  // so every receiver answers with a ROUND_READY of its own to every node (once a round), and
  // every node learns every node's M and reaches the round's verdict as in announced rounds.
  static constexpr uint32_t kReadyMixed = 2;

  static constexpr size_t kBytes = 40;
  using Encoded = std::array<uint8_t, kBytes>;

  Encoded Encode() const;
  static std::optional<ExchangeMessage> Decode(const uint8_t* bytes, size_t size);
};

}  // namespace ohio
