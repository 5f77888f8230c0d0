// Files a confined server writes but cannot open: it sees the host
// read-only (docs/security.md, "The server's view of the host"), so its
// spawner opens a file:// log, or an output file a client made, and hands the
// descriptor back. The spawner checks the path, since a server that was
// taken over chooses it.
#pragma once

#include <cstdint>
#include <string>

#include "base/spawner.h"
#include "base/unique_fd.h"

namespace hull::shim::stdio {

// The spawner's "log-file" entry (index kLogFileSpawnerEntry): its payload
// is 'c' (file://: create) or 'a' (an output file that exists) and the
// path; it answers with the open descriptor.
inline constexpr uint32_t kLogFileSpawnerEntry = 6;
SpawnerEntry LogFileSpawnerEntry();

// What the entry opens, O_WRONLY|O_APPEND|O_NONBLOCK, checked: an absolute
// path with no ".", ".." or hidden (".name") component, whose directory,
// once symlinks are resolved, is in no system tree (/etc, /usr, /proc, ...),
// and whose last component is no symlink; the file a regular file with one
// link, neither executable nor set-id. `create`: missing directories are
// made (0755) and the file (0644). PermissionDenied when refused.
Result<UniqueFd> OpenFileForServer(const std::string& path, bool create);

}  // namespace hull::shim::stdio
