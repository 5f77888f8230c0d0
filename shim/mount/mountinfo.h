// /proc/<pid>/mountinfo, parsed: which filesystems are mounted where. Used to
// unmount everything below a bundle's rootfs and to find cgroup hierarchies.
// Reads the file once per call; no caching, no threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hull::shim {

struct MountInfo {
  int id = 0;
  int parent_id = 0;
  std::string root;         // path within the filesystem that is mounted
  std::string mount_point;  // absolute, unescaped
  std::string fs_type;      // "overlay", "cgroup2", ...
  std::string source;
  std::string super_options;  // "rw,memory" for a cgroup v1 hierarchy
};

// Parses mountinfo text (the kernel's octal escapes \040 etc. undone).
// Malformed lines are InvalidArgument.
Result<std::vector<MountInfo>> ParseMountInfo(std::string_view text);

// Reads and parses /proc/self/mountinfo (or `path`).
Result<std::vector<MountInfo>> ReadMountInfo(const std::string& path = "/proc/self/mountinfo");

}  // namespace hull::shim
