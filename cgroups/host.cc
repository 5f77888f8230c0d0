// Host layout (which cgroup filesystems are mounted where) and
// /proc/<pid>/cgroup.
#include <algorithm>
#include <array>

#include "base/mountinfo.h"
#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {

using internal::Split;

namespace {

// v1 controller names as they appear in a cgroup mount's super options;
// everything else there (rw, xattr, release_agent=...) is a mount flag.
constexpr std::array<std::string_view, 14> kV1Controllers = {
    "blkio",  "cpu",  "cpuacct", "cpuset",   "devices",    "freezer", "hugetlb",
    "memory", "misc", "net_cls", "net_prio", "perf_event", "pids",    "rdma"};

bool IsController(std::string_view option) {
  return option.starts_with("name=") ||
         std::find(kV1Controllers.begin(), kV1Controllers.end(), option) != kV1Controllers.end();
}

std::string Normal(const std::filesystem::path& p) {
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool AtOrBelow(const std::string& path, const std::string& root) {
  if (path == root) return true;
  if (root == "/") return path.starts_with('/');
  return path.starts_with(root) && path[root.size()] == '/';
}

}  // namespace

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kLegacy: return "legacy";
    case Mode::kHybrid: return "hybrid";
    case Mode::kUnified: return "unified";
  }
  return "unknown";
}

const Hierarchy* Host::FindV1(std::string_view controller) const {
  for (const Hierarchy& h : v1) {
    if (std::find(h.controllers.begin(), h.controllers.end(), controller) != h.controllers.end()) {
      return &h;
    }
  }
  return nullptr;
}

Result<Host> DetectHost(const Roots& roots) {
  std::filesystem::path mountinfo_path = roots.proc / "self/mountinfo";
  HULL_ASSIGN_OR_RETURN(std::vector<MountInfo> mounts, ReadMountInfo(mountinfo_path.string()));
  const std::string root = Normal(roots.cgroupfs);

  Host host;
  bool unified_at_root = false;
  for (MountInfo& m : mounts) {
    std::string mount_point = Normal(m.mount_point);
    if (!AtOrBelow(mount_point, root)) continue;
    Hierarchy h{.mount_point = mount_point, .root = m.root};
    if (m.fs_type == "cgroup2") {
      // A later mount on the same point hides an earlier one; a cgroup2 at
      // the root is the host's, whatever else is mounted below it.
      if (unified_at_root && mount_point != root) continue;
      host.unified = std::move(h);
      unified_at_root = mount_point == root;
    } else if (m.fs_type == "cgroup") {
      for (std::string& option : m.super_options) {
        if (IsController(option)) h.controllers.push_back(std::move(option));
      }
      std::erase_if(host.v1,
                    [&](const Hierarchy& old) { return old.mount_point == h.mount_point; });
      host.v1.push_back(std::move(h));
    }
  }

  if (unified_at_root) {
    host.mode = Mode::kUnified;
    host.v1.clear();
  } else if (!host.v1.empty()) {
    host.mode = host.unified ? Mode::kHybrid : Mode::kLegacy;
  } else if (host.unified) {
    host.mode = Mode::kUnified;  // only a cgroup2 mount, below the root
  } else {
    return FailedPreconditionError("no cgroup filesystem mounted at or below " + root + " (per " +
                                   mountinfo_path.string() + ")");
  }
  return host;
}

Result<ProcessCgroups> ParseProcCgroup(std::string_view content) {
  ProcessCgroups out;
  for (std::string_view line : Split(content, '\n')) {
    // hierarchy-id:controller-list:path; the path may itself contain ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return InvalidArgumentError("malformed cgroup line: " + std::string(line));
    }
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    HULL_RETURN_IF_ERROR(internal::ValidateCgroupPath(path));
    if (id == "0" && controllers.empty()) {
      out.unified = std::string(path);
      continue;
    }
    for (std::string_view controller : Split(controllers, ',')) {
      out.v1.insert_or_assign(std::string(controller), std::string(path));
    }
  }
  return out;
}

Result<ProcessCgroups> ReadProcessCgroups(pid_t pid, const Roots& roots) {
  std::filesystem::path path = roots.proc / std::to_string(pid) / "cgroup";
  HULL_ASSIGN_OR_RETURN(std::string content, internal::ReadFileAt(path));
  Result<ProcessCgroups> parsed = ParseProcCgroup(content);
  if (!parsed) return parsed.error().WithContext(path.string());
  return parsed;
}

}  // namespace hull::cgroups
