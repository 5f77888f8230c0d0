// Small whole-file helpers for the shim's state files (pid files, address,
// stored options). Errors name the file.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace hull {

// Everything left to read on `fd`; `name` names it in errors.
Result<std::string> ReadAll(int fd, std::string_view name);

// The whole file. NotFound if it does not exist.
Result<std::string> ReadFile(const std::string& path);

// Writes all of `data` to `fd`, retrying short writes and EINTR; `name`
// names the file in errors.
Status WriteAll(int fd, std::string_view data, std::string_view name);

// Writes `data` to `path` through a temporary file in the same directory and
// a rename, so a reader sees the old content or the new, never a part.
Status WriteFileAtomic(const std::string& path, std::string_view data, int mode = 0644);

// One write(2) of `data` to a file that must exist: a cgroup interface file
// or a sysctl, which take a value in a single write. A short write is an error.
Status WriteKernelFile(const std::string& path, std::string_view data);

// mkdir -p of an absolute `dir`: missing parents 0711 (traversable), the
// last directory `mode`; directories that exist are left as they are.
Status MakeDirs(const std::string& dir, mode_t mode);

}  // namespace hull
