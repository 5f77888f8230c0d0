// QemuJailFilter: hull's own seccomp filter for a jailed QEMU, loaded under
// QEMU's `-sandbox` (docs/security.md, "QEMU's jail"). QEMU's sandbox denies
// obsolete calls, set*id, spawning and scheduler changes; this denies what
// it lets through and a guest that took QEMU over could use to reach further
// into the host kernel or other processes: new namespaces (an unprivileged
// user namespace gives back capabilities), tracing and reading other
// processes, BPF, perf, keyrings, userfaultfd, io_uring, mounts, modules.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/status.h"

namespace hull::shim::vm {

// The system calls the filter refuses (EPERM), by name; clone and clone3
// are handled apart (a clone with a namespace flag is refused; clone3, whose
// flags a filter cannot read, is ENOSYS, so glibc falls back to clone).
const std::vector<const char*>& QemuDeniedCalls();

// The filter as a classic BPF program for SpawnJail::seccomp: the same
// instructions on every call (built once and kept), for the spawner to
// compare a request with. Everything not listed is allowed.
Result<std::vector<sock_filter>> QemuJailFilter();

// The same for QEMU's share helper (virtfs-proxy-helper), which chroots into
// the share it serves as its first step: QemuJailFilter with chroot allowed.
Result<std::vector<sock_filter>> ShareHelperFilter();

}  // namespace hull::shim::vm
