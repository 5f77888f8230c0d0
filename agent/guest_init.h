// The guest's init duties, done by hull-agent when it is PID 1 of the VM:
// the API filesystems (/proc, /sys, /dev, /dev/pts, /dev/shm, /run, /tmp),
// cgroup2 at /sys/fs/cgroup with every controller enabled for children, the
// kernel modules tools/guest-image listed (in dependency order), and the
// console as stdout/stderr. Blocking, before the loop starts.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::agent {

// Mounts, loads the modules named (one path a line) in `modules_list` if it
// exists, and points fds 0-2 at /dev/console.
Status InitGuest(const std::string& modules_list);

// Loads one module file with finit_module(); already loaded is fine.
Status LoadModule(const std::string& path);

// The character device of the virtio-serial port called `name`: the
// /dev/virtio-ports/<name> link if udev made one, else the vportNpM whose
// /sys/class/virtio-ports/*/name matches. Waits up to `timeout` for the port
// to appear (the host announces ports after the driver has loaded).
Result<std::string> FindVirtioPort(const std::string& name, std::chrono::milliseconds timeout);

// Syncs and powers the machine off; returns only if the kernel refused.
Status PowerOff();

// Sets the guest's wall clock to `unix_nano` (if non-zero) and mixes
// `entropy` (if any) into the kernel's pool with RNDADDENTROPY, then forces
// a CRNG reseed (RNDRESEEDCRNG): a clone of a template VM must not go on with
// the template's clock and random state.
Status RefreshFromHost(int64_t unix_nano, const std::string& entropy);

// The cgroup that holds the pod's containers (/sys/fs/cgroup/hull, the
// parent of each container's, agent/guest_spec.h): made if missing, with the
// root's controllers enabled below it, and its memory.max set to `bytes`
// (docs/vm.md, "Resize"). A cgroup this call made is removed again if its
// controllers cannot be enabled. SetPodMemoryMaxIn: the same below another
// cgroup2 root (tests).
Status SetPodMemoryMax(uint64_t bytes);
// The same cgroup made (if missing, with the controllers) below
// `cgroup_root`, with no limit written: for a container of the agent's own
// (agent/held_pause.h).
Status MakePodCgroupIn(const std::string& cgroup_root);
Status SetPodMemoryMaxIn(const std::string& cgroup_root, uint64_t bytes);

}  // namespace hull::agent
