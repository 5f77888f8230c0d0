// Manager: resolving a cgroup's directories, and the Stats entry points.
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {
namespace {

// `path` (from /proc/<pid>/cgroup, relative to the cgroup namespace root) as
// seen below a mount whose root is `mount_root`; nullopt if the mount does
// not show it.
std::optional<std::string> BelowMountRoot(const std::string& path, const std::string& mount_root) {
  if (mount_root == "/" || mount_root.empty()) return path;
  if (path == mount_root) return std::string("/");
  if (path.starts_with(mount_root) && path[mount_root.size()] == '/') {
    return path.substr(mount_root.size());
  }
  return std::nullopt;
}

template <typename Message>
Result<google::protobuf::Any> Pack(const Message& metrics, std::string_view type_url) {
  google::protobuf::Any any;
  any.set_type_url(std::string(type_url));
  if (!metrics.SerializeToString(any.mutable_value())) {
    return InternalError("serialize " + std::string(type_url));
  }
  return any;
}

}  // namespace

Result<Manager> Manager::ForPid(pid_t pid, const Roots& roots) {
  HULL_ASSIGN_OR_RETURN(Host host, DetectHost(roots));
  HULL_ASSIGN_OR_RETURN(ProcessCgroups cgroups, ReadProcessCgroups(pid, roots));
  Manager m(roots, host.mode);
  if (cgroups.unified) {
    m.path_ = *cgroups.unified;
  } else if (!cgroups.v1.empty()) {
    m.path_ = cgroups.v1.begin()->second;
  }
  if (host.mode != Mode::kUnified) {
    for (const auto& [controller, path] : cgroups.v1) {
      const Hierarchy* h = host.FindV1(controller);
      if (h == nullptr) continue;
      if (auto rel = BelowMountRoot(path, h->root)) m.v1_[controller] = {h->mount_point, *rel};
    }
  }
  if (host.unified && cgroups.unified) {
    if (auto rel = BelowMountRoot(*cgroups.unified, host.unified->root)) {
      m.unified_ = Location{host.unified->mount_point, *rel};
    }
  }
  bool found = host.mode == Mode::kUnified ? m.unified_.has_value() : !m.v1_.empty();
  if (!found) {
    return NotFoundError("process " + std::to_string(pid) + " is in no cgroup mounted under " +
                         roots.cgroupfs.string());
  }
  return m;
}

Result<Manager> Manager::ForPath(std::string_view path, const Roots& roots) {
  HULL_RETURN_IF_ERROR(internal::ValidateCgroupPath(path));
  HULL_ASSIGN_OR_RETURN(Host host, DetectHost(roots));
  Manager m(roots, host.mode);
  const std::string p(path);
  m.path_ = p;
  for (const Hierarchy& h : host.v1) {
    auto rel = BelowMountRoot(p, h.root);
    if (!rel) continue;
    for (const std::string& controller : h.controllers) m.v1_[controller] = {h.mount_point, *rel};
  }
  if (host.unified) {
    if (auto rel = BelowMountRoot(p, host.unified->root)) {
      m.unified_ = Location{host.unified->mount_point, *rel};
    }
  }
  return m;
}

Result<Manager::Location> Manager::Find(std::string_view controller) const {
  if (mode_ == Mode::kUnified) {
    if (unified_) return *unified_;
    return NotFoundError("no cgroup2 directory for this cgroup");
  }
  auto it = v1_.find(controller);
  if (it == v1_.end()) return NotFoundError("no " + std::string(controller) + " cgroup");
  return it->second;
}

Result<std::filesystem::path> Manager::Dir(std::string_view controller) const {
  HULL_ASSIGN_OR_RETURN(Location loc, Find(controller));
  return (loc.mount_point / std::filesystem::path(loc.relative).relative_path()).lexically_normal();
}

Result<Manager::Location> Manager::ProcessesLocation() const {
  if (mode_ == Mode::kUnified) return Find("");
  // Controllers runc and crun give every container a directory of its own
  // in, whenever the hierarchy is mounted.
  for (std::string_view controller : {"pids", "freezer", "memory", "devices", "cpu"}) {
    if (auto it = v1_.find(controller); it != v1_.end()) return it->second;
  }
  for (const auto& [controller, location] : v1_) {
    if (!controller.starts_with("name=")) return location;
  }
  return NotFoundError("no v1 controller hierarchy holds cgroup " + path_);
}

Result<std::filesystem::path> Manager::ProcessesDir() const {
  HULL_ASSIGN_OR_RETURN(Location loc, ProcessesLocation());
  return (loc.mount_point / std::filesystem::path(loc.relative).relative_path()).lexically_normal();
}

Result<google::protobuf::Any> Manager::Metrics() const {
  if (mode_ == Mode::kUnified) {
    HULL_ASSIGN_OR_RETURN(v2::Metrics metrics, MetricsV2());
    return Pack(metrics, kV2MetricsTypeUrl);
  }
  HULL_ASSIGN_OR_RETURN(v1::Metrics metrics, MetricsV1());
  return Pack(metrics, kV1MetricsTypeUrl);
}

Result<google::protobuf::Any> MetricsForPid(pid_t pid, const Roots& roots) {
  HULL_ASSIGN_OR_RETURN(Manager m, Manager::ForPid(pid, roots));
  return m.Metrics();
}

Result<EventHandle> WatchOom(EventLoop& loop, pid_t pid, std::function<void()> on_oom,
                             const Roots& roots) {
  HULL_ASSIGN_OR_RETURN(Manager m, Manager::ForPid(pid, roots));
  return m.WatchOom(loop, std::move(on_oom));
}

Result<uint64_t> OomKillCount(pid_t pid, const Roots& roots) {
  HULL_ASSIGN_OR_RETURN(Manager m, Manager::ForPid(pid, roots));
  return m.OomKillCount();
}

}  // namespace hull::cgroups
