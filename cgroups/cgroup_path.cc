// OCI linux.cgroupsPath -> a cgroupfs path: plain paths, and the systemd
// driver's "slice:prefix:name" expanded the way systemd lays units out (and
// runc computes them without asking systemd).
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {

Result<std::string> ExpandSlice(std::string_view slice) {
  constexpr std::string_view kSuffix = ".slice";
  auto invalid = [&] {
    return InvalidArgumentError("invalid slice name: \"" + std::string(slice) + "\"");
  };
  if (slice.size() <= kSuffix.size() || !slice.ends_with(kSuffix) ||
      slice.find('/') != std::string_view::npos) {
    return invalid();
  }
  std::string_view name = slice.substr(0, slice.size() - kSuffix.size());
  if (name == "-") return std::string("/");
  // "a-b-c" -> /a.slice/a-b.slice/a-b-c.slice; "a--b", "-a", "a-" are not
  // slice names.
  std::string path;
  std::string prefix;
  size_t start = 0;
  while (true) {
    size_t dash = name.find('-', start);
    std::string_view part =
        name.substr(start, dash == std::string_view::npos ? dash : dash - start);
    if (part.empty()) return invalid();
    path += "/" + prefix + std::string(part) + std::string(kSuffix);
    prefix += std::string(part) + "-";
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  return path;
}

Result<std::string> CgroupPathFromOci(std::string_view cgroups_path, bool systemd) {
  if (!systemd) {
    std::string path(cgroups_path);
    if (path.empty() || path.front() != '/') path.insert(path.begin(), '/');
    HULL_RETURN_IF_ERROR(internal::ValidateCgroupPath(path));
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = cgroups_path.find(':', start);
    parts.push_back(
        cgroups_path.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() != 3) {
    return InvalidArgumentError("systemd cgroupsPath is not \"slice:prefix:name\": \"" +
                                std::string(cgroups_path) + "\"");
  }
  std::string_view slice = parts[0].empty() ? "system.slice" : parts[0];
  std::string_view prefix = parts[1];
  std::string_view name = parts[2];
  HULL_ASSIGN_OR_RETURN(std::string path, ExpandSlice(slice));
  HULL_RETURN_IF_ERROR_CTX(internal::ValidateComponent(name), "cgroupsPath name");
  if (prefix.find('/') != std::string_view::npos) {
    return InvalidArgumentError("cgroupsPath prefix has a '/': \"" + std::string(prefix) + "\"");
  }
  // A name that is a slice is the unit itself, joined to the parent slice
  // as runc does; anything else becomes a scope.
  std::string unit(name);
  if (!name.ends_with(".slice")) {
    unit = prefix.empty() ? unit + ".scope" : std::string(prefix) + "-" + unit + ".scope";
  }
  return (path == "/" ? "" : path) + "/" + unit;
}

}  // namespace hull::cgroups
