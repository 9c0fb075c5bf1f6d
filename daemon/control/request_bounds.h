// The largest control request this daemon could admit, worked out from its settings alone: a
// frame announced longer than that is refused from its 4-byte length, before a byte of its
// payload is buffered or parsed (and a join within it that the SSB cannot hold is refused by
// the registry before the group's shape is built). A join the registry would refuse anyway
// must not cost the control thread, which every user shares, what admitting it would.
//
// The group-size limits behind the bound, each one the registry enforces:
// - nodes: a group spans only this node, the peers table's nodes and, when peer-hosts is set,
//   those it admits (any number, up to one per rank);
// - ranks: at most max-group-ranks, and few enough that one byte of each message of the node
//   with the most ranks fits ssb-bytes (twice over on one node: a round in each SSB half). On
//   one node, size^2 <= ssb-bytes / 2; over N nodes, size * ceil(size / N) <= ssb-bytes.
// Node names are counted at up to one per rank of up to 253 bytes (a DNS name; longer if a
// configured one is): a join naming nodes this cluster does not know still reaches the
// registry, whose refusal names them for the user.
// With the defaults (no peers, ssb-bytes 16 MiB) that is a group of 2,896 ranks: a join of at
// most 748 KiB, where a client could otherwise send 4 MiB (max-message-bytes) for a million.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "daemon/ops/config.h"
#include "proto/control.pb.h"

namespace ohio {

struct RequestBounds {
  uint32_t max_nodes = 0;  // nodes a group may span
  uint32_t max_ranks = 0;  // ranks of the largest group that could be admitted
  size_t max_node_name_bytes = 0;  // as counted in the bound
  // The encoded ClientMessage of the largest admissible join (every field at its longest),
  // capped by max-message-bytes: no Hello or LeaveGroup is longer.
  uint64_t max_request_bytes = 0;
};

RequestBounds ComputeRequestBounds(const DaemonConfig& config);

// A one-line account of the bound for an error message: "a group of at most R ranks on at
// most N nodes (max-group-ranks, ssb-bytes, the cluster's nodes)".
std::string DescribeRequestBounds(const RequestBounds& bounds);

}  // namespace ohio
