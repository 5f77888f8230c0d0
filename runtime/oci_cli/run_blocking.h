// RunBlocking: runs a runtime CLI call to completion, blocking the caller.
// Only for one-shot actions that have no event loop (`-info`, the `delete`
// action); the server uses Command. Waits for its own child only
// (waitpid(pid)), so it never takes an exit meant for a Reaper.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/command.h"
#include "base/spawner.h"
#include "base/status.h"

namespace hull::runtime::oci_cli {

// Runs `argv` with stdin /dev/null, capturing stdout and stderr (up to 4 MiB
// each). A spawn failure is its Status (NotFound naming a missing binary);
// past `timeout` the child is killed and the call is DeadlineExceeded.
// With `spawner` (a confined server's, at its end, when its loop no longer
// runs: docs/security.md) the spawner starts it, and its exit is read from
// the spawner's exits channel; the other exits read there are dropped.
Result<CommandResult> RunBlocking(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout,
                                  SpawnerClient* spawner = nullptr);

}  // namespace hull::runtime::oci_cli
