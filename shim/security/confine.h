// Confine: what `[security] confine = true` does to the server once its
// spawner is forked (docs/security.md). Drops every capability but the few
// the server still uses itself, sets NoNewPrivs, names the process
// `hull-confined` and installs a seccomp allow-list. Irreversible; called
// once, single-threaded, before the loop.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace hull::shim {

// The capabilities the confined server keeps (names as in capabilities(7)).
std::vector<std::string> ConfinedCapabilityNames();

// Confines the calling process. Fails with the step that failed; a failed
// step leaves the steps before it in force. `log_unlisted` (measuring only,
// HULL_SECCOMP_LOG=1): syscalls outside the allow-list are let through and
// logged by the kernel instead of refused.
Status ConfineServer(bool log_unlisted = false);

}  // namespace hull::shim
