// GuestSpec: the OCI spec a container gets in the guest, made from the one
// the host sent. The agent owns the guest's cgroup tree and runs crun from a
// bundle of its own (in the guest's /run); the host's spec names things only
// the host has (its cgroup path, AppArmor profiles, hooks, namespace paths).
// Pure functions: no I/O.
#pragma once

#include <set>
#include <string>

#include "base/status.h"

namespace hull::agent {

// The guest cgroup (relative to /sys/fs/cgroup) of container `id`.
std::string GuestCgroupPath(const std::string& id);

// Rewrites `spec_json` (a whole runtime-spec config.json) for the guest:
// - root.path made absolute: a relative one is taken relative to `bundle`
//   (the host's bundle directory as the guest sees it);
// - linux.cgroupsPath set to GuestCgroupPath(id);
// - the network namespace dropped (containers share the guest's network,
//   which is the pod's), and with it the `net.*` entries of linux.sysctl
//   (crun refuses them without a network namespace);
// - a namespace path `/proc/<pid>/ns/<type>` kept when <pid> is in
//   `pod_pids` (the guest pids of the inits the agent runs, which are the
//   pids the host reports: CRI joins a pod's containers to the pause
//   container's IPC, UTS and, with shareProcessNamespace, PID namespaces this
//   way); any other path removed (a host path means nothing in the guest);
// - a cgroup namespace added when there is none, so that the container
//   sees its own cgroup (its limits) at /sys/fs/cgroup, as runc's do on a
//   cgroup v2 host;
// - process.apparmorProfile, process.selinuxLabel, linux.mountLabel and
//   hooks removed (the guest loads no LSM policy and has no host binaries).
// InvalidArgument when the JSON is not a spec object or has no root.path.
Result<std::string> GuestSpec(const std::string& spec_json, const std::string& id,
                              const std::string& bundle, const std::set<int>& pod_pids = {});

// The same for an exec's runtime-spec "process" object: AppArmor and
// SELinux labels removed. InvalidArgument when it is not an object with args.
Result<std::string> GuestProcess(const std::string& process_json);

// Container and exec ids: non-empty, at most 128 characters of
// [A-Za-z0-9_.-], not starting with '.' (they name files in the guest).
Status CheckId(const std::string& what, const std::string& id);

}  // namespace hull::agent
