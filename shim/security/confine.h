// Confine: what `[security] confine = true` does to the server once its
// spawner is forked (docs/security.md). Drops every capability but the few
// the server still uses itself, sets NoNewPrivs and installs a seccomp
// filter. Irreversible; called once, single-threaded, before the loop.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace hull::shim {

// The capabilities the confined server keeps (names as in capabilities(7)).
std::vector<std::string> ConfinedCapabilityNames();

// Confines the calling process. Fails with the step that failed; a failed
// step leaves the steps before it in force.
Status ConfineServer();

}  // namespace hull::shim
