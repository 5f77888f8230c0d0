// ShimContext: what every part of the serve mode shares, built once by
// RunServer and passed down (no globals): the loop, the reaper, the log, the
// event publisher and the containerd namespace. Read-only for its users;
// pod-wide state lives in the Pod (shim/pod/pod.h).
#pragma once

#include <string>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "shim/publisher.h"

namespace hull::shim {

struct ShimContext {
  EventLoop& loop;
  Reaper& reaper;
  const Logger& log;
  EventPublisher& publisher;
  std::string ns;
};

}  // namespace hull::shim
