// Queue pair endpoints as the peer service carries them (ConnectQueuePairs), both ways.
#pragma once

#include "common/status.h"
#include "daemon/transport/verbs/qp_endpoint.h"
#include "proto/peer.pb.h"

namespace ohio {

void EndpointToProto(const QpEndpoint& e, peer::QueuePairEndpoint* out);
// Refuses what no port could have sent: a GID that is not 16 bytes, an MTU outside 256..4096.
Result<QpEndpoint> EndpointFromProto(const peer::QueuePairEndpoint& in);

}  // namespace ohio
