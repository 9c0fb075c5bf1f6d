#include "daemon/control/control_server.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include <spdlog/spdlog.h>

#include "common/unix_socket.h"
#include "common/version.h"
#include "daemon/control/control_request.h"

namespace ohio {
namespace {

Status MakeParentDir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  std::string dir = path.substr(0, slash);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return SystemError("creating " + dir, errno);
  return Status::Ok();
}

// True if some process accepts connections on the socket at `path`.
bool SomeoneListens(const std::string& path) {
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return false;
  close(fd.value());
  return true;
}

constexpr uint64_t kStopTag = ~uint64_t{0};
constexpr uint64_t kListenTag = ~uint64_t{0} - 1;
// How often deadlines are looked at while some are running: their resolution.
constexpr auto kHousekeepingInterval = std::chrono::milliseconds(100);
// How long the listener rests when no descriptor is free for a new client.
constexpr auto kListenerRest = std::chrono::milliseconds(100);
// Freed memory past this is handed back to the system (malloc_trim) at the end of the pass.
constexpr size_t kTrimBytes = 1 << 20;
// What one uid's turns may take of the thread in one pass before its other ready clients wait
// for the next pass (control_server.h). Its first turn in a pass is always given.
constexpr auto kUidShareOfPass = std::chrono::milliseconds(2);
// Connections accepted in one pass at most; the rest wait in the listen queue for the next.
constexpr int kAcceptsPerPass = 64;
// Ready clients reported by one epoll_wait at most (the others come with the next pass).
constexpr int kEventsPerWait = 512;
// Turns a client gets to catch up before its deadline is judged (Housekeeping).
constexpr int kCatchUpTurns = 64;

// What each rate-limited line is about, for the summary of those left out.
constexpr const char* kLogWhat[] = {
    "out of descriptors",
    "unfinished messages over their bound",
    "no hello in time",
    "connections refused: max-clients or user-max-clients reached",
    "frames longer than any request ohiod could admit",
    "messages not finished within control-frame-timeout-ms",
    "joins refused",
    "clients' unparseable messages, closed connections and unsent replies",
};

}  // namespace

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start() {
  const std::string& path = config_.socket;
  auto addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  Status s = MakeParentDir(path);
  if (!s.ok()) return s;
  // Only a socket is ever replaced: a file or directory at the path is a mistake in --socket,
  // and what it holds is someone's.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return Status(Code::kInvalidArgument, path + " exists and is not a socket; ohiod replaces only a stale socket "
                                                 "there: choose another --socket, or move that file away");
  }
  if (SomeoneListens(path)) {
    return Status(Code::kInvalidArgument, "another ohiod is already listening on " + path);
  }
  unlink(path.c_str());  // a stale socket of a daemon that died
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return SystemError("socket", errno);
  if (bind(listen_fd_, reinterpret_cast<const struct sockaddr*>(&addr.value()), sizeof(struct sockaddr_un)) != 0) {
    return SystemError("binding " + path, errno);
  }
  // Ranks of every user connect here; what they may do is decided per client by its uid.
  if (chmod(path.c_str(), 0666) != 0) return SystemError("chmod " + path, errno);
  if (listen(listen_fd_, 512) != 0) return SystemError("listen", errno);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || stop_fd_ < 0) return SystemError("epoll/eventfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kStopTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
  spdlog::info("control socket {} ready", path);
  return Status::Ok();
}

void ControlServer::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  while (!clients_.empty()) Disconnect(clients_.begin()->first);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(config_.socket.c_str());
    listen_fd_ = -1;
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  epoll_fd_ = stop_fd_ = -1;
}

void ControlServer::Run() {
  struct epoll_event events[kEventsPerWait];
  std::vector<int> ready;
  for (;;) {
    int timeout_ms = -1;
    if (!backlog_.empty()) {
      timeout_ms = 0;  // clients left over from the last pass are served at once
    } else if (housekeeping_wanted_) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_housekeeping_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
    }
    int n = epoll_wait(epoll_fd_, events, kEventsPerWait, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("control server: epoll_wait: {}", std::strerror(errno));
      return;
    }
    ready.assign(backlog_.begin(), backlog_.end());
    backlog_.clear();
    bool accept = false;
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kStopTag) return;
      if (tag == kListenTag) {
        accept = true;
      } else if (std::find(ready.begin(), ready.end(), static_cast<int>(tag)) == ready.end()) {
        ready.push_back(static_cast<int>(tag));
      }
    }
    if (accept) {
      // A new client's hello is most often there already: served in this pass.
      Accept(&ready);
      housekeeping_wanted_ = true;  // a new client's hello deadline, or the listener's rest
    }
    ServePass(ready);
    if (trim_due_) {
      // Freed buffers of large frames lie in the heap, where glibc keeps them: hand them back.
      malloc_trim(0);
      trim_due_ = false;
      released_since_trim_ = 0;
    }
    const auto now = Clock::now();
    if (housekeeping_wanted_ && now >= next_housekeeping_) {
      housekeeping_wanted_ = Housekeeping(now);
      next_housekeeping_ = now + kHousekeepingInterval;
    }
  }
}

void ControlServer::ServePass(const std::vector<int>& ready) {
  // Each uid's ready clients, in the order they came; served one turn at a time, uid by uid.
  std::map<uid_t, std::deque<int>> queues;
  for (int fd : ready) {
    auto it = clients_.find(fd);
    if (it != clients_.end()) queues[it->second->cred.uid].push_back(fd);
  }
  // A uid that owes thread time sits the pass out while a uid that owes none is ready, and
  // pays back a share for it: one long turn (a large join) is not followed by another while
  // others wait.
  const bool someone_owes_nothing =
      std::any_of(queues.begin(), queues.end(), [this](const auto& q) { return owed_.count(q.first) == 0; });
  for (auto q = queues.begin(); q != queues.end();) {
    auto owes = owed_.find(q->first);
    if (!someone_owes_nothing || owes == owed_.end()) {
      ++q;
      continue;
    }
    owes->second -= kUidShareOfPass;
    if (owes->second <= Clock::duration::zero()) owed_.erase(owes);
    Defer(q->second);
    q = queues.erase(q);
  }
  const bool shared = queues.size() > 1;
  std::map<uid_t, Clock::duration> used;
  while (!queues.empty()) {
    for (auto q = queues.begin(); q != queues.end();) {
      const uid_t uid = q->first;
      std::deque<int>& queue = q->second;
      const int fd = queue.front();
      queue.pop_front();
      auto it = clients_.find(fd);
      if (it != clients_.end()) {
        const auto start = Clock::now();
        const Turn turn = ServeTurn(*it->second);
        used[uid] += Clock::now() - start;
        if (turn == Turn::kClose) {
          Disconnect(fd);
        } else if (turn == Turn::kMore) {
          queue.push_back(fd);
        }
      }
      if (!queue.empty() && used[uid] >= kUidShareOfPass) {
        // This uid had its share of the pass: the others have theirs first.
        Defer(queue);
        queue.clear();
      }
      q = queue.empty() ? queues.erase(q) : std::next(q);
    }
  }
  // What a uid took beyond its share while others were served too, it owes. Alone, it took
  // nobody's time.
  if (shared) {
    for (const auto& [uid, took] : used) {
      if (took > kUidShareOfPass) owed_[uid] += took - kUidShareOfPass;
    }
  }
}

void ControlServer::Defer(const std::deque<int>& fds) {
  backlog_.insert(fds.begin(), fds.end());
  counters_->control_uid_deferrals.fetch_add(1, std::memory_order_relaxed);
}

bool ControlServer::AllowLog(LogKind kind, std::string* note, Clock::time_point now) {
  uint64_t suppressed = 0;
  if (!logs_[kind].Allow(&suppressed, now)) {
    housekeeping_wanted_ = true;  // to tell of the lines left out
    return false;
  }
  *note = SuppressedNote(suppressed);
  return true;
}

bool ControlServer::CatchUp(Client& c) {
  for (int i = 0; i < kCatchUpTurns; ++i) {
    const Turn turn = ServeTurn(c);
    if (turn == Turn::kClose) return false;
    if (turn == Turn::kIdle) break;
  }
  return true;
}

bool ControlServer::Housekeeping(Clock::time_point now) {
  const auto hello_timeout = std::chrono::milliseconds(config_.hello_timeout_ms);
  const auto frame_timeout = std::chrono::milliseconds(config_.control_frame_timeout_ms);
  std::vector<int> gone;
  bool watching = false;
  std::string note;
  for (const auto& [fd, c] : clients_) {
    if (backlog_.count(fd) != 0) {
      watching = true;  // it is served in the next pass, at once
      continue;
    }
    if (!c->greeted) {
      if (now - c->connected_at < hello_timeout) {
        watching = true;
        continue;
      }
      // A hello that came while this thread did not run (a stopped daemon, continued: its
      // epoll_wait may time out before it reports the socket) was said in time: read it first.
      if (!CatchUp(*c)) {
        gone.push_back(fd);
        continue;
      }
      if (c->greeted) continue;
      gone.push_back(fd);
      counters_->refused_control_hello_timeouts.fetch_add(1, std::memory_order_relaxed);
      if (AllowLog(kHelloLog, &note, now)) {
        spdlog::warn("client pid {} (uid {}): no hello within hello-timeout-ms = {}; disconnecting{}", c->cred.pid,
                     c->cred.uid, config_.hello_timeout_ms, note);
      }
      ReplyError(*c, control::Error::STATE,
                 "no Hello within hello-timeout-ms = " + std::to_string(config_.hello_timeout_ms));
      continue;
    }
    if (c->reader.size() == 0) continue;
    if (now - c->frame_started_at < frame_timeout) {
      watching = true;
      continue;
    }
    // As for the hello: what came while this thread did not run counts.
    if (!CatchUp(*c)) {
      gone.push_back(fd);
      continue;
    }
    if (c->reader.size() == 0 || now - c->frame_started_at < frame_timeout) {
      watching = watching || c->reader.size() != 0;
      continue;
    }
    gone.push_back(fd);
    counters_->refused_control_frame_timeouts.fetch_add(1, std::memory_order_relaxed);
    const std::string started =
        c->reader.size() < kFrameHeaderBytes
            ? "a message's length, " + std::to_string(c->reader.size()) + " of its 4 bytes sent,"
            : "a message of " + std::to_string(c->reader.announced()) + " bytes, " +
                  std::to_string(c->reader.size() - kFrameHeaderBytes) + " of them sent,";
    const std::string why = started + " was not finished within control-frame-timeout-ms = " +
                            std::to_string(config_.control_frame_timeout_ms);
    if (AllowLog(kFrameTimeoutLog, &note, now)) {
      spdlog::warn("client pid {} (uid {}): {}; disconnecting{}", c->cred.pid, c->cred.uid, why, note);
    }
    ReplyError(*c, control::Error::STATE, why);
  }
  for (int fd : gone) Disconnect(fd);
  listener_.WakeIfDue(epoll_fd_, listen_fd_, kListenTag, now);
  bool suppressed_left = false;
  for (size_t kind = 0; kind < kLogKinds; ++kind) {
    if (uint64_t n = logs_[kind].TakeSuppressed(now)) {
      spdlog::warn("control socket: {} similar messages suppressed ({})", n, kLogWhat[kind]);
    }
    suppressed_left = suppressed_left || logs_[kind].has_suppressed();
  }
  return watching || listener_.resting() || suppressed_left;
}

void ControlServer::OutOfDescriptors(int err) {
  const int shed = reserve_.ShedPending(listen_fd_);
  std::string note;
  if (AllowLog(kOutOfDescriptorsLog, &note)) {
    spdlog::warn("control socket: accept: {}; closed {} pending connection(s), not accepting for {} ms{}",
                 std::strerror(err), shed, kListenerRest.count(), note);
  }
  listener_.Rest(epoll_fd_, listen_fd_, Clock::now() + kListenerRest);
}

void ControlServer::Accept(std::vector<int>* accepted_fds) {
  for (int accepted = 0; accepted < kAcceptsPerPass; ++accepted) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        OutOfDescriptors(errno);
      } else if (errno != EAGAIN && errno != EINTR) {
        std::string note;
        if (AllowLog(kClientErrorLog, &note)) spdlog::warn("control socket: accept: {}{}", std::strerror(errno), note);
      }
      return;
    }
    auto c = std::make_unique<Client>(bounds_.max_request_bytes);
    c->fd = fd;
    struct ucred cred = {};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      close(fd);
      continue;
    }
    c->cred = {cred.pid, cred.uid, cred.gid, -1};
    // Refused before anything is opened for them: a flood of refused connections costs little.
    std::string refusal;
    const size_t of_uid = clients_by_uid_.count(cred.uid) != 0 ? clients_by_uid_[cred.uid] : 0;
    if (clients_.size() >= config_.max_clients) {
      counters_->refused_control_max_clients.fetch_add(1, std::memory_order_relaxed);
      refusal = "ohiod serves at most " + std::to_string(config_.max_clients) + " clients (max-clients)";
    } else if (of_uid >= config_.user_max_clients) {
      counters_->refused_control_user_max_clients.fetch_add(1, std::memory_order_relaxed);
      refusal = "uid " + std::to_string(cred.uid) + " already has " + std::to_string(of_uid) +
                " connections to ohiod; user-max-clients = " + std::to_string(config_.user_max_clients);
    }
    if (!refusal.empty()) {
      std::string note;
      if (AllowLog(kMaxClientsLog, &note)) {
        spdlog::warn("refusing client pid {} (uid {}): {}{}", cred.pid, cred.uid, refusal, note);
      }
      ReplyError(*c, control::Error::STATE, refusal);
      close(fd);
      continue;
    }
    c->cred.pidfd = PeerPidfd(fd, cred.pid);
    struct epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    clients_[fd] = std::move(c);
    accepted_fds->push_back(fd);
    ++clients_by_uid_[cred.uid];
    client_count_ = clients_.size();
  }
}

void ControlServer::RefuseOversized(Client& c, uint32_t announced) {
  counters_->refused_control_oversized_frames.fetch_add(1, std::memory_order_relaxed);
  std::string note;
  if (AllowLog(kOversizedLog, &note)) {
    spdlog::warn("client pid {} (uid {}): frame of {} bytes is longer than any request ohiod could admit ({} "
                 "bytes); disconnecting{}",
                 c.cred.pid, c.cred.uid, announced, bounds_.max_request_bytes, note);
  }
  ReplyError(c, control::Error::BAD_MESSAGE,
             "message of " + std::to_string(announced) + " bytes exceeds the limit of " +
                 std::to_string(bounds_.max_request_bytes) + " bytes: the longest request ohiod could admit is " +
                 DescribeRequestBounds(bounds_) + " (max-message-bytes = " +
                 std::to_string(config_.max_message_bytes) + ")");
}

ControlServer::Turn ControlServer::ServeTurn(Client& c) {
  std::string payload;
  FrameReader::Next next = c.reader.Take(&payload);
  bool filled = false;  // the read took all it could: more may be waiting
  if (next == FrameReader::Next::kNeedMore) {
    char buf[kControlReadBytes];
    const ssize_t r = read(c.fd, buf, sizeof(buf));
    if (r == 0) {
      if (c.reader.size() != 0) {
        std::string note;
        if (AllowLog(kClientErrorLog, &note)) {
          spdlog::warn("client pid {} (uid {}): connection closed mid-message{}", c.cred.pid, c.cred.uid, note);
        }
      }
      return Turn::kClose;
    }
    if (r < 0) {
      if (errno == EINTR) return Turn::kMore;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Turn::kIdle : Turn::kClose;
    }
    const size_t n = static_cast<size_t>(r);
    if (const uint32_t announced = c.reader.TooLargeAnnouncedBy(buf, n); announced != 0) {
      RefuseOversized(c, announced);
      return Turn::kClose;
    }
    if (!AdmitBytes(c, n)) return Turn::kClose;
    if (c.reader.size() == 0) c.frame_started_at = Clock::now();
    c.reader.Append(buf, n);
    SetHeld(c, c.reader.capacity());
    next = c.reader.Take(&payload);
    filled = n == sizeof(buf);
  }
  SetHeld(c, c.reader.capacity());
  if (next == FrameReader::Next::kTooLarge) {
    RefuseOversized(c, c.reader.announced());
    return Turn::kClose;
  }
  if (c.reader.size() != 0) housekeeping_wanted_ = true;  // the unfinished message's deadline
  if (next == FrameReader::Next::kNeedMore) return filled ? Turn::kMore : Turn::kIdle;
  // What is left came no later than now: the next message's deadline counts from here.
  c.frame_started_at = Clock::now();
  if (payload.size() >= kTrimBytes) trim_due_ = true;
  if (!Handle(c, payload)) return Turn::kClose;
  return Turn::kMore;
}

bool ControlServer::AdmitBytes(Client& c, size_t n) {
  const size_t growth = c.reader.CapacityAfterAppend(n) - c.held;
  if (growth == 0) return true;
  const auto held_by_uid = pending_by_uid_.find(c.cred.uid);
  const size_t of_uid = held_by_uid == pending_by_uid_.end() ? 0 : held_by_uid->second;
  std::string over;
  if (of_uid + growth > config_.user_max_pending_bytes) {
    over = "uid " + std::to_string(c.cred.uid) + " would hold " + std::to_string(of_uid + growth) +
           " bytes of ohiod's memory for unfinished messages; user-max-pending-bytes = " +
           std::to_string(config_.user_max_pending_bytes);
  } else if (pending_total_ + growth > config_.max_pending_bytes) {
    over = "clients would hold " + std::to_string(pending_total_ + growth) +
           " bytes of ohiod's memory for unfinished messages; max-pending-bytes = " +
           std::to_string(config_.max_pending_bytes);
  } else {
    return true;
  }
  counters_->refused_control_pending_bytes.fetch_add(1, std::memory_order_relaxed);
  std::string note;
  if (AllowLog(kPendingLog, &note)) {
    spdlog::warn("client pid {} (uid {}): {}; disconnecting{}", c.cred.pid, c.cred.uid, over, note);
  }
  ReplyError(c, control::Error::STATE, over);
  return false;
}

void ControlServer::SetHeld(Client& c, size_t held) {
  if (held == c.held) return;
  // Counted over every client, not per client: a flood of connections that each held a little
  // frees as much, in small pieces, when they go, and glibc keeps those in the heap too.
  if (held < c.held) released_since_trim_ += c.held - held;
  if (released_since_trim_ >= kTrimBytes) trim_due_ = true;
  size_t& of_uid = pending_by_uid_[c.cred.uid];
  of_uid = of_uid - c.held + held;
  pending_total_ = pending_total_ - c.held + held;
  counters_->pending_bytes.store(pending_total_, std::memory_order_relaxed);
  if (of_uid == 0) pending_by_uid_.erase(c.cred.uid);
  c.held = held;
}

bool ControlServer::Reply(Client& c, const control::DaemonMessage& m, const std::vector<int>& fds) {
  Status s = SendFrame(c.fd, m.SerializeAsString(), fds);
  std::string note;
  if (!s.ok() && AllowLog(kClientErrorLog, &note)) spdlog::warn("client pid {}: {}{}", c.cred.pid, s.message(), note);
  return s.ok();
}

void ControlServer::OfferSelection(control::SelectionReply* out) {
  GroupRegistry::SelectionOffer offer = registry_->selection_offer();
  out->set_table(std::move(offer.table));
  out->set_digest(std::move(offer.digest));
  out->set_transport(registry_->transport_name());
  out->set_generation(offer.generation);
}

bool ControlServer::ReplyError(Client& c, control::Error::Code code, const std::string& message) {
  control::DaemonMessage m;
  m.mutable_error()->set_code(code);
  m.mutable_error()->set_message(message);
  return Reply(c, m);
}

bool ControlServer::Handle(Client& c, const std::string& payload) {
  auto parsed = ParseControlRequest(payload);
  if (!parsed.ok()) {
    std::string note;
    if (AllowLog(kClientErrorLog, &note)) {
      spdlog::warn("client pid {} (uid {}): unparseable control message; disconnecting{}", c.cred.pid, c.cred.uid,
                   note);
    }
    ReplyError(c, control::Error::BAD_MESSAGE, parsed.status().message());
    return false;
  }
  const control::ClientMessage& msg = parsed.value();
  if (msg.has_hello()) {
    if (Status s = CheckHello(msg.hello()); !s.ok()) {
      ReplyError(c, control::Error::VERSION, s.message());
      return false;
    }
    c.greeted = true;
    control::DaemonMessage reply;
    reply.mutable_hello()->set_protocol_version(kControlProtocolVersion);
    reply.mutable_hello()->set_daemon_version(kVersion);
    reply.mutable_hello()->set_node_name(config_.node_name);
    // With the selection notice and a hand-back page only: a client that could not tell a later
    // table from this one must not decide calls by it, nor count them without a group.
    const int notice = registry_->selection_notice_fd();
    if (notice < 0) return Reply(c, reply);
    auto page = hand_back_pages_->Open(c.fd);
    if (!page.ok()) {
      std::string note;
      if (AllowLog(kClientErrorLog, &note)) {
        spdlog::warn("client pid {}: no hand-back page ({}): its communicators join at their first call{}", c.cred.pid,
                     page.status().message(), note);
      }
      return Reply(c, reply);
    }
    OfferSelection(reply.mutable_hello()->mutable_selection());
    const bool sent = Reply(c, reply, {notice, page.value()});
    close(page.value());
    return sent;
  }
  if (!c.greeted) {
    ReplyError(c, control::Error::STATE, "the first message must be Hello");
    return false;
  }
  if (msg.has_join()) {
    control::Error::Code refusal = control::Error::UNKNOWN;
    auto joined = registry_->Join(msg.join(), c.cred, &refusal);
    if (!joined.ok()) {
      std::string note;
      if (AllowLog(kJoinRefusedLog, &note)) {
        spdlog::info("client pid {} (uid {}): join refused: {}{}", c.cred.pid, c.cred.uid, joined.status().message(),
                     note);
      }
      return ReplyError(c, refusal, joined.status().message());
    }
    const Membership& m = joined.value();
    control::DaemonMessage reply;
    auto* j = reply.mutable_join();
    j->set_segment_bytes(m.group->segment_bytes());
    j->set_local_rank(m.local);
    j->set_local_ranks(m.group->local_ranks());
    j->set_timeout_ms(m.group->timeout_ms());
    j->set_algorithm(NodeLevelDesignName(m.group->spec().design));
    j->set_node_cpus(node_cpus_);
    j->set_selection_table(m.group->selection_policy().text);
    j->set_transport(registry_->transport_name());
    c.memberships.push_back(m);
    if (!Reply(c, reply, {m.group->segment_fd(), m.group->doorbell_fd()})) return false;
    return true;
  }
  if (msg.has_get_selection()) {
    control::DaemonMessage reply;
    OfferSelection(reply.mutable_selection());
    return Reply(c, reply);
  }
  if (msg.has_leave()) {
    for (auto it = c.memberships.begin(); it != c.memberships.end(); ++it) {
      const GroupKey& key = it->group->spec().key;
      if (msg.leave().key().size() == key.size() && std::memcmp(key.data(), msg.leave().key().data(), key.size()) == 0) {
        registry_->Depart(*it, /*clean=*/true, c.cred);
        c.memberships.erase(it);
        control::DaemonMessage reply;
        reply.mutable_leave();
        return Reply(c, reply);
      }
    }
    return ReplyError(c, control::Error::STATE, "this connection is not a member of that group");
  }
  ReplyError(c, control::Error::BAD_MESSAGE, "unexpected message");
  return false;
}

ControlServer::Client::~Client() {
  if (cred.pidfd >= 0) close(cred.pidfd);
}

void ControlServer::Disconnect(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  SetHeld(c, 0);  // its reader's memory goes with it
  hand_back_pages_->Close(fd);
  for (const Membership& m : c.memberships) registry_->Depart(m, /*clean=*/false, c.cred);
  if (epoll_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  if (--clients_by_uid_[c.cred.uid] == 0) clients_by_uid_.erase(c.cred.uid);
  backlog_.erase(fd);
  clients_.erase(it);
  client_count_ = clients_.size();
}

}  // namespace ohio
