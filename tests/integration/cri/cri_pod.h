// What the CRI tests (cri_test, sandbox_api_test, cri_vm_pod_test) share
// besides the client: the PodSandboxConfig they run pods with, their set-up
// (the test's cgroup parent, waiting for CRI to see the imported image,
// directories runsc must reach), and reading /proc and the cgroup hierarchies
// to check what a pod leaves behind. Any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness/host.h"

namespace hull::itest {

class CriClient;
class PrivateContainerd;

// The cgroup parent of one test's pods: "/<prefix>-<pid>-<test>", the
// test's name with '/' (parameterised tests) turned into '-'.
std::string TestCgroupParent(const std::string& prefix, const std::string& test_name);
// Waits (up to 30 s) until CRI lists `image`: the CRI plugin learns about
// imported images from containerd's events. False on timeout.
bool WaitForCriImage(CriClient& cri, const std::string& image);

// Restarts `containerd` and waits up to `timeout` for CRI to report `pod`
// SANDBOX_READY again. "" when it does; else why (the restart's error, or
// the last status with the tail of containerd's log).
std::string RestartAndWaitForReadyPod(PrivateContainerd& containerd, CriClient& cri,
                                      const std::string& pod, std::chrono::milliseconds timeout);
// runsc's sandbox, which has dropped its capabilities, mounts its chroot in
// containerd's temp dir (the shim's TMPDIR): it must be able to reach it
// through the test's directories, which mkdtemp made 0700. Opens them to
// search (0711).
void OpenForRunsc(const std::vector<std::string>& dirs);

// A PodSandboxConfig as kubelet sends it (1.23+: linux.resources): pod
// `name` in namespace hull-test, 1.5 CPUs (quota 150000 / period 100000,
// 1536 shares) and 256 MiB, in `cgroup_parent`, logging to `log_directory`,
// on the pod network or the host's.
nlohmann::json PodSandboxConfigJson(const std::string& name, const std::string& cgroup_parent,
                                    const std::string& log_directory, bool host_network = false);

// The pod-namespace checks every handler is held to (CriParityTest in
// cri_test, CriVmPodTest). Two busybox containers run in `pod`: "shared"
// (pid=POD; its init leaves two sleeping workers, then sleeps) and "own"
// (pid=CONTAINER, sleeps), and what each sees, by ExecSync: the lines
// kernel.shm_rmid_forced, kernel.msgmax, PID 1's command line (NULs as
// spaces), then the links of its ipc, uts and pid namespaces; 6 lines each,
// empty where it has none. On failure *error says why.
struct PodNamespaceViews {
  std::string shared, own;  // container ids
  std::vector<std::string> in_shared, in_own;
};
PodNamespaceViews RunPodNamespaceContainers(const CriClient& cri, const std::string& pod,
                                            const nlohmann::json& pod_config,
                                            const std::string& image, std::string* error);

// The whole file, or "" when it cannot be read.
std::string ReadText(const std::string& path);
// /proc/<pid>/cmdline with the NULs as spaces.
std::string Cmdline(pid_t pid);
// The hull servers of the containerd at `address`: its containerd-shim-hull-v2
// processes but their spawners (the same command line, named hull-spawner).
std::vector<pid_t> HullServers(const std::string& address);
// pid, name, state, parent and command line of each of `pids`: for messages.
std::string DescribeProcesses(const std::vector<pid_t>& pids);
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
