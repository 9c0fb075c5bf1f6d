#include "daemon/transport/verbs/qp_endpoint.h"

#include <arpa/inet.h>

namespace ohio {

std::string GidText(const std::array<uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = "";
  inet_ntop(AF_INET6, gid.data(), text, sizeof(text));
  return text;
}

}  // namespace ohio
