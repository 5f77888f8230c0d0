// Where the long-lived server runs, set by `start` right after spawning it,
// as the runc shim does: its core-scheduling cookie and an OOM score just
// above containerd's (the shim cgroup from the config is
// cgroups::MoveProcess). Blocking; `start` only.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace hull::shim {

// prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, process group): a new core
// scheduling cookie for this process group, which the server inherits. A
// kernel without core scheduling (EINVAL, ENODEV) is not an error.
Status CreateSchedCoreCookie();

// Sets `child`'s oom_score_adj to `parent`'s + 1, clamped to [-1000, 1000].
// EPERM/EACCES on the write (unprivileged, or in a user namespace) is not an
// error. `proc` is the procfs mount (a seam for tests).
Status AdjustOomScore(pid_t child, pid_t parent, const std::string& proc = "/proc");

}  // namespace hull::shim
