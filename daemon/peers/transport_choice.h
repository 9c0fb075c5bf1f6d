// Which data transport ohiod runs: `transport = verbs` insists on RDMA (and fails to start
// without an active port), `tcp` never touches RDMA, `auto` takes verbs when a usable port
// exists and says why it fell back to tcp otherwise. The reason goes to the log and Status.
// The tcp transport's data connections are authenticated by `auth` (verbs queue pairs are
// connected through the peer service, which checks its callers itself).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/host/host_topology.h"
#include "daemon/ops/config.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/verbs_transport.h"

namespace ohio {

struct ChosenTransport {
  std::unique_ptr<Transport> transport;
  VerbsTransport* verbs = nullptr;  // the same object when it is the verbs transport
  std::string why;
};

// `host`: this machine's topology, for where the verbs rails put their buffers.
Result<ChosenTransport> ChooseTransport(const DaemonConfig& config, PeerAuth* auth,
                                        std::shared_ptr<const HostTopology> host);

}  // namespace ohio
