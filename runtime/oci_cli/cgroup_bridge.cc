#include "runtime/oci_cli/cgroup_bridge.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "google/protobuf/any.pb.h"

namespace hull::runtime::oci_cli {

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

Result<cgroups::Manager> ContainerCgroup(pid_t init_pid) {
  HULL_ASSIGN_OR_RETURN(cgroups::Manager cgroup, cgroups::Manager::ForPid(init_pid));
  HULL_ASSIGN_OR_RETURN(std::filesystem::path dir, cgroup.ProcessesDir());
  auto own = cgroups::Manager::ForPid(::getpid());
  if (own) {
    auto own_dir = own->ProcessesDir();
    if (own_dir && *own_dir == dir) {
      return FailedPreconditionError("process " + std::to_string(init_pid) +
                                     " is in the shim's own cgroup " + dir.string());
    }
  }
  return cgroup;
}

}  // namespace hull::runtime::oci_cli
