#include "shim/backend/oci_cli/cgroup_bridge.h"

#include "google/protobuf/any.pb.h"

// HULL_BACKEND_NO_CGROUPS: only for building the backend's unit tests in a
// tree whose cgroups module is not built yet; the shim always has it.
#ifndef HULL_BACKEND_NO_CGROUPS
#include "cgroups/cgroups.h"
#endif

namespace hull::shim::oci_cli {

Result<google::protobuf::Any> ContainerMetrics(pid_t init_pid) {
#ifdef HULL_BACKEND_NO_CGROUPS
  return UnimplementedError("stats for pid " + std::to_string(init_pid) +
                            ": built without the cgroups module");
#else
  return cgroups::MetricsForPid(init_pid);
#endif
}

Result<EventHandle> WatchContainerOom(EventLoop& loop, pid_t init_pid,
                                      std::function<void()> on_oom) {
#ifdef HULL_BACKEND_NO_CGROUPS
  (void)loop;
  (void)on_oom;
  return UnimplementedError("OOM watch for pid " + std::to_string(init_pid) +
                            ": built without the cgroups module");
#else
  return cgroups::WatchOom(loop, init_pid, std::move(on_oom));
#endif
}

}  // namespace hull::shim::oci_cli
