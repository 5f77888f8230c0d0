// ShimContext: what every part of the serve mode shares, built once by
// RunServer and passed down (no globals): the loop, the reaper, the log, the
// event publisher, the containerd namespace, and the pod cgroup the server
// sits in.
#pragma once

#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "shim/pod/pod_cgroup.h"
#include "shim/publisher.h"

namespace hull::shim {

struct ShimContext {
  EventLoop& loop;
  Reaper& reaper;
  const Logger& log;
  EventPublisher& publisher;
  std::string ns;
  // The server's placement in a pod cgroup, which it leaves at exit: from
  // `start`'s record, or set by Task.Create of a pause container that
  // `start` did not prepare. Null where nobody tracks it (tests).
  std::optional<PodCgroupPlacement>* pod_cgroup = nullptr;
};

}  // namespace hull::shim
