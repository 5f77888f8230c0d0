// The listening socket `start` creates for the server, or finds already
// served by a live shim of the same pod. Blocking; `start` only.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::shim {

struct ShimListener {
  UniqueFd fd;            // listening, O_CLOEXEC; empty when `existing`
  bool existing = false;  // a live server already listens on the path
};

// Creates the socket directory (parents 0711, the directory itself 0700),
// listens on `path` and makes the socket 0600. If the path is in use, dials
// it (100 ms): a server that answers means `existing`; otherwise the stale
// file is removed and listening is tried once more.
Result<ShimListener> ListenShimSocket(const std::string& path);

// Whether something accepts connections on the unix socket at `path`
// (a full backlog counts as alive). Waits at most `timeout_ms`.
bool CanConnect(const std::string& path, int timeout_ms = 100);

}  // namespace hull::shim
