// The OCI CLI backends' view of the container's cgroup: metrics, OOM events
// and whether any process is left come from hull's cgroups module (runc and
// crun only manage the cgroup; reading it is hull's). Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>

#include "base/event_loop.h"
#include "base/status.h"
#include "cgroups/cgroups.h"

namespace google::protobuf {
class Any;
}

namespace hull::runtime::oci_cli {

// io.containerd.cgroups.v1/v2.Metrics of the cgroup `init_pid` is in.
Result<google::protobuf::Any> ContainerMetrics(pid_t init_pid);

// Calls `on_oom` on every OOM kill in the cgroup of `init_pid`, until the
// handle is dropped.
Result<EventHandle> WatchContainerOom(EventLoop& loop, pid_t init_pid,
                                      std::function<void()> on_oom);

// Reads the OOM-kill counter of the cgroup `init_pid` is in now; it keeps
// reading that cgroup after the process is gone.
using OomCounter = std::function<Result<uint64_t>()>;
Result<OomCounter> ContainerOomCounter(pid_t init_pid);

// The container's own cgroup, from its init `init_pid` (alive, or not yet
// reaped): kept so the container can be watched emptying after its init is
// gone (cgroups::Manager::WaitEmptyAsync). FailedPrecondition if the
// directory that watch would read is the shim's own (a runtime that made
// the container no cgroup there): the shim would never see it empty.
Result<cgroups::Manager> ContainerCgroup(pid_t init_pid);

}  // namespace hull::runtime::oci_cli
