// The pod cgroup on a cgroup v2 host: the cgroup the pause container's
// linux.cgroupsPath sits in (cgroupfs driver: its parent directory; systemd
// driver: its slice). `start` of a pause container prepares it before the
// runtime creates that container: creates it if missing (remembering that it
// did), writes the pod's size into cpu.max / cpu.weight / memory.max, and can
// put the long-lived server into the leaf <pod>/hull-shim so the pod pays for
// its shim. The server leaves at exit and removes what hull created; `delete`
// removes what a killed server left. The plan is stored in
// <bundle>/hull-pod-cgroup.json between the processes.
// Ordering and the config keys: docs/sizing.md. Blocking cgroupfs writes.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/spawner.h"
#include "base/status.h"
#include "cgroups/cgroups.h"
#include "oci/sizing.h"

namespace hull::shim {

inline constexpr std::string_view kPodCgroupFile = "hull-pod-cgroup.json";
// The leaf below the pod cgroup that holds the server.
inline constexpr std::string_view kShimLeaf = "hull-shim";

// The pod cgroup of a pause container from its linux.cgroupsPath (absolute,
// as in /proc/<pid>/cgroup). nullopt when there is no parent to size:
// "/id", "id", "" (cgroupfs) or a root or empty slice (systemd).
// InvalidArgument for a path cgroups::CgroupPathFromOci rejects.
Result<std::optional<std::string>> PodCgroupPath(std::string_view cgroups_path, bool systemd);

// cpu.max from pod_cpu_millis (period: the workload's, else 100 ms; at least
// the kernel's 1 ms quota), cpu.weight from the workload's shares (runc's
// conversion), memory.max from pod_memory_bytes. Dimensions the pod does not
// limit are left unset.
cgroups::Resources PodCgroupResources(const oci::PodSize& size);

// What `start` did, for the server (and the record in the bundle).
struct PodCgroupPlacement {
  std::string pod;           // absolute cgroup path
  bool created_pod = false;  // hull made the directory: hull removes it
  std::string shim_leaf;     // "<pod>/hull-shim" when the server goes there, else empty
  std::string origin;        // the server's cgroup before it moved (to go back at exit)
  friend bool operator==(const PodCgroupPlacement&, const PodCgroupPlacement&) = default;
};

// Creates the pod cgroup under the cgroup2 mount `cgroupfs` if it does not
// exist, then applies `limits` if given. On failure a cgroup this call
// created is removed again.
Result<PodCgroupPlacement> PreparePodCgroup(const std::string& pod,
                                            const std::optional<cgroups::Resources>& limits,
                                            const std::filesystem::path& cgroupfs);

// Creates placement.shim_leaf and moves `pid` into it.
Status PlaceShim(const PodCgroupPlacement& placement, pid_t pid,
                 const std::filesystem::path& cgroupfs);

// Undoes the placement for process `self` (the server, at exit): moves it
// back to `origin`, removes the leaf, and removes the pod cgroup if hull
// created it. Every step is tried; the first error is returned. A cgroup
// already gone is fine; a pod cgroup still in use (EBUSY: containers left in
// it) is FailedPrecondition and stays.
Status LeavePodCgroup(const PodCgroupPlacement& placement, pid_t self,
                      const std::filesystem::path& cgroupfs);
// Same, for a confined server (docs/security.md): once `self` is back in
// `origin`, `follow` has its spawner join it, before the cgroups go.
Status LeavePodCgroup(const PodCgroupPlacement& placement, pid_t self,
                      const std::filesystem::path& cgroupfs, const std::function<Status()>& follow);

// The spawner entry that moves a confined server's spawner into the server's
// own cgroup v2 (read from /proc/<its parent>/cgroup): the spawner moves
// itself, because a server cannot move it. The kernel's cpuset check refuses
// to move a process whose permitted capabilities are not a subset of the
// mover's, and the spawner has every one. It takes no payload: the server
// can only have the spawner follow it, never send it elsewhere. Registered
// at index kFollowCgroupSpawnerEntry.
inline constexpr uint32_t kFollowCgroupSpawnerEntry = 5;
SpawnerEntry FollowCgroupSpawnerEntry();

// Removes the leaf and (if hull created it) the pod cgroup, moving nothing:
// for undoing a failed `start` after its server was killed.
Status RemovePlacementCgroups(const PodCgroupPlacement& placement,
                              const std::filesystem::path& cgroupfs);

// For `delete` (a separate process, after a server died or exited): removes
// what a server that did not leave left behind, moving and killing nothing.
// If the leaf still holds a process (a live server, which leaves at exit),
// nothing is touched: FailedPrecondition. Else the leaf is removed, then the
// pod cgroup if hull created it; a pod cgroup that still has children (the
// pod's other containers) stays: FailedPrecondition. The kernel refuses to
// rmdir a cgroup with processes or children (EBUSY), so a process that
// enters between the check and the rmdir is never orphaned. A cgroup already
// gone is fine.
Status RemoveLeftPodCgroups(const PodCgroupPlacement& placement,
                            const std::filesystem::path& cgroupfs);

// <bundle>/hull-pod-cgroup.json, written atomically (by `spawner` when
// given: a confined server's); read back (NotFound when absent,
// InvalidArgument when malformed).
Status WritePodCgroupFile(const std::string& bundle, const PodCgroupPlacement& placement,
                          SpawnerClient* spawner = nullptr);
Result<PodCgroupPlacement> ReadPodCgroupFile(const std::string& path);

}  // namespace hull::shim
