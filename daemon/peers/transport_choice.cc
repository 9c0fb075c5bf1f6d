#include "daemon/peers/transport_choice.h"

#include "daemon/transport/tcp/tcp_transport.h"

namespace ohio {
namespace {

Result<ChosenTransport> StartTcp(const DaemonConfig& config, PeerAuth* auth, std::string why) {
  TcpTransport::Auth data_auth;
  if (auth->enabled()) {
    data_auth.credential_for = [auth](const std::string& peer) { return auth->Mint(kDataPurpose, peer); };
    data_auth.check = [auth](const std::string& claimed, const std::string& credential, const std::string& from) {
      return auth->Check(AuthChannel::kData, kDataPurpose, credential, "'" + claimed + "' at " + from);
    };
  }
  TcpTransport::Limits limits;
  limits.hello_timeout = std::chrono::milliseconds(config.hello_timeout_ms);
  limits.max_unauthenticated = config.max_unauthenticated_data_connections;
  limits.frame_timeout = std::chrono::milliseconds(config.data_frame_timeout_ms);
  auto tcp = TcpTransport::Start(config.node_name, config.listen, config.data_port, config.advertise,
                                 std::move(data_auth), limits);
  if (!tcp.ok()) return tcp.status();
  ChosenTransport c;
  c.transport = std::move(tcp.value());
  c.why = std::move(why);
  return c;
}

}  // namespace

Result<ChosenTransport> ChooseTransport(const DaemonConfig& config, PeerAuth* auth,
                                        std::shared_ptr<const HostTopology> host) {
  if (config.transport == "tcp") return StartTcp(config, auth, "transport = tcp");
  auto rails = OpenRails(config.hcas, static_cast<int>(config.gid_index), std::move(host));
  if (!rails.ok()) {
    if (config.transport == "verbs") {
      return Status(rails.status().code(), "transport = verbs, but " + rails.status().message());
    }
    return StartTcp(config, auth, "transport = auto: no usable RDMA port (" + rails.status().message() + "), so tcp");
  }
  std::string names;
  for (const auto& r : rails.value()) names += (names.empty() ? "" : ", ") + r->name();
  const size_t count = rails.value().size();
  VerbsTransport::Options options;
  options.registration_delay = std::chrono::milliseconds(config.registration_delay_ms);
  options.rc_pool = config.rc_pool == "unlimited" ? VerbsTransport::kUnlimitedRcPool
                                                  : static_cast<uint32_t>(std::stoul(config.rc_pool));
  options.drop_one_datagram_in = config.drop_one_datagram_in;
  options.rc_pool_interval = std::chrono::milliseconds(config.rc_pool_interval_ms);
  auto verbs = VerbsTransport::Start(config.node_name, std::move(rails.value()), options);
  if (!verbs.ok()) {
    if (config.transport == "verbs") return Status(verbs.status().code(), "verbs transport: " + verbs.status().message());
    return StartTcp(config, auth, "transport = auto: the verbs transport did not start (" + verbs.status().message() +
                                "), so tcp");
  }
  ChosenTransport c;
  c.verbs = verbs.value().get();
  c.transport = std::move(verbs.value());
  c.why = "transport = " + config.transport + ": verbs on " + std::to_string(count) + " rail" +
          (count == 1 ? "" : "s") + " (" + names + ")";
  return c;
}

}  // namespace ohio
