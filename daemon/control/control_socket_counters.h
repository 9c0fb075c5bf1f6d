// What the control socket refused or held back, and holds now, counted for ohioctl and the metrics file
// (admin Counters, control_socket): the log says a few of each kind (rate-limited), these
// say how many there were. Written by the control thread, read by the admin service.
#pragma once

#include <atomic>
#include <cstdint>

namespace ohio {

struct ControlSocketCounters {
  // Connections closed as they came: max-clients, or their uid's user-max-clients, reached.
  std::atomic<uint64_t> refused_control_max_clients{0};
  std::atomic<uint64_t> refused_control_user_max_clients{0};
  // Clients disconnected: a frame announced longer than any request this daemon could admit,
  // no hello within hello-timeout-ms, a message not finished within control-frame-timeout-ms,
  // unfinished messages over user-max-pending-bytes or max-pending-bytes.
  std::atomic<uint64_t> refused_control_oversized_frames{0};
  std::atomic<uint64_t> refused_control_hello_timeouts{0};
  std::atomic<uint64_t> refused_control_frame_timeouts{0};
  std::atomic<uint64_t> refused_control_pending_bytes{0};
  // Passes of the control thread in which a uid had used its share and its other ready
  // clients waited for the next pass (daemon/control/control_server.h).
  std::atomic<uint64_t> control_uid_deferrals{0};
  // Now: the memory clients' unfinished messages hold in ohiod (counted against
  // user-max-pending-bytes per uid and max-pending-bytes in all).
  std::atomic<uint64_t> pending_bytes{0};
};

}  // namespace ohio
