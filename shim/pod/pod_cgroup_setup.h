// The decision `start` and Task.Create share for a pause container: whether
// hull prepares the pod cgroup (the [sizing] keys, a cgroup v2 host, a
// cgroupsPath with a parent), and preparing it (pod_cgroup.h). Placing the
// server and writing the record stay with the caller, which knows which
// process moves. Blocking cgroupfs writes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/logging.h"
#include "base/status.h"
#include "oci/sizing.h"
#include "shim/config/config.h"
#include "shim/pod/pod_cgroup.h"

namespace hull::shim {

struct PodCgroupSetup {
  PodCgroupPlacement placement;  // shim_leaf and origin set for shim_in_pod_cgroup
  std::string cgroupfs;          // the cgroup2 mount point
};

// For a pause container (`size` set) with [sizing] pod_cgroup_limits or
// shim_in_pod_cgroup on a cgroup v2 host: creates the pod cgroup of
// `cgroups_path` if missing and sizes it (pod_cgroup_limits). With
// shim_in_pod_cgroup the placement names the leaf and `origin()`, where the
// server runs otherwise; nothing is moved yet. nullopt when nothing is to be
// done, each case said in the log (prefixed with `who`). On failure nothing
// created stays.
Result<std::optional<PodCgroupSetup>> SetUpPodCgroup(
    std::string_view who, std::string_view cgroups_path, const ShimConfig& config,
    const std::optional<oci::PodSize>& size, const std::function<Result<std::string>()>& origin,
    const Logger& log);

}  // namespace hull::shim
