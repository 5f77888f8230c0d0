// What the files of Container (container.cc, container_steps.cc,
// container_control.cc) share. Private to shim/.
#pragma once

#include <chrono>
#include <memory>

#include "base/status.h"

namespace hull::shim::internal {

// How long a Delete waits for a process's output to be copied out.
inline constexpr std::chrono::milliseconds kDrainTimeout(10000);

// For the callback of a backend call: once the container it belongs to is
// gone, answers `done` NotFound "container deleted" and returns true.
template <typename Answer>
bool Gone(const std::weak_ptr<bool>& alive, Answer& done) {
  if (!alive.expired()) return false;
  done(NotFoundError("container deleted"));
  return true;
}

}  // namespace hull::shim::internal
