#include "shim/pod/pod_cgroup.h"

#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "shim/mount/spawner_bundle_files.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kDefaultCpuPeriod = 100000;  // microseconds
constexpr uint64_t kMinCpuQuota = 1000;         // the kernel's minimum

fs::path Dir(const fs::path& cgroupfs, std::string_view cgroup) {
  std::string relative(cgroup);
  relative.erase(0, relative.find_first_not_of('/'));
  return relative.empty() ? cgroupfs : cgroupfs / relative;
}

// rmdir; a directory already gone is fine.
Status RemoveDir(const fs::path& dir) {
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return Status::Ok();
  // cgroupfs says EBUSY for a cgroup with processes or children; a plain
  // directory (tests' trees) ENOTEMPTY.
  if (errno == EBUSY || errno == ENOTEMPTY) {
    return FailedPreconditionError("remove cgroup " + dir.string() + ": still in use");
  }
  return ErrnoError("rmdir", dir.string());
}

}  // namespace

Result<std::optional<std::string>> PodCgroupPath(std::string_view cgroups_path, bool systemd) {
  if (cgroups_path.empty()) return std::optional<std::string>();
  if (systemd) {
    std::string_view slice = cgroups_path.substr(0, cgroups_path.find(':'));
    // Validates the whole triple the way the runtime will read it.
    Result<std::string> checked = cgroups::CgroupPathFromOci(cgroups_path, true);
    if (!checked) return checked.error();
    if (slice.empty()) return std::optional<std::string>();
    HULL_ASSIGN_OR_RETURN(std::string path, cgroups::ExpandSlice(slice));
    if (path == "/") return std::optional<std::string>();
    return std::optional<std::string>(std::move(path));
  }
  HULL_ASSIGN_OR_RETURN(std::string path, cgroups::CgroupPathFromOci(cgroups_path, false));
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return std::optional<std::string>();
  return std::optional<std::string>(path.substr(0, slash));
}

cgroups::Resources PodCgroupResources(const oci::PodSize& size) {
  cgroups::Resources r;
  if (size.pod_cpu_millis > 0) {
    uint64_t period = size.workload.cpu_period > 0 ? static_cast<uint64_t>(size.workload.cpu_period)
                                                   : kDefaultCpuPeriod;
    // millis are bounded by the sizing code (int64 quota / period * 1000),
    // so this product stays far below 2^64 for any real period.
    uint64_t quota = size.pod_cpu_millis * period / 1000;
    r.cpu_max = cgroups::CpuMax{.quota = std::max(quota, kMinCpuQuota), .period = period};
  }
  if (size.workload.cpu_shares > 0) {
    r.cpu_weight = cgroups::CpuWeightFromShares(static_cast<uint64_t>(size.workload.cpu_shares));
  }
  if (size.pod_memory_bytes > 0) r.memory_max = size.pod_memory_bytes;
  return r;
}

Result<PodCgroupPlacement> PreparePodCgroup(const std::string& pod,
                                            const std::optional<cgroups::Resources>& limits,
                                            const fs::path& cgroupfs) {
  PodCgroupPlacement placement{.pod = pod};
  std::error_code ec;
  placement.created_pod = !fs::is_directory(Dir(cgroupfs, pod), ec);
  HULL_ASSIGN_OR_RETURN(cgroups::Manager manager, cgroups::Manager::Unified(pod, cgroupfs));
  Status status = manager.Create(limits.value_or(cgroups::Resources{}));
  if (!status.ok()) {
    if (placement.created_pod) RemoveDir(Dir(cgroupfs, pod)).IgnoreError();
    return status.WithContext("pod cgroup " + pod);
  }
  return placement;
}

Status PlaceShim(const PodCgroupPlacement& placement, pid_t pid, const fs::path& cgroupfs) {
  HULL_ASSIGN_OR_RETURN(cgroups::Manager leaf,
                        cgroups::Manager::Unified(placement.shim_leaf, cgroupfs));
  HULL_RETURN_IF_ERROR_CTX(leaf.Create(), "shim cgroup " + placement.shim_leaf);
  HULL_RETURN_IF_ERROR_CTX(leaf.AddProcess(pid), "shim cgroup " + placement.shim_leaf);
  return Status::Ok();
}

Status LeavePodCgroup(const PodCgroupPlacement& placement, pid_t self, const fs::path& cgroupfs) {
  return LeavePodCgroup(placement, self, cgroupfs, nullptr);
}

Status LeavePodCgroup(const PodCgroupPlacement& placement, pid_t self, const fs::path& cgroupfs,
                      const std::function<Status()>& follow) {
  Status first = Status::Ok();
  auto keep = [&first](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  if (!placement.shim_leaf.empty()) {
    Result<cgroups::Manager> origin = cgroups::Manager::Unified(placement.origin, cgroupfs);
    if (!origin) {
      keep(origin.error());
    } else {
      keep(origin->AddProcess(self).WithContext("return to cgroup " + placement.origin));
      if (follow) keep(follow().WithContext("return to cgroup " + placement.origin));
    }
  }
  keep(RemovePlacementCgroups(placement, cgroupfs));
  return first;
}

SpawnerEntry FollowCgroupSpawnerEntry() {
  return SpawnerEntry{
      .name = "follow-cgroup",
      .call = [](std::string_view payload, std::vector<UniqueFd>& fds) -> Result<SpawnerReply> {
        if (!payload.empty() || !fds.empty()) {
          return InvalidArgumentError("follow-cgroup takes no payload and no descriptor");
        }
        HULL_ASSIGN_OR_RETURN(cgroups::ProcessCgroups server,
                              cgroups::ReadProcessCgroups(::getppid()));
        if (!server.unified) return FailedPreconditionError("the server has no cgroup v2 path");
        HULL_ASSIGN_OR_RETURN(cgroups::Host host, cgroups::DetectHost());
        if (!host.unified) return FailedPreconditionError("no cgroup2 mount");
        HULL_ASSIGN_OR_RETURN(
            cgroups::Manager cgroup,
            cgroups::Manager::Unified(*server.unified, host.unified->mount_point));
        HULL_RETURN_IF_ERROR_CTX(cgroup.AddProcess(::getpid()),
                                 "spawner follows the server to " + *server.unified);
        return SpawnerReply{};
      }};
}

Status RemovePlacementCgroups(const PodCgroupPlacement& placement, const fs::path& cgroupfs) {
  Status first = Status::Ok();
  if (!placement.shim_leaf.empty()) first = RemoveDir(Dir(cgroupfs, placement.shim_leaf));
  if (placement.created_pod) {
    Status pod = RemoveDir(Dir(cgroupfs, placement.pod));
    if (first.ok()) first = std::move(pod);
  }
  return first;
}

Status RemoveLeftPodCgroups(const PodCgroupPlacement& placement, const fs::path& cgroupfs) {
  if (!placement.shim_leaf.empty()) {
    const fs::path leaf = Dir(cgroupfs, placement.shim_leaf);
    Result<std::string> procs = ReadFile((leaf / "cgroup.procs").string());
    if (procs && procs->find_first_not_of(" \n") != std::string::npos) {
      return FailedPreconditionError("shim cgroup " + placement.shim_leaf +
                                     ": the server is still in it (it leaves at exit)");
    }
    HULL_RETURN_IF_ERROR(RemoveDir(leaf));
  }
  if (placement.created_pod) {
    Status pod = RemoveDir(Dir(cgroupfs, placement.pod));
    if (pod.code() == Code::kFailedPrecondition) {
      return FailedPreconditionError("pod cgroup " + placement.pod +
                                     ": still has the pod's other containers in it");
    }
    return pod;
  }
  return Status::Ok();
}

Status WritePodCgroupFile(const std::string& bundle, const PodCgroupPlacement& placement,
                          SpawnerClient* spawner) {
  nlohmann::ordered_json j;
  j["pod"] = placement.pod;
  j["created_pod"] = placement.created_pod;
  j["shim_leaf"] = placement.shim_leaf;
  j["origin"] = placement.origin;
  return WriteBundleFileVia(spawner, bundle + "/" + std::string(kPodCgroupFile), j.dump(2) + "\n");
}

Result<PodCgroupPlacement> ReadPodCgroupFile(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&path] { return InvalidArgumentError(path + ": not a pod cgroup record"); };
  if (!j.is_object()) return bad();
  PodCgroupPlacement p;
  auto str = [&j](const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  auto created = j.find("created_pod");
  if (!str("pod", p.pod) || !str("shim_leaf", p.shim_leaf) || !str("origin", p.origin) ||
      created == j.end() || !created->is_boolean() || p.pod.empty() || p.pod.front() != '/') {
    return bad();
  }
  p.created_pod = created->get<bool>();
  // The leaf is always hull's own name below the pod; anything else was not
  // written by hull, and the server must not rmdir it.
  if (!p.shim_leaf.empty() && p.shim_leaf != p.pod + "/" + std::string(kShimLeaf)) return bad();
  if (!p.shim_leaf.empty() && (p.origin.empty() || p.origin.front() != '/')) return bad();
  return p;
}

}  // namespace hull::shim
