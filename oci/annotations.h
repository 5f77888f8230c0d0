// Names of the OCI annotations hull reads: the keys containerd's CRI plugin
// writes into every pod's specs (internal/cri/annotations in containerd 2.x,
// pkg/cri/annotations in 1.x) and the runc shim's grouping key. Constants
// only; oci::Spec reads the values.
#pragma once

#include <string_view>

namespace hull::oci {

// The runc shim's explicit grouping key: containers with the same value share
// one shim. Checked before kSandboxId.
inline constexpr std::string_view kRuncGroup = "io.containerd.runc.v2.group";

// "sandbox" on the pause container, "container" on every app container.
inline constexpr std::string_view kContainerType = "io.kubernetes.cri.container-type";
inline constexpr std::string_view kContainerTypeSandbox = "sandbox";
inline constexpr std::string_view kContainerTypeContainer = "container";

// The pod (sandbox) id, on the pause container and on every app container.
inline constexpr std::string_view kSandboxId = "io.kubernetes.cri.sandbox-id";
// Pod metadata, on every container (sandbox-uid from containerd 1.7).
inline constexpr std::string_view kSandboxName = "io.kubernetes.cri.sandbox-name";
inline constexpr std::string_view kSandboxNamespace = "io.kubernetes.cri.sandbox-namespace";
inline constexpr std::string_view kSandboxUid = "io.kubernetes.cri.sandbox-uid";
// PodSandboxConfig.log_directory; pause container only.
inline constexpr std::string_view kSandboxLogDirectory = "io.kubernetes.cri.sandbox-log-directory";
// The pause image reference; pause container only, containerd 2.0+.
inline constexpr std::string_view kSandboxImageName = "io.kubernetes.cri.podsandbox.image-name";
// App containers only.
inline constexpr std::string_view kContainerName = "io.kubernetes.cri.container-name";
inline constexpr std::string_view kImageName = "io.kubernetes.cri.image-name";

// Pod sizing (containerd 1.6+), pause container only: decimal int64 strings
// summed over the pod's containers by kubelet, without overhead. "0" or
// absent means not set.
inline constexpr std::string_view kSandboxCpuPeriod = "io.kubernetes.cri.sandbox-cpu-period";
inline constexpr std::string_view kSandboxCpuQuota = "io.kubernetes.cri.sandbox-cpu-quota";
inline constexpr std::string_view kSandboxCpuShares = "io.kubernetes.cri.sandbox-cpu-shares";
inline constexpr std::string_view kSandboxMemory = "io.kubernetes.cri.sandbox-memory";

// Marks an untrusted workload (legacy CRI).
inline constexpr std::string_view kUntrustedWorkload = "io.kubernetes.cri.untrusted-workload";
// Runtime handler hint, read (never written) by containerd; deprecated, to be
// removed in containerd 2.5.
inline constexpr std::string_view kRuntimeHandler = "io.containerd.cri.runtime-handler";

}  // namespace hull::oci
