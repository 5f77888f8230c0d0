#include "shim/pod/pod_cgroup_setup.h"

#include "cgroups/cgroups.h"

namespace hull::shim {

Result<std::optional<PodCgroupSetup>> SetUpPodCgroup(
    std::string_view who, std::string_view cgroups_path, const ShimConfig& config,
    const std::optional<oci::PodSize>& size, const std::function<Result<std::string>()>& origin,
    const Logger& log) {
  const PodSizing& sizing = config.sizing;
  if (!size || (!sizing.pod_cgroup_limits && !sizing.shim_in_pod_cgroup)) return std::nullopt;
  Result<cgroups::Host> host = cgroups::DetectHost();
  if (!host) return host.error().WithContext("pod cgroup");
  if (host->mode != cgroups::Mode::kUnified || !host->unified) {
    log.Info(
        "{}: pod cgroup left alone: hull sizes it and places the shim in it on cgroup "
        "v2 only (this host: {})",
        who, cgroups::ModeName(host->mode));
    return std::nullopt;
  }
  HULL_ASSIGN_OR_RETURN(std::optional<std::string> pod,
                        PodCgroupPath(cgroups_path, config.runtime.systemd_cgroup));
  if (!pod) {
    log.Info("{}: pod cgroup left alone: cgroupsPath \"{}\" has no parent cgroup", who,
             cgroups_path);
    return std::nullopt;
  }
  const std::string cgroupfs = host->unified->mount_point;
  std::optional<cgroups::Resources> limits;
  if (sizing.pod_cgroup_limits) limits = PodCgroupResources(*size);
  HULL_ASSIGN_OR_RETURN(PodCgroupPlacement placement, PreparePodCgroup(*pod, limits, cgroupfs));
  if (sizing.shim_in_pod_cgroup) {
    Result<std::string> from = origin();
    if (!from) {
      RemovePlacementCgroups(placement, cgroupfs).IgnoreError();
      return from.error().WithContext("pod cgroup");
    }
    placement.shim_leaf = *pod + "/" + std::string(kShimLeaf);
    placement.origin = *from;
  }
  log.Info("{}: pod cgroup {}{}{}{}", who, *pod, placement.created_pod ? " (created)" : "",
           limits ? " sized" : "", placement.shim_leaf.empty() ? "" : ", shim in ",
           placement.shim_leaf);
  return std::optional<PodCgroupSetup>(
      PodCgroupSetup{.placement = std::move(placement), .cgroupfs = cgroupfs});
}

}  // namespace hull::shim
