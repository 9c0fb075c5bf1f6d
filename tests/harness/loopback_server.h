// A gRPC server on 127.0.0.1 serving one service, for tests that stand in for a peer daemon
// (another protocol version) or hold a port another process wants.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

namespace ohio::testing {

// Listens on `port` (0: any free one, written back into *port); null when it cannot listen.
std::unique_ptr<grpc::Server> ServeOnLoopback(grpc::Service* service, int* port);

}  // namespace ohio::testing
