// What the CRI tests (cri_test, sandbox_api_test) share besides the client:
// the PodSandboxConfig they run pods with, and reading /proc and the cgroup
// hierarchies to check what a pod leaves behind. Any thread.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hull::itest {

// A PodSandboxConfig as kubelet sends it (1.23+: linux.resources): pod
// `name` in namespace hull-test, 1.5 CPUs (quota 150000 / period 100000,
// 1536 shares) and 256 MiB, in `cgroup_parent`, logging to `log_directory`,
// on the pod network or the host's.
nlohmann::json PodSandboxConfigJson(const std::string& name, const std::string& cgroup_parent,
                                    const std::string& log_directory, bool host_network = false);

// The whole file, or "" when it cannot be read.
std::string ReadText(const std::string& path);
// /proc/<pid>/cmdline with the NULs as spaces.
std::string Cmdline(pid_t pid);
// From /proc/<pid>/stat; -1 when the process is gone.
pid_t ParentPid(pid_t pid);
// The shim that started `pid`'s lineage: its parent, or, for a confined
// server (docs/security.md), its parent's parent when the parent is the
// server's hull-spawner.
pid_t ParentShim(pid_t pid);

// The v1 cgroup hierarchies (cgroup v1 hybrid host), or the unified one.
std::vector<std::string> CgroupHierarchies();
// Every cgroup directory named `parent` (relative) below each hierarchy, with
// its subdirectories.
std::vector<std::string> CgroupsUnder(const std::string& parent);
// Removes the pod's cgroup parent in every hierarchy (kubelet's job; runc
// creates it and leaves it). False when a cgroup below it is still there.
bool RemoveCgroupParent(const std::string& parent);

}  // namespace hull::itest
