// What the verbs transport keeps of one peer on RC: its queue pairs, one per rail in use with it,
// the regions it announced (addresses and rkeys, which RDMA writes need), and the rail each of
// them takes. Over UD none of it is used: datagrams are copied into regions by their key at the
// receiver. Guarded by the transport's lock, as the rest of the peer's state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "daemon/transport/verbs/rc/verbs_connection.h"

namespace ohio {

// A region the peer announced: where it is and its rkey on each rail.
struct RemoteRegion {
  uint64_t addr = 0;
  uint64_t bytes = 0;
  std::vector<uint32_t> rkeys;  // per rail
};

struct RcPeer {
  std::vector<std::unique_ptr<VerbsConnection>> conns;  // one per rail in use with this peer
  std::map<uint64_t, RemoteRegion> regions;             // its registered regions, by its keys
  // Its regions (by its keys) our puts have gone to, and the one rail each took.
  std::map<uint64_t, size_t> put_rails;
  bool dropping = false;  // a fragment of the bounce put under way had nowhere to land
};

}  // namespace ohio
