// hull's own files in its pod's bundles, written by the spawner for a
// confined server (docs/security.md, "Not done": the step before the
// bundles become read-only to the server). The entry takes only hull's file
// names (IsHullBundleFile), directly in one of the pod's bundles, never a
// bundle's config.json, address or hull-config.toml; it writes through the
// bundle's directory opened without following a symlink, so a server that
// swaps a bundle for a symlink writes nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/spawner.h"
#include "base/status.h"

namespace hull::shim {

inline constexpr uint32_t kBundleFileSpawnerEntry = 7;

// A name the entry writes or removes: hull-vm.json, hull-pod-size.json,
// hull-pod-cgroup.json, <name>.pid or <name>.process.json (`<name>` not
// starting with a dot, no slash).
bool IsHullBundleFile(std::string_view name);

// The "bundle-file" entry of a server whose pod's bundles are in `bundles`
// (BundleDirs), and `sandbox_bundle` (a Sandbox API pod's own hull-sandbox
// bundle; empty: none); `lock_root` is the runtime root whose orphaned
// sandbox locks it removes (RuntimeLockRoot; empty: none).
SpawnerEntry BundleFileSpawnerEntry(std::vector<std::string> bundles, std::string sandbox_bundle,
                                    std::string lock_root = "");

// Writes `content` to `path` (mode 0644; 0600 for a process file),
// atomically, or removes it (absent is fine): in this process, or by
// `spawner` when the server has one.
Status WriteBundleFileVia(SpawnerClient* spawner, const std::string& path,
                          std::string_view content);
Status RemoveBundleFileVia(SpawnerClient* spawner, const std::string& path);

// FitBundleToSandboxKernel of `config_json` (a bundle's config.json), by
// `spawner`: runsc's checks, and a joining container's pid namespace path
// removed.
Status FitBundleToSandboxKernelVia(SpawnerClient* spawner, const std::string& config_json,
                                   bool joins_sandbox);

// RemoveOrphanRunscLocks of `sandbox` (an id, no path) in the entry's
// lock root, by `spawner`.
Status RemoveRunscLocksVia(SpawnerClient* spawner, const std::string& sandbox);

// FitBundleSpecVersion of `config_json` (a bundle's config.json), by
// `spawner`: the one change it makes to a bundle's spec is its ociVersion,
// lowered to the runtime's when nothing newer is used.
Status FitBundleSpecVia(SpawnerClient* spawner, const std::string& config_json,
                        std::string_view runtime_max, std::string_view runtime);

}  // namespace hull::shim
