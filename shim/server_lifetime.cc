#include "shim/server_lifetime.h"

#include <utility>

namespace hull::shim {

ServerLifetime::ServerLifetime(EventLoop& loop, std::function<bool()> all_deleted,
                               std::function<void()> stop, Timing timing)
    : loop_(loop), all_deleted_(std::move(all_deleted)), stop_(std::move(stop)), timing_(timing) {}

bool ServerLifetime::TaskShutdown() {
  if (held_by_sandbox_api_) return false;
  if (!all_deleted_()) {
    shutdown_pending_ = true;
    return false;
  }
  return true;
}

void ServerLifetime::ContainerDeleted() {
  if (!shutdown_pending_ || held_by_sandbox_api_ || !all_deleted_()) return;
  timer_ = loop_.AddTimer(timing_.shutdown_grace, [this] {
    if (all_deleted_()) End();
  });
}

void ServerLifetime::SandboxShutDown() {
  if (timing_.linger.count() == 0) return End();
  timer_ = loop_.AddTimer(timing_.linger, [this] { End(); });
}

void ServerLifetime::End() {
  if (std::exchange(ended_, true)) return;
  timer_.Reset();
  stop_();
}

}  // namespace hull::shim
