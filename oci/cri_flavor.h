// Which containerd CRI plugin hull imitates when it builds what CRI would have
// built (the pause spec, the sandbox files). The two differ in a handful of
// details, listed in docs/pause-spec.md; everything else is the same.
#pragma once

namespace hull::oci {

enum class CriFlavor {
  // containerd 1.6.x (pkg/cri/server), checked against 1.6.20.
  kContainerd16,
  // containerd 2.x (internal/cri/server/podsandbox): what containerd expects a
  // shim to build in `sandboxer = "shim"` mode.
  kContainerd2,
};

}  // namespace hull::oci
