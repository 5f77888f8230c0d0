// Where the long-lived server runs, set by `start` right after spawning it,
// as the runc shim does: its core-scheduling cookie, the shim cgroup from the
// config, and an OOM score just above containerd's. Blocking; `start` only.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>

#include "base/status.h"
#include "shim/mount/mountinfo.h"

namespace hull::shim {

// prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, process group): a new core
// scheduling cookie for this process group, which the server inherits. A
// kernel without core scheduling (EINVAL, ENODEV) is not an error.
Status CreateSchedCoreCookie();

// Moves `pid` into the cgroup `cgroup` (a path like "/system.slice/x"): on
// every cgroup hierarchy in `mounts` (cgroup v2 and each v1 controller)
// where that directory exists, writes the pid to its cgroup.procs. NotFound
// when no hierarchy has it; ".." in the path is InvalidArgument.
Status MoveToCgroup(pid_t pid, const std::string& cgroup, std::span<const MountInfo> mounts);

// Sets `child`'s oom_score_adj to `parent`'s + 1, clamped to [-1000, 1000].
// EPERM/EACCES on the write (unprivileged, or in a user namespace) is not an
// error. `proc` is the procfs mount (a seam for tests).
Status AdjustOomScore(pid_t child, pid_t parent, const std::string& proc = "/proc");

}  // namespace hull::shim
