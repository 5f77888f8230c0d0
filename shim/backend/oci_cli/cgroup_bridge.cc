#include "shim/backend/oci_cli/cgroup_bridge.h"

#include "cgroups/cgroups.h"
#include "google/protobuf/any.pb.h"

namespace hull::shim::oci_cli {

Result<google::protobuf::Any> ContainerMetrics(pid_t init_pid) {
  return cgroups::MetricsForPid(init_pid);
}

Result<EventHandle> WatchContainerOom(EventLoop& loop, pid_t init_pid,
                                      std::function<void()> on_oom) {
  return cgroups::WatchOom(loop, init_pid, std::move(on_oom));
}

Result<OomCounter> ContainerOomCounter(pid_t init_pid) {
  HULL_ASSIGN_OR_RETURN(cgroups::Manager cgroup, cgroups::Manager::ForPid(init_pid));
  return OomCounter([cgroup = std::move(cgroup)] { return cgroup.OomKillCount(); });
}

}  // namespace hull::shim::oci_cli
