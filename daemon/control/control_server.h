// The local control channel: a unix stream socket where ranks say hello, join and leave
// groups. One thread, epoll, non-blocking sockets. A client is who SO_PEERCRED says it is;
// a client that sends garbage, a truncated or oversized frame gets an Error (when it can
// still be told) and is disconnected, and its memberships are released like a crash's.
//
// One thread serves every user, so no user may take it from the others:
// - Size before cost: a frame announced longer than any request this daemon could admit
//   (daemon/control/request_bounds.h: a join of the largest group the settings allow) is
//   refused from its 4-byte length, before its payload is kept or parsed.
// - Turns by uid: each pass of the thread takes the clients epoll reports ready (and those
//   left over from the last pass) and serves them by uid in turn, one frame (or one read of at
//   most 64 KiB) per client per turn, round-robin over the uids. A uid whose turns have taken
//   kUidShareOfPass (2 ms) of the thread in this pass is done for the pass: its other ready
//   clients wait for the next one (counted: control_uid_deferrals). A turn cannot be cut
//   short, so a uid whose turns took more than its share in a pass it shared with other uids
//   owes the excess: it sits out the passes in which a uid that owes nothing is ready, paying
//   back one share each, until it owes nothing (alone, it is served at once: it takes nobody's
//   time). So a uid with a flood of clients gets its share and no more, however many it has,
//   and another uid's request waits at most about one turn of each busy uid. New clients are
//   served in the pass that accepts them (their hello has most often come with them), at most
//   kAcceptsPerPass per pass.
// - Deadlines: a client that says no hello within hello-timeout-ms, or starts a message and
//   does not finish it within control-frame-timeout-ms, is told why and disconnected.
// - Memory: the memory of messages still arriving is bounded per uid and in all (a client that
//   would pass a bound is disconnected, and the memory given back to the system); out of
//   descriptors, the listener sheds what is pending and rests instead of spinning.
// - Quiet refusals: every line a client can make the daemon write again and again (refused
//   connections, oversized or late frames, refused joins) is rate-limited (a few per 10 s, the
//   rest counted in a summary line), and refusals are counted (ControlSocketCounters), for
//   ohioctl and the metrics file.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/descriptor_reserve.h"
#include "common/framed_socket.h"
#include "common/host_cpus.h"
#include "common/log_rate_limiter.h"
#include "common/resting_listener.h"
#include "common/status.h"
#include "daemon/control/control_socket_counters.h"
#include "daemon/control/group_registry.h"
#include "daemon/control/request_bounds.h"
#include "daemon/control/hand_back_pages.h"
#include "daemon/ops/config.h"

namespace ohio {

class ControlServer {
 public:
  // `hand_back_pages`: each client's page for its communicators' hand-backs while they have no
  // group, made at its hello and folded when it goes.
  ControlServer(const DaemonConfig& config, GroupRegistry* registry, ControlSocketCounters* counters,
                HandBackPages* hand_back_pages)
      : config_(config),
        node_cpus_(CpusOfSetting(config.cpus)),
        registry_(registry),
        counters_(counters),
        hand_back_pages_(hand_back_pages),
        bounds_(ComputeRequestBounds(config)) {}
  ~ControlServer();

  // Binds the socket (refusing if another daemon answers on it) and starts the thread.
  Status Start();
  void Stop();
  size_t clients() const { return client_count_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    int fd = -1;
    PeerCredentials cred;
    FrameReader reader;
    size_t held = 0;  // reader's memory as counted in pending_by_uid_ and pending_total_
    bool greeted = false;
    Clock::time_point connected_at = Clock::now();
    Clock::time_point frame_started_at{};  // when the unfinished message's first byte came
    std::vector<Membership> memberships;
    explicit Client(size_t max_bytes) : reader(max_bytes) {}
    ~Client();
  };

  // What a client's turn left: nothing more to do now, more (another frame may be buffered,
  // or the read filled the buffer), or the client is to be disconnected.
  enum class Turn { kIdle, kMore, kClose };

  void Run();
  // Accepts up to kAcceptsPerPass new clients, adding their descriptors to *accepted.
  void Accept(std::vector<int>* accepted);
  // Serves the ready clients by uid in turn, each uid up to its share of the pass.
  void ServePass(const std::vector<int>& ready);
  // Leaves these clients of a uid for the next pass.
  void Defer(const std::deque<int>& fds);
  // One frame, or one read of at most kControlReadBytes then at most one frame.
  Turn ServeTurn(Client& c);
  // Turns until c has nothing more to say now (a client whose deadline passed while this
  // thread did not run may have said it in time); false when it is to be disconnected.
  bool CatchUp(Client& c);
  bool Handle(Client& c, const std::string& payload);
  bool Reply(Client& c, const control::DaemonMessage& m, const std::vector<int>& fds = {});
  bool ReplyError(Client& c, control::Error::Code code, const std::string& message);
  // The selection table new groups get now, for a hello's reply or a GetSelection's.
  void OfferSelection(control::SelectionReply* out);
  // A frame announced longer than any request this daemon could admit: c is told, not read.
  void RefuseOversized(Client& c, uint32_t announced);
  void Disconnect(int fd);
  // Whether n more bytes of c fit the bounds on memory held for unfinished messages; if not,
  // c is told why and the caller disconnects it.
  bool AdmitBytes(Client& c, size_t n);
  void SetHeld(Client& c, size_t held);
  // accept failed for want of descriptors: shed what is pending, stop polling for a while.
  void OutOfDescriptors(int err);
  // Hello and frame deadlines, the listener's rest, summaries of suppressed log lines. Whether
  // it is wanted again (something is still to be watched).
  bool Housekeeping(Clock::time_point now);

  // The lines a client can make this thread write again and again, each rate-limited.
  enum LogKind {
    kOutOfDescriptorsLog,
    kPendingLog,
    kHelloLog,
    kMaxClientsLog,
    kOversizedLog,
    kFrameTimeoutLog,
    kJoinRefusedLog,
    kClientErrorLog,  // unparseable messages, closed mid-message, replies that could not be sent
    kLogKinds
  };
  // Whether the line of `kind` is to be written now; *note ends it (suppressed lines before).
  bool AllowLog(LogKind kind, std::string* note, Clock::time_point now = Clock::now());

  const DaemonConfig& config_;
  const double node_cpus_;  // told to every rank that joins
  GroupRegistry* registry_;
  ControlSocketCounters* counters_;
  HandBackPages* hand_back_pages_;
  const RequestBounds bounds_;  // the longest frame read, and why
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::atomic<size_t> client_count_{0};
  std::map<uid_t, size_t> clients_by_uid_;
  // Clients that had more to do when their uid's share of a pass was used: served in the next
  // pass, which comes at once.
  std::set<int> backlog_;
  // Thread time a uid took beyond its shares in passes it shared with other uids: it sits out
  // passes where another uid is ready, one share paid back per pass, until it owes nothing.
  std::map<uid_t, Clock::duration> owed_;

  std::map<uid_t, size_t> pending_by_uid_;
  size_t pending_total_ = 0;
  bool trim_due_ = false;  // much memory was freed: give it back to the system
  size_t released_since_trim_ = 0;  // what clients' readers gave up since the last trim
  DescriptorReserve reserve_;
  RestingListener listener_;  // out of descriptors: the listener rests a while
  bool housekeeping_wanted_ = false;
  Clock::time_point next_housekeeping_{};
  std::array<LogRateLimiter, kLogKinds> logs_{
      LogRateLimiter{std::chrono::seconds(10), 5}, LogRateLimiter{std::chrono::seconds(10), 5},
      LogRateLimiter{std::chrono::seconds(10), 5}, LogRateLimiter{std::chrono::seconds(10), 5},
      LogRateLimiter{std::chrono::seconds(10), 5}, LogRateLimiter{std::chrono::seconds(10), 5},
      LogRateLimiter{std::chrono::seconds(10), 5}, LogRateLimiter{std::chrono::seconds(10), 5}};
};

}  // namespace ohio
