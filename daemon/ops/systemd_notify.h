// ohiod's side of systemd's Type=notify protocol (sd_notify over $NOTIFY_SOCKET): READY=1 once
// every socket accepts, STATUS= lines for `systemctl status`, RELOADING=1/READY=1 around a
// SIGHUP, STOPPING=1, and WATCHDOG=1 every half WatchdogSec for as long as the progress engine
// still answers, so that systemd restarts a daemon that hangs. Outside systemd it does nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ohio {

class SystemdNotifier {
 public:
  // `alive(deadline)`: whether the daemon still does its work, answered within `deadline`.
  // `status()`: one line on what the daemon serves.
  SystemdNotifier(std::function<bool(std::chrono::milliseconds)> alive, std::function<std::string()> status);
  ~SystemdNotifier();

  // READY=1 with the status; starts feeding the watchdog (if systemd asked for one) and
  // refreshing the status.
  void Ready();
  void Reloading();
  // STOPPING=1; the watchdog is no longer fed (the engine is about to stop answering).
  void Stopping();
  // Zero unless systemd set WATCHDOG_USEC for this process.
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

 private:
  void Run();
  void Notify(const std::string& state);

  std::function<bool(std::chrono::milliseconds)> alive_;
  std::function<std::string()> status_;
  bool enabled_ = false;  // $NOTIFY_SOCKET is set
  std::chrono::microseconds watchdog_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ohio
