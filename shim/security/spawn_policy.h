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
#include "shim/backend/vm/vm_spawner.h"
#include "shim/config/config.h"

namespace hull::shim {

struct SpawnPolicy {
  // The pod's OCI runtime: every call starts with its binary and global
  // flags (a container's --log is its own bundle's log.json) and one of the
  // commands the backend uses. Empty for the vm backend.
  std::optional<runtime::oci_cli::ArgvBuilder> runtime;
  // How many arguments `runtime`'s binary and global flags take when a call
  // has a --log: --log is looked for among those only.
  size_t runtime_global_end = 0;
  // The vm backend's QEMU: its binary, guest assets and jail. Empty for
  // another runtime.
  std::optional<vm::QemuRule> qemu;
  // Why `runtime` (or `qemu`, for vm) is empty: its binary or assets were
  // not found. Create fails on the same error before anything is spawned.
  Status runtime_error;
  // Where the pod's bundles are (BundleDirs of the server's own bundle).
  std::vector<std::string> bundles;
  // A Sandbox API pod's own runtime bundle (the server's bundle's
  // hull-sandbox, runtime/oci_cli/sandbox_bundle.h), where a runsc sandbox
  // is created: a bundle of the pod too. Empty: none.
  std::string sandbox_bundle;
  // [security] logging_binaries: the only binary:// loggers it starts.
  std::vector<std::string> logging_binaries;
  // The trees the server may write (its HostView's writable ones): a
  // checkpoint's image and work paths must not be in them, since criu, as
  // root, writes and restores from there.
  std::vector<std::string> server_writable;
};

// The policy of a server started with `config` in namespace `ns`, whose
// pod's bundles are in `bundles`; `self_exe` finds the guest assets of a vm
// pod as the backend does (GuestAssetDirs).
SpawnPolicy MakeSpawnPolicy(const ShimConfig& config, const std::string& ns,
                            const std::vector<std::string>& bundles, const std::string& self_exe);

// OK when `options` is a call the policy allows; PermissionDenied naming
// what is refused otherwise.
Status CheckSpawn(const SpawnPolicy& policy, const SpawnOptions& options);

}  // namespace hull::shim
