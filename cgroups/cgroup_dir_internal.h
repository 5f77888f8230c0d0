// CgroupDir: an open cgroup directory, and fd-relative access to its files.
// A container that can write its cgroup tree can create directories there,
// so paths below a mount point are opened one component at a time with
// O_NOFOLLOW, never as one string. StatFiles: the "missing file is fine" view
// the metrics readers use.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups::internal {

class CgroupDir {
 public:
  // Opens `mount_point` (trusted: it comes from the host's mountinfo and may
  // be a symlink such as cpu -> cpu,cpuacct), then each component of
  // `relative` (a cgroup path, validated: no "." or "..") beneath it.
  static Result<CgroupDir> Open(const std::filesystem::path& mount_point,
                                std::string_view relative);

  int fd() const { return fd_.get(); }
  // For messages: "<mount point>/<relative>".
  const std::filesystem::path& path() const { return path_; }

  Result<UniqueFd> OpenFile(std::string_view name, int flags) const;
  // The whole file. NotFound if it does not exist.
  Result<std::string> Read(std::string_view name) const;
  // Writes `data` in one write(2), as cgroupfs expects.
  Status Write(std::string_view name, std::string_view data) const;
  // Names of the entries, without "." and "..".
  Result<std::vector<std::string>> List() const;

  Result<CgroupDir> Duplicate() const;

  // The subdirectory `name` (one path component, O_NOFOLLOW).
  Result<CgroupDir> OpenChild(std::string_view name) const;
  // mkdirat; AlreadyExists if there is one.
  Status MakeChild(std::string_view name, mode_t mode = 0755) const;
  // unlinkat(AT_REMOVEDIR).
  Status RemoveChild(std::string_view name) const;
  // Names of the subdirectories (the child cgroups).
  Result<std::vector<std::string>> ListDirs() const;

 private:
  CgroupDir(UniqueFd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}

  UniqueFd fd_;
  std::filesystem::path path_;
};

// Reads one cgroup directory for the metrics readers. A file the kernel does
// not provide (ENOENT, EOPNOTSUPP: kernels and configurations differ) reads
// as nullopt; any other failure is kept, and the first one is status().
class StatFiles {
 public:
  explicit StatFiles(const CgroupDir& dir) : dir_(dir) {}

  std::optional<std::string> Text(std::string_view name);
  // A single-value file; "max" reads as `max_value`.
  std::optional<uint64_t> Uint(std::string_view name,
                               uint64_t max_value = std::numeric_limits<uint64_t>::max());
  std::optional<FlatKeyed> Keyed(std::string_view name);
  std::optional<std::vector<NestedLine>> Nested(std::string_view name);

  const CgroupDir& dir() const { return dir_; }
  // Records a failure found by the caller (e.g. a malformed line).
  void Fail(Status status);
  Status status() const { return status_; }

 private:
  const CgroupDir& dir_;
  Status status_;
};

// A single path component: not empty, no '/', not "." or "..".
Status ValidateComponent(std::string_view name);

// Reads a whole file by path (for /proc, where nothing is container-made).
Result<std::string> ReadFileAt(const std::filesystem::path& path);

}  // namespace hull::cgroups::internal
