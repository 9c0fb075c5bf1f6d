// ohioctl: asks a node's ohiod what it is doing, over the admin API (gRPC on the daemon's
// root-only unix socket). Text for a person by default, --json for scripts.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "admin/metrics_text.h"
#include "client/ohioctl_cli/ohioctl_render.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/admin.grpc.pb.h"

namespace {

using nlohmann::json;

// Exit codes, documented in --help and docs/OPERATIONS.md; scripts branch on them.
enum Exit : int {
  kOk = 0,
  kUnhealthy = 1,  // `health`: the daemon answers but is not healthy
  kUsage = 2,
  kNoDaemon = 3,    // no daemon answers on the socket
  kDenied = 4,      // the socket is not ours to use (not root)
  kDaemonError = 5  // the daemon answered with an error
};

struct Failure {
  int code;
  std::string message;
};

// Classifies why the admin socket cannot be used before gRPC would blur it into UNAVAILABLE.
std::optional<Failure> Probe(const std::string& path) {
  auto addr = ohio::UnixAddress(path);
  if (!addr.ok()) return Failure{kUsage, addr.status().message()};
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Failure{kNoDaemon, std::string("socket: ") + std::strerror(errno)};
  const int r = connect(fd, reinterpret_cast<const struct sockaddr*>(&addr.value()), sizeof(struct sockaddr_un));
  const int err = errno;
  close(fd);
  if (r == 0) return std::nullopt;
  switch (err) {
    case ENOENT:
      return Failure{kNoDaemon, "ohiod is not running: there is no admin socket " + path +
                                    " (start it with `systemctl start ohiod`, or name another daemon's admin "
                                    "socket with --socket)"};
    case ECONNREFUSED:
      return Failure{kNoDaemon,
                     "ohiod is not running: nothing listens on " + path + " (the socket of a daemon that stopped)"};
    case EACCES:
    case EPERM:
      return Failure{kDenied, "permission denied on " + path +
                                  ": the admin socket is root's only; run ohioctl as root (e.g. with sudo)"};
    default:
      return Failure{kNoDaemon, "cannot connect to " + path + ": " + std::strerror(err)};
  }
}

Failure FromGrpc(const grpc::Status& s, const std::string& path) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return Failure{kNoDaemon, "ohiod at " + path + " did not answer: " + s.error_message()};
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return Failure{kDenied, "ohiod at " + path + " refused: " + s.error_message()};
    default:
      return Failure{kDaemonError, "ohiod at " + path + " answered with an error: " + s.error_message()};
  }
}

class Ctl {
 public:
  Ctl(std::string socket, bool json, uint32_t timeout_ms)
      : socket_(std::move(socket)), json_(json), timeout_ms_(timeout_ms) {}

  int Fail(const Failure& f) const {
    std::cerr << "ohioctl: " << f.message << "\n";
    // A script reading stdout still gets a document it can parse.
    if (json_) std::cout << json{{"error", f.message}, {"exit_code", f.code}}.dump(2) << "\n";
    return f.code;
  }

  // Connects, or says why it cannot.
  std::optional<Failure> Connect() {
    if (auto f = Probe(socket_)) return f;
    stub_ = ohio::admin::Admin::NewStub(grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    return std::nullopt;
  }

  void SetDeadline(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
  }

  // One unary call: prints `text(reply)` or `to_json(reply)`.
  template <typename Request, typename Reply, typename Call, typename Text, typename Json>
  int Unary(Call call, Text text, Json to_json) {
    if (auto f = Connect()) return Fail(*f);
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    Request req;
    Reply reply;
    grpc::Status s = (stub_.get()->*call)(&ctx, req, &reply);
    if (!s.ok()) return Fail(FromGrpc(s, socket_));
    if (json_) {
      std::cout << to_json(reply).dump(2) << "\n";
    } else {
      std::cout << text(reply);
    }
    return kOk;
  }

  int Health() {
    if (auto f = Connect()) return Fail(*f);
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ohio::admin::HealthReply reply;
    grpc::Status s = stub_->Health(&ctx, ohio::admin::HealthRequest(), &reply);
    if (!s.ok()) return Fail(FromGrpc(s, socket_));
    if (json_) {
      std::cout << ohio::ctl::HealthJson(reply).dump(2) << "\n";
    } else {
      (reply.healthy() ? std::cout : std::cerr) << ohio::ctl::HealthText(reply);
    }
    return reply.healthy() ? kOk : kUnhealthy;
  }

  int Watch(uint32_t interval_ms, uint32_t count) {
    if (auto f = Connect()) return Fail(*f);
    grpc::ClientContext ctx;
    if (count > 0) {
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(timeout_ms_ + uint64_t{interval_ms} * count));
    }
    ohio::admin::WatchRequest req;
    req.set_interval_ms(interval_ms);
    req.set_count(count);
    auto reader = stub_->Watch(&ctx, req);
    ohio::admin::CountersReply sample;
    std::optional<ohio::admin::CountersReply> previous;
    if (!json_) std::cout << ohio::ctl::WatchHeader() << std::flush;
    uint32_t got = 0;
    while (reader->Read(&sample)) {
      ++got;
      if (json_) {
        std::cout << ohio::ctl::CountersJson(sample).dump() << std::endl;  // one document per line
      } else {
        std::cout << ohio::ctl::WatchLine(previous ? &*previous : nullptr, sample) << std::flush;
      }
      previous = sample;
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) return Fail(FromGrpc(s, socket_));
    if (count > 0 && got < count) return Fail(Failure{kNoDaemon, "ohiod ended the stream early"});
    return kOk;
  }

  int Metrics(const std::string& output) {
    if (auto f = Connect()) return Fail(*f);
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ohio::admin::CountersReply reply;
    grpc::Status s = stub_->Counters(&ctx, ohio::admin::CountersRequest(), &reply);
    if (!s.ok()) return Fail(FromGrpc(s, socket_));
    const std::string text = ohio::PrometheusText(reply);
    if (output.empty()) {
      std::cout << text;
      return kOk;
    }
    std::string error;
    if (!ohio::WriteFileAtomically(output, text, &error)) {
      std::cerr << "ohioctl: " << error << "\n";
      return kUsage;
    }
    return kOk;
  }

 private:
  std::string socket_;
  bool json_;
  uint32_t timeout_ms_;
  std::unique_ptr<ohio::admin::Admin::Stub> stub_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ohioctl: what this node's ohiod is doing, from its admin socket (root only).", "ohioctl");
  app.footer(
      "Exit codes: 0 ok (health: healthy), 1 health: unhealthy, 2 usage, 3 ohiod not running or not "
      "answering, 4 permission denied (not root), 5 ohiod answered with an error.");
  std::string socket = "/run/ohio/admin.sock";
  bool as_json = false;
  uint32_t timeout_ms = 5000;
  app.add_option("--socket", socket, "ohiod's admin socket (ohiod --admin-socket)")
      ->envname("OHIO_ADMIN_SOCKET")
      ->capture_default_str();
  app.add_flag("--json", as_json, "Print JSON for scripts (watch: one document per line)");
  app.add_option("--timeout-ms", timeout_ms, "How long to wait for the daemon's answer")
      ->check(CLI::Range(1u, 600000u))
      ->capture_default_str();
  app.set_version_flag("--version", std::string("ohioctl ") + ohio::kVersion);
  app.require_subcommand(1, 1);
  app.fallthrough();  // global options may follow the command: `ohioctl status --json`

  auto* status = app.add_subcommand("status", "Version, uptime, transport, HCAs, groups, settings in force");
  auto* peers = app.add_subcommand("peers", "Other nodes: peer service, data connection state, groups spanning them");
  auto* groups = app.add_subcommand("groups", "Groups on this node: key, ranks per node, sequence, algorithm, memory");
  auto* counters = app.add_subcommand("counters", "Collectives served, bytes, errors by kind, latency per size class");
  auto* watch = app.add_subcommand("watch", "Counters as rates, one line per interval, until interrupted");
  uint32_t interval_ms = 1000, count = 0;
  watch->add_option("--interval-ms", interval_ms, "Time between two samples")
      ->check(CLI::Range(50u, 3600000u))
      ->capture_default_str();
  watch->add_option("--count", count, "Stop after this many samples (0: never)")->capture_default_str();
  auto* health = app.add_subcommand("health", "Exit 0 if ohiod is healthy, else non-zero with the reason");
  auto* metrics = app.add_subcommand("metrics", "Counters in Prometheus text format (node_exporter textfile)");
  std::string output;
  metrics->add_option("--output", output, "Write to this file (atomically) instead of stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kOk : kUsage;
  }

  Ctl ctl(socket, as_json, timeout_ms);
  namespace admin = ohio::admin;
  namespace render = ohio::ctl;
  if (status->parsed()) {
    return ctl.Unary<admin::StatusRequest, admin::StatusReply>(&admin::Admin::Stub::Status, render::StatusText,
                                                               render::StatusJson);
  }
  if (peers->parsed()) {
    return ctl.Unary<admin::ListPeersRequest, admin::ListPeersReply>(&admin::Admin::Stub::ListPeers, render::PeersText,
                                                                     render::PeersJson);
  }
  if (groups->parsed()) {
    return ctl.Unary<admin::ListGroupsRequest, admin::ListGroupsReply>(&admin::Admin::Stub::ListGroups,
                                                                       render::GroupsText, render::GroupsJson);
  }
  if (counters->parsed()) {
    return ctl.Unary<admin::CountersRequest, admin::CountersReply>(&admin::Admin::Stub::Counters, render::CountersText,
                                                                   render::CountersJson);
  }
  if (watch->parsed()) return ctl.Watch(interval_ms, count);
  if (health->parsed()) return ctl.Health();
  if (metrics->parsed()) {
    if (as_json) {
      std::cerr << "ohioctl: metrics prints Prometheus text; --json does not apply (use `counters --json`)\n";
      return kUsage;
    }
    return ctl.Metrics(output);
  }
  return kUsage;
}
