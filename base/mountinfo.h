// /proc/<pid>/mountinfo, parsed: which filesystems are mounted where. The one
// parser for it: the cgroups module finds cgroup hierarchies with it, the shim
// finds the mounts below a bundle's rootfs to unmount. Pure text work plus one
// whole-file read per ReadMountInfo call; no caching, no state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hull {

// One line of mountinfo (proc(5)):
//   id parent major:minor root mount_point options [optional...] - fs_type source super_options
// Every string field has the kernel's octal escapes (\040 for ' ', \011,
// \012, \134 for '\\') undone.
struct MountInfo {
  int id = 0;
  int parent_id = 0;
  std::string root;         // the path within the filesystem that is mounted
  std::string mount_point;  // absolute
  std::string fs_type;      // "overlay", "cgroup", "cgroup2", "fuse.sshfs", ...
  std::string source;       // may be empty
  // Split on ',' before unescaping (the kernel writes a ',' inside a value as
  // \054), empty pieces dropped: {"rw", "memory"} for a cgroup v1 hierarchy.
  std::vector<std::string> super_options;
};

// Parses mountinfo text, in its order (later lines are newer mounts). Strict,
// as the kernel writes it: fields are separated by exactly one space (so an
// empty source is an empty field, not a missing one); id and parent are
// decimal and not negative; the "-" separator comes after the 6 fixed fields
// and is followed by fs_type, source and super options. Any line that breaks
// this fails the whole parse with InvalidArgument naming the line: a table
// read wrong is never used in part. Empty lines are ignored. An escape that
// is not three octal digits up to \377 stays as written.
Result<std::vector<MountInfo>> ParseMountInfo(std::string_view text);

// Reads and parses `path`; errors name it.
Result<std::vector<MountInfo>> ReadMountInfo(const std::string& path = "/proc/self/mountinfo");

}  // namespace hull
