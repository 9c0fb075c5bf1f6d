#include "daemon/ops/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace ohio {
namespace {

// How often STATUS= is refreshed when no watchdog sets a faster pace.
constexpr std::chrono::seconds kStatusPeriod{10};

}  // namespace

SystemdNotifier::SystemdNotifier(std::function<bool(std::chrono::milliseconds)> alive,
                                 std::function<std::string()> status)
    : alive_(std::move(alive)), status_(std::move(status)) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_ = std::chrono::microseconds(usec);
}

SystemdNotifier::~SystemdNotifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SystemdNotifier::Notify(const std::string& state) {
  if (!enabled_) return;
  const int r = sd_notify(0, state.c_str());
  if (r < 0) spdlog::warn("sd_notify: {}", std::strerror(-r));
}

void SystemdNotifier::Ready() {
  if (!enabled_) return;
  Notify("READY=1\nSTATUS=" + status_());
  if (watchdog_.count() > 0) {
    spdlog::info("systemd watchdog every {} ms",
                 std::chrono::duration_cast<std::chrono::milliseconds>(watchdog_).count());
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
}

void SystemdNotifier::Reloading() { Notify("RELOADING=1\nSTATUS=reloading its settings"); }

void SystemdNotifier::Stopping() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Notify("STOPPING=1\nSTATUS=shutting down");
}

void SystemdNotifier::Run() {
  // Half the watchdog interval, as sd_watchdog_enabled(3) advises; the liveness check gets a
  // quarter of it so that a slow answer still leaves time to ping.
  const auto period = watchdog_.count() > 0 ? std::min<std::chrono::microseconds>(watchdog_ / 2, kStatusPeriod)
                                            : std::chrono::microseconds(kStatusPeriod);
  const auto deadline =
      std::max(std::chrono::milliseconds(1),
               std::chrono::duration_cast<std::chrono::milliseconds>(std::min<std::chrono::microseconds>(
                   watchdog_.count() > 0 ? watchdog_ / 4 : period, std::chrono::seconds(1))));
  bool was_alive = true;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cv_.wait_for(lock, period, [this] { return stopping_; })) return;
    lock.unlock();
    if (watchdog_.count() > 0) {
      const bool alive = alive_(deadline);
      if (alive) {
        Notify("WATCHDOG=1\nSTATUS=" + status_());
      } else if (was_alive) {
        spdlog::error("the progress engine did not answer within {} ms: no longer feeding systemd's watchdog",
                      deadline.count());
      }
      if (alive && !was_alive) spdlog::info("the progress engine answers again");
      was_alive = alive;
    } else {
      Notify("STATUS=" + status_());
    }
    lock.lock();
  }
}

}  // namespace ohio
