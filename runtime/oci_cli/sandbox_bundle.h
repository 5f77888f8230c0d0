// The bundle of the sandbox container hull creates for a runtime whose pod
// runs in a sandbox process of its own (runsc), when the pod comes through
// the Sandbox API with no pause image: <pod bundle>/hull-sandbox with a root
// filesystem holding only hull-pause and the pod's spec fitted to it.
// docs/sandbox-api.md, "The gVisor sandbox". Blocking file system calls; any
// thread.
#pragma once

#include <string>

#include "base/status.h"
#include "oci/spec.h"

namespace hull::runtime::oci_cli {

inline constexpr const char* kSandboxBundleDir = "hull-sandbox";
inline constexpr const char* kPauseBinaryName = "hull-pause";

// hull-pause beside the running binary (the shim: both sit in one bin/);
// NotFound naming the path when it is not there.
Result<std::string> PauseBinaryBesideSelf();

// The sandbox container's spec: the pod's, running /pause from a read-only
// root, without bind mounts (their sources are CRI's sandbox files, which
// nobody writes in shim mode) and without oomScoreAdj (runsc sets the
// sandbox's from its containers').
oci::Spec SandboxContainerSpec(oci::Spec pod_spec);

// Writes <pod_bundle>/hull-sandbox: rootfs/pause (a copy of `pause_binary`,
// 0755) and config.json. Its path; on failure nothing of it is left.
Result<std::string> WriteSandboxBundle(const std::string& pod_bundle, const oci::Spec& pod_spec,
                                       const std::string& pause_binary);

// Removes a sandbox bundle WriteSandboxBundle wrote (best effort).
void RemoveSandboxBundle(const std::string& dir);

}  // namespace hull::runtime::oci_cli
