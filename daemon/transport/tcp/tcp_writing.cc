// TcpTransport's frame writer: a put or message written from the caller's memory at once when
// the connection has nothing queued, what would block queued and finished as the socket
// drains, kPutDone once a put's last byte is written. See tcp_transport.h.
#include "daemon/transport/tcp/tcp_transport.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ohio {
namespace {

constexpr uint32_t kPut = TcpFrameHeader::kPut;
constexpr uint32_t kMessage = TcpFrameHeader::kMessage;
constexpr int kMaxIov = 64;

// Writes what the socket takes of a frame: the header from header_sent on, then the payload
// pieces from byte `sent` on. What it wrote, or -1 with errno.
ssize_t WriteFrame(int fd, const char* header, size_t header_bytes, size_t header_sent, const LocalPiece* pieces,
                   size_t count, uint64_t sent) {
  struct iovec iov[kMaxIov];
  int n = 0;
  if (header_sent < header_bytes) iov[n++] = {const_cast<char*>(header + header_sent), header_bytes - header_sent};
  uint64_t skip = sent;
  for (size_t i = 0; i < count && n < kMaxIov; ++i) {
    if (skip >= pieces[i].bytes) {
      skip -= pieces[i].bytes;
      continue;
    }
    iov[n++] = {const_cast<uint8_t*>(static_cast<const uint8_t*>(pieces[i].base) + skip), pieces[i].bytes - skip};
    skip = 0;
  }
  if (n == 0) return 0;
  struct msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<size_t>(n);
  // A peer that went away must show as an error here, not kill the daemon with SIGPIPE.
  return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

}  // namespace

Status TcpTransport::Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key,
                         uint64_t remote_offset, uint32_t imm, uint64_t cookie) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < count; ++i) bytes += pieces[i].bytes;
  char header[kHeaderBytes];
  TcpFrameHeader{kPut, imm, remote_key, remote_offset, bytes}.Encode(header);
  return Post(peer, kPut, header, pieces, count, bytes, cookie);
}

Status TcpTransport::Send(PeerId peer, const void* message, size_t bytes) {
  if (bytes > kMaxTransportMessage) return Status(Code::kInvalidArgument, "transport message too large");
  char header[kHeaderBytes];
  TcpFrameHeader{kMessage, 0, 0, 0, bytes}.Encode(header);
  const LocalPiece piece{message, bytes};
  return Post(peer, kMessage, header, &piece, 1, bytes, 0);
}

Status TcpTransport::Post(PeerId peer, uint32_t type, const char* header, const LocalPiece* pieces, size_t count,
                          uint64_t bytes, uint64_t cookie) {
  PeerSlot& slot = Slot(peer);
  Conn* c = slot.conn;
  uint64_t written = 0;
  if (c != nullptr && !c->connecting && c->out.empty()) {
    const ssize_t w = WriteFrame(c->fd, header, kHeaderBytes, 0, pieces, count, 0);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      Close(c, std::string("write failed: ") + std::strerror(errno));
      return Status::Ok();  // the caller learns of it through kPeerDown, like of any lost put
    }
    written = w > 0 ? static_cast<uint64_t>(w) : 0;
  }
  Outgoing o;
  o.type = type;
  std::memcpy(o.header, header, kHeaderBytes);
  o.bytes = bytes;
  o.cookie = cookie;
  o.header_sent = std::min<uint64_t>(written, kHeaderBytes);
  o.sent = written - o.header_sent;
  if (o.header_sent == kHeaderBytes && o.sent == bytes) {
    Sent(c, o);
    return Status::Ok();
  }
  // The slow path: the socket is full or not up yet. A message is copied (the caller's buffer
  // is gone once Send returns); a put's memory stays the caller's until kPutDone.
  if (type == kMessage) {
    o.owned.resize(bytes);
    if (bytes > 0) std::memcpy(o.owned.data(), pieces[0].base, bytes);
  } else {
    o.pieces.assign(pieces, pieces + count);
  }
  if (c == nullptr) {
    slot.pending.push_back(std::move(o));
    return Status::Ok();
  }
  c->out.push_back(std::move(o));
  WatchWrites(c);
  return Status::Ok();
}

void TcpTransport::Sent(Conn* c, const Outgoing& o) {
  if (o.type == kPut) {
    data_frames_sent_.fetch_add(1, std::memory_order_relaxed);
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPutDone;
    e.peer = c->peer;
    e.cookie = o.cookie;
    e.bytes = o.bytes;
    Emit(std::move(e));
  } else if (o.type == kMessage) {
    control_frames_sent_.fetch_add(1, std::memory_order_relaxed);
  }
}

void TcpTransport::WatchWrites(Conn* c) {
  const bool want = !c->out.empty() || c->connecting;
  if (want == c->watching_writes) return;
  c->watching_writes = want;
  struct epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  ev.data.u64 = static_cast<uint64_t>(c->fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void TcpTransport::OnWritable(Conn* c) {
  if (c->connecting) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err != 0) return Close(c, std::string("connect failed: ") + std::strerror(err));
    Established(c, c->peer);
  }
  while (!c->out.empty()) {
    Outgoing& o = c->out.front();
    const LocalPiece owned{o.owned.data(), o.owned.size()};
    const bool has_owned = !o.owned.empty();
    const ssize_t w = WriteFrame(c->fd, o.header, kHeaderBytes, o.header_sent, has_owned ? &owned : o.pieces.data(),
                                 has_owned ? 1 : o.pieces.size(), o.sent);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      return Close(c, std::string("write failed: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(w);
    const size_t h = std::min(left, kHeaderBytes - o.header_sent);
    o.header_sent += h;
    left -= h;
    o.sent += left;
    if (o.header_sent < kHeaderBytes || o.sent < o.bytes) continue;  // more pieces than one writev takes
    Sent(c, o);
    c->out.pop_front();
  }
  WatchWrites(c);
}

}  // namespace ohio
