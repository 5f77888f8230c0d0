// The files PrivateContainerd writes before starting containerd: config.toml
// and the CNI network list. Pure functions of their inputs.
#pragma once

#include <string>

#include "tests/integration/harness/containerd.h"

namespace hull::itest::internal {

struct ConfigInputs {
  std::string dir;          // the instance's private directory
  std::string snapshotter;  // "overlayfs" or "native"
  std::string cni_network;  // network and bridge name (at most 15 bytes)
  std::string cni_bin_dir;
};

// The pod subnet. Pod traffic stays on this loopback range: the host and the
// pods route all of 127.0.0.0/8 to their own lo, so nothing leaves the host.
inline constexpr const char* kPodSubnet = "127.201.0.0/24";
// host-local gives pods addresses up to here; the rest of the subnet is for
// tests' own namespaces on the bridge (cri_vm_pod_test's client).
inline constexpr const char* kPodRangeEnd = "127.201.0.199";

std::string ContainerdConfigToml(const ContainerdOptions& options, const ConfigInputs& in);

// A bridge + host-local + loopback network list, IPAM state under
// dir/cni/ipam. (containerd 1.6's CRI also brings lo up on its own; the
// chained loopback passes the bridge's result through unchanged.)
std::string CniConflist(const ConfigInputs& in);

}  // namespace hull::itest::internal
