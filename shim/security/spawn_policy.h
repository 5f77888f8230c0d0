// SpawnPolicy: what a confined server's spawner agrees to start
// (docs/security.md, "The spawner as a boundary"). Built from the server's
// settings before the spawner is forked, and checked in the spawner on every
// Spawn request, so a server that was taken over can ask only for the
// command lines its own configuration makes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/spawn.h"
#include "base/status.h"
#include "runtime/oci_cli/argv.h"
#include "shim/config/config.h"

namespace hull::shim {

struct SpawnPolicy {
  // The pod's OCI runtime: every call starts with its binary and global
  // flags (a container's --log is its own bundle's log.json) and one of the
  // commands the backend uses. Empty for the vm backend.
  std::optional<runtime::oci_cli::ArgvBuilder> runtime;
  // Why `runtime` is empty for a runtime that is not vm (its binary was not
  // found): Create fails on the same error before anything is spawned.
  Status runtime_error;
  // Where the pod's bundles are (BundleDirs of the server's own bundle).
  std::vector<std::string> bundles;
  // [security] logging_binaries: the only binary:// loggers it starts.
  std::vector<std::string> logging_binaries;
};

// The policy of a server started with `config` in namespace `ns`, whose
// pod's bundles are in `bundles`.
SpawnPolicy MakeSpawnPolicy(const ShimConfig& config, const std::string& ns,
                            const std::vector<std::string>& bundles);

// OK when `options` is a call the policy allows; PermissionDenied naming
// what is refused otherwise.
Status CheckSpawn(const SpawnPolicy& policy, const SpawnOptions& options);

}  // namespace hull::shim
