// Writes the seed inputs of every fuzz target from the real encoders (the framing's SendFrame,
// the protobuf messages the client library sends, the transports' and the exchange's Encode,
// the config file a daemon reads). The files are checked in under tests/fuzz/corpus; rerun
//   bazel run //tests/fuzz:make_seeds -- "$PWD/tests/fuzz/corpus" "$PWD/deploy/ohiod.conf"
// after a wire format changes. Regression inputs sit beside the seeds, named regress-*.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/framed_socket.h"
#include "common/version.h"
#include "daemon/exchange/exchange_message.h"
#include "daemon/transport/tcp/tcp_frame.h"
#include "daemon/transport/verbs/ud_wire.h"
#include "daemon/transport/verbs/verbs_wire.h"
#include "proto/control.pb.h"

namespace {

std::string g_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = g_root + "/" + target;
  mkdir(dir.c_str(), 0755);
  std::ofstream out(dir + "/seed-" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror(("writing " + dir + "/seed-" + name).c_str());
    std::exit(1);
  }
}

// What SendFrame puts on the control socket for these payloads, read back off a socket pair.
std::string Framed(const std::vector<std::string>& payloads) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::exit(1);
  for (const std::string& p : payloads) {
    if (!ohio::SendFrame(sv[0], p).ok()) std::exit(1);
  }
  close(sv[0]);
  std::string out;
  char buf[4096];
  ssize_t r;
  while ((r = read(sv[1], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(r));
  close(sv[1]);
  return out;
}

ohio::control::ClientMessage Hello(uint32_t version) {
  ohio::control::ClientMessage m;
  m.mutable_hello()->set_protocol_version(version);
  m.mutable_hello()->set_client_version(ohio::kVersion);
  return m;
}

// A join as a rank of a group spread over `nodes` with ranks dealt round-robin; the fuzz
// target's daemon is node0.
ohio::control::ClientMessage Join(uint32_t size, uint32_t rank, uint32_t nodes, const std::string& algorithm) {
  ohio::control::ClientMessage m;
  auto* j = m.mutable_join();
  j->set_key(std::string("0123456789abcdef"));
  j->set_size(size);
  j->set_rank(rank);
  for (uint32_t n = 0; n < nodes; ++n) j->add_node_names("node" + std::to_string(n));
  for (uint32_t r = 0; r < size; ++r) j->add_rank_node(r % nodes);
  j->set_algorithm(algorithm);
  return m;
}

void ControlSeeds() {
  const std::string hello = Hello(ohio::kControlProtocolVersion).SerializeAsString();
  const std::string join = Join(4, 0, 2, "v3").SerializeAsString();
  ohio::control::ClientMessage leave;
  leave.mutable_leave()->set_key("0123456789abcdef");
  Write("control_frame", "hello", std::string(1, '\0') + Framed({hello}));
  Write("control_frame", "session", std::string(1, '\x05') + Framed({hello, join, leave.SerializeAsString()}));
  Write("control_frame", "empty-frame", std::string(1, '\x01') + Framed({""}));
  Write("control_frame", "too-large", std::string(1, '\x02') + Framed({std::string(1500, 'x')}));

  Write("control_request", "hello", hello);
  Write("control_request", "hello-old", Hello(0).SerializeAsString());
  Write("control_request", "join-2-nodes", join);
  Write("control_request", "join-1-node", Join(3, 2, 1, "").SerializeAsString());
  Write("control_request", "join-v1", Join(6, 3, 3, "v1").SerializeAsString());
  Write("control_request", "join-elsewhere", Join(4, 1, 2, "v2").SerializeAsString());
  Write("control_request", "leave", leave.SerializeAsString());
  ohio::control::DaemonMessage reply;
  reply.mutable_join()->set_segment_bytes(1 << 20);
  reply.mutable_join()->set_local_ranks(2);
  reply.mutable_join()->set_algorithm("v3");
  Write("control_request", "join-reply", reply.SerializeAsString());
  ohio::control::DaemonMessage error;
  error.mutable_error()->set_code(ohio::control::Error::GROUP_MISMATCH);
  error.mutable_error()->set_message("differs");
  Write("control_request", "error-reply", error.SerializeAsString());
}

std::string Tcp(uint32_t type, uint32_t imm, uint64_t key, uint64_t offset, const std::string& payload) {
  std::string h(ohio::TcpFrameHeader::kBytes, '\0');
  ohio::TcpFrameHeader{type, imm, key, offset, payload.size()}.Encode(h.data());
  return h + payload;
}

void TcpSeeds() {
  using H = ohio::TcpFrameHeader;
  const std::string hello = Tcp(H::kHello, 0, 0, 0, "node1");
  ohio::ExchangeMessage ready;
  ready.bytes_per_rank = 8;
  const auto m = ready.Encode();
  Write("tcp_frame", "hello", hello);
  Write("tcp_frame", "session", hello + Tcp(H::kPut, 0x10001, 1, 4096, std::string(64, 'd')) +
                                     Tcp(H::kMessage, 0, 0, 0, std::string(m.begin(), m.end())));
  Write("tcp_frame", "put-before-hello", Tcp(H::kPut, 1, 1, 0, "x"));
  Write("tcp_frame", "two-hellos", hello + hello);
}

std::string Verbs(uint32_t type, bool last, uint64_t key, uint64_t offset, uint64_t total, const std::string& payload) {
  ohio::VerbsWireHeader h;
  h.type = type;
  h.last = last;
  h.imm = 0x20003;
  h.key = key;
  h.offset = offset;
  h.total = total;
  std::string out(ohio::VerbsWireHeader::kBytes, '\0');
  h.Encode(reinterpret_cast<uint8_t*>(out.data()));
  return out + payload;
}

void VerbsSeeds() {
  using H = ohio::VerbsWireHeader;
  ohio::RegionAnnouncement a;
  a.addr = 0x7f0000001000;
  a.bytes = 8 << 20;
  a.rkeys = {0x1234, 0x5678};
  Write("verbs_wire", "region", Verbs(H::kRegion, false, 3, 0, 0, a.Encode()));
  Write("verbs_wire", "bounce-last", Verbs(H::kBouncePut, true, 3, 4096, 8192, std::string(128, 'b')));
  Write("verbs_wire", "message", Verbs(H::kMessage, false, 0, 0, 0, std::string(40, 'm')));
  Write("verbs_wire", "region-gone", Verbs(H::kRegionGone, false, 3, 0, 0, ""));
  Write("verbs_wire", "keepalive", Verbs(H::kKeepalive, false, 0, 0, 0, ""));
  // UD datagrams, read by the same target: a fragment in the middle of a put, and an ack.
  ohio::UdWireHeader u;
  u.type = ohio::UdWireHeader::kData;
  u.seq = 0xFFFFFFFF;
  u.ack = 17;
  u.imm = 0x20003;
  u.sack = 0b1011;
  u.key = 3;
  u.start = 1 << 20;
  u.total = 16384;
  u.put = 9;
  u.at = 4096;
  std::string datagram(ohio::UdWireHeader::kBytes, '\0');
  u.Encode(reinterpret_cast<uint8_t*>(datagram.data()));
  Write("verbs_wire", "ud-data", datagram + std::string(1024, 'u'));
  u = ohio::UdWireHeader();
  u.type = ohio::UdWireHeader::kAck;
  u.ack = 18;
  u.sack = 0b110;
  std::string ack(ohio::UdWireHeader::kBytes, '\0');
  u.Encode(reinterpret_cast<uint8_t*>(ack.data()));
  Write("verbs_wire", "ud-ack", ack);
}

void ExchangeSeeds() {
  ohio::ExchangeMessage ready;
  ready.tag = 7;
  ready.round = 3;
  ready.bytes_per_rank = 4096;
  ready.opted_out = true;
  for (size_t i = 0; i < ready.key.size(); ++i) ready.key[i] = static_cast<uint8_t>(i);
  ohio::ExchangeMessage credit = ready;
  credit.type = ohio::ExchangeMessage::Type::kCredit;
  credit.delivery = 2;
  const auto r = ready.Encode(), c = credit.Encode();
  Write("exchange_message", "round-ready", std::string(r.begin(), r.end()));
  Write("exchange_message", "credit", std::string(c.begin(), c.end()));
}

void ConfigSeeds(const std::string& shipped) {
  std::ifstream in(shipped, std::ios::binary);
  const std::string conf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (conf.empty()) {
    std::fprintf(stderr, "cannot read %s\n", shipped.c_str());
    std::exit(1);
  }
  Write("daemon_config", "shipped", conf);
  Write("daemon_config", "settings",
        "node-name = node0\n"
        "ssb_bytes = 32MiB   # a comment\n"
        "srb-bytes = \"4MiB\"\n"
        "timeout-ms = 5000\n"
        "peer = node1=10.0.0.2:7470,node2=host2:7470\n"
        "hca = mlx5_0:1,mlx5_1\n"
        "transport = tcp\n"
        "algorithm = v2\n"
        "log-level = debug\n"
        "metrics-file = /tmp/ohiod.prom\n");
  Write("daemon_config", "bad-key", "no-such-key = 1\n");
  Write("daemon_config", "negative", "memory-limit = -1\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR SHIPPED_OHIOD_CONF\n");
    return 2;
  }
  g_root = argv[1];
  ControlSeeds();
  TcpSeeds();
  VerbsSeeds();
  ExchangeSeeds();
  ConfigSeeds(argv[2]);
  return 0;
}
