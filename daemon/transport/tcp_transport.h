// The transport over TCP: one socket per peer node, dialled by the node whose name sorts
// first (so a pair never ends up with two), identified by a hello frame. Frames are a 32-byte
// header (type, immediate, region key, offset, length) and a payload; a put's payload is read
// from the socket straight into the registered region, so the daemon copies no user data. All
// socket work happens on one I/O thread; callers queue work and take completions.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

class TcpTransport : public Transport {
 public:
  // Listens on bind_host:port (port 0 picks one); peers are told advertised_host:port.
  static Result<std::unique_ptr<TcpTransport>> Start(const std::string& self, const std::string& bind_host,
                                                     uint16_t port, const std::string& advertised_host);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  std::string address() const override { return address_; }
  Result<uint64_t> RegisterRegion(void* base, uint64_t bytes) override;
  void DeregisterRegion(uint64_t key) override;
  Status Connect(const std::string& peer, const std::string& address) override;
  using Transport::Put;
  Status Put(const std::string& peer, const std::vector<LocalPiece>& pieces, uint64_t remote_key,
             uint64_t remote_offset, uint32_t imm, uint64_t cookie) override;
  Status Send(const std::string& peer, const std::string& message) override;
  int event_fd() const override { return events_fd_; }
  void Poll(std::vector<TransportEvent>* out) override;
  size_t connections() const override { return established_.load(); }
  std::vector<std::string> connected_peers() const override;

 private:
  struct Frame {
    uint32_t type = 0;
    uint32_t imm = 0;
    uint64_t key = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  struct Outgoing {
    char header[32];
    size_t header_sent = 0;
    std::vector<LocalPiece> pieces;  // a put's payload, gathered in order
    std::string owned;               // payload of hellos and messages
    uint64_t bytes = 0;
    uint64_t sent = 0;
    bool is_put = false;
    uint64_t cookie = 0;
  };
  struct Conn {
    int fd = -1;
    std::string peer;  // empty until the hello is known
    bool connecting = false;
    std::deque<Outgoing> out;
    char header[32];
    size_t header_got = 0;
    bool in_payload = false;
    Frame frame;
    uint64_t payload_got = 0;
    bool dropped = false;  // some of this put's payload had nowhere to go
    std::string message;
  };
  struct Command {
    enum class Kind { kConnect, kPut, kSend } kind;
    std::string peer;
    std::string address;
    Outgoing out;
  };

  TcpTransport() = default;
  void Run();
  void Enqueue(Command c);
  void Apply(Command& c);
  void Dial(const std::string& peer, const std::string& address);
  void Accept();
  void OnReadable(Conn* c);
  bool ReadPayload(Conn* c);  // false when the connection must close
  bool OnFrameDone(Conn* c);
  void OnWritable(Conn* c);
  void Established(Conn* c, const std::string& peer);
  void Close(Conn* c, const std::string& reason);
  void WatchWrites(Conn* c);
  void Emit(TransportEvent e);
  static Outgoing MakeFrame(uint32_t type, uint32_t imm, uint64_t key, uint64_t offset, uint64_t bytes);

  std::string self_;
  std::string address_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int events_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  std::mutex commands_mu_;
  std::deque<Command> commands_;

  std::mutex events_mu_;
  std::vector<TransportEvent> events_;
  std::atomic<bool> has_events_{false};

  // Held while a payload is read into a region, so a region is never freed under a read.
  std::mutex regions_mu_;
  struct Region {
    uint8_t* base;
    uint64_t bytes;
  };
  std::map<uint64_t, Region> regions_;
  uint64_t next_key_ = 1;

  // I/O thread only.
  std::map<int, std::unique_ptr<Conn>> conns_;
  std::map<std::string, Conn*> by_peer_;
  std::map<std::string, std::deque<Outgoing>> pending_;
  std::vector<uint8_t> discard_;

  std::atomic<size_t> established_{0};
  mutable std::mutex peers_mu_;
  std::vector<std::string> peers_;
};

}  // namespace ohio
