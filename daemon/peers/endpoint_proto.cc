#include "daemon/peers/endpoint_proto.h"

#include <cstring>

namespace ohio {

void EndpointToProto(const QpEndpoint& e, peer::QueuePairEndpoint* out) {
  out->set_gid(std::string(reinterpret_cast<const char*>(e.gid.data()), e.gid.size()));
  out->set_lid(e.lid);
  out->set_qpn(e.qpn);
  out->set_psn(e.psn);
  out->set_mtu(e.mtu);
  out->set_rail(e.rail);
}

Result<QpEndpoint> EndpointFromProto(const peer::QueuePairEndpoint& in) {
  if (in.gid().size() != 16) return Status(Code::kProtocol, "queue pair endpoint with a GID of " + std::to_string(in.gid().size()) + " bytes");
  if (in.mtu() < IBV_MTU_256 || in.mtu() > IBV_MTU_4096) {
    return Status(Code::kProtocol, "queue pair endpoint with MTU code " + std::to_string(in.mtu()));
  }
  if (in.qpn() == 0 || in.qpn() > 0xffffff || in.psn() > 0xffffff || in.lid() > 0xffff) {
    return Status(Code::kProtocol, "queue pair endpoint with QPN " + std::to_string(in.qpn()) + ", PSN " +
                                       std::to_string(in.psn()) + ", LID " + std::to_string(in.lid()));
  }
  QpEndpoint e;
  std::memcpy(e.gid.data(), in.gid().data(), 16);
  e.lid = static_cast<uint16_t>(in.lid());
  e.qpn = in.qpn();
  e.psn = in.psn();
  e.mtu = in.mtu();
  e.rail = in.rail();
  return e;
}

}  // namespace ohio
