// The confined server's view of the host (docs/security.md, "The server's
// view of the host"): a mount namespace of its own, a slave of the host's,
// where every mount is read-only but the trees the server writes. Called
// once, single-threaded, after the spawner is forked (the spawner, and all
// it starts, stay in the host's namespace) and before the capabilities drop.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace hull::shim {

struct HostView {
  // Trees the server writes: bound onto themselves, so that their mounts
  // (and the mounts below them) keep their own flags. Each must exist.
  std::vector<std::string> writable;
  // Paths inside a writable tree that are read-only all the same (/proc/sys
  // in /proc). A path that does not exist is skipped.
  std::vector<std::string> read_only;
};

// Enters a mount namespace of the calling process's own where every mount
// outside `view.writable` is read-only, then re-enters the working
// directory through it. Mounts the host makes later reach it (it is a
// slave), read-only unless below a writable tree. Fails with the step that
// failed; a failed step leaves the namespace half made, so the caller must
// not go on serving.
Status SeeHostReadOnly(const HostView& view);

// The mount points in a /proc/<pid>/mountinfo text, unescaped (\040 is a
// space), in the order listed.
std::vector<std::string> MountPoints(const std::string& mountinfo);

}  // namespace hull::shim
