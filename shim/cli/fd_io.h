// Descriptor helpers for the short-lived actions: all of stdin, all of an
// answer to stdout, one write to a /proc or cgroup control file. Blocking.
// (Whole files go through base/file_util.h.)
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::shim {

// Everything readable from `fd` until EOF, at most `max_size` bytes. `name`
// says what `fd` is in error messages.
Result<std::string> ReadAll(int fd, std::string_view name, size_t max_size = 16 << 20);

// Writes all of `data` to `fd`, retrying short writes and EINTR.
Status WriteAll(int fd, std::string_view data, std::string_view name);

// Writes `data` to an existing file (a /proc or cgroup control file): no
// create, no truncate, one open and write.
Status WriteExistingFile(const std::string& path, std::string_view data);

}  // namespace hull::shim
