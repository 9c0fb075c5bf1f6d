#include "tests/harness/loopback_server.h"

#include <string>

namespace ohio::testing {

std::unique_ptr<grpc::Server> ServeOnLoopback(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(*port), grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(service);
  auto server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) return nullptr;
  *port = bound;
  return server;
}

}  // namespace ohio::testing
