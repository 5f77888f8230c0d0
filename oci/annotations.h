// Names of the OCI annotations hull reads and writes: the keys containerd's
// CRI plugin writes into every pod's specs (internal/cri/annotations in
// containerd 2.x, pkg/cri/annotations in 1.x), CRI-O's equivalents, and the
// runc shim's grouping key. Constants only; oci::Spec reads the values,
// oci/sizing.h and oci/pause_spec.h give them meaning.
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
// Pod metadata, on every container (sandbox-uid from containerd 1.7, and in
// 1.6.20 too, where it was backported).
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

// A CNI capability (not an OCI annotation): the pod's annotations handed to
// CNI plugins. Listed so nobody mistakes it for a spec key.
inline constexpr std::string_view kPodAnnotationsCniCapability =
    "io.kubernetes.cri.pod-annotations";

// Marks an untrusted workload (legacy CRI).
inline constexpr std::string_view kUntrustedWorkload = "io.kubernetes.cri.untrusted-workload";
// Runtime handler hint, read (never written) by containerd; deprecated, to be
// removed in containerd 2.5.
inline constexpr std::string_view kRuntimeHandler = "io.containerd.cri.runtime-handler";

// CRI-O's keys (internal/annotations and pkg/annotations/v2 in cri-o). CRI-O
// is moving its own keys to "<feature>.crio.io"; both spellings are accepted
// for now and the new one wins.
namespace crio {

// "sandbox" or "container", like kContainerType.
inline constexpr std::string_view kContainerType = "io.kubernetes.cri-o.ContainerType";
inline constexpr std::string_view kContainerTypeSandbox = "sandbox";
inline constexpr std::string_view kContainerTypeContainer = "container";
inline constexpr std::string_view kContainerId = "io.kubernetes.cri-o.ContainerID";
inline constexpr std::string_view kContainerName = "io.kubernetes.cri-o.ContainerName";
inline constexpr std::string_view kSandboxId = "io.kubernetes.cri-o.SandboxID";
inline constexpr std::string_view kSandboxName = "io.kubernetes.cri-o.SandboxName";
// Pod name and namespace (Kubernetes metadata).
inline constexpr std::string_view kKubeName = "io.kubernetes.cri-o.KubeName";
inline constexpr std::string_view kNamespace = "io.kubernetes.cri-o.Namespace";
inline constexpr std::string_view kName = "io.kubernetes.cri-o.Name";
inline constexpr std::string_view kMetadata = "io.kubernetes.cri-o.Metadata";
inline constexpr std::string_view kLabels = "io.kubernetes.cri-o.Labels";
inline constexpr std::string_view kAnnotations = "io.kubernetes.cri-o.Annotations";
inline constexpr std::string_view kCreated = "io.kubernetes.cri-o.Created";
inline constexpr std::string_view kHostName = "io.kubernetes.cri-o.HostName";
inline constexpr std::string_view kHostNetwork = "io.kubernetes.cri-o.HostNetwork";
inline constexpr std::string_view kCgroupParent = "io.kubernetes.cri-o.CgroupParent";
inline constexpr std::string_view kNamespaceOptions = "io.kubernetes.cri-o.NamespaceOptions";
inline constexpr std::string_view kRuntimeHandler = "io.kubernetes.cri-o.RuntimeHandler";
inline constexpr std::string_view kImage = "io.kubernetes.cri-o.Image";
inline constexpr std::string_view kImageName = "io.kubernetes.cri-o.ImageName";
inline constexpr std::string_view kImageRef = "io.kubernetes.cri-o.ImageRef";
inline constexpr std::string_view kLogPath = "io.kubernetes.cri-o.LogPath";
inline constexpr std::string_view kShmPath = "io.kubernetes.cri-o.ShmPath";
inline constexpr std::string_view kHostnamePath = "io.kubernetes.cri-o.HostnamePath";
inline constexpr std::string_view kResolvPath = "io.kubernetes.cri-o.ResolvPath";
inline constexpr std::string_view kMountPoint = "io.kubernetes.cri-o.MountPoint";
inline constexpr std::string_view kPortMappings = "io.kubernetes.cri-o.PortMappings";
inline constexpr std::string_view kSeccompProfilePath = "io.kubernetes.cri-o.SeccompProfilePath";

// Pod sizing (cri-o PR #6913), on the pause container: the JSON of the CRI
// LinuxContainerResources message (snake_case keys such as "cpu_quota", zero
// fields omitted) or "null". PodLinuxResources is the containers' sum without
// overhead; PodLinuxOverhead is the RuntimeClass overhead, which containerd
// never passes on. The *.crio.io spelling wins over the old one.
inline constexpr std::string_view kPodLinuxResources = "io.kubernetes.cri-o.PodLinuxResources";
inline constexpr std::string_view kPodLinuxOverhead = "io.kubernetes.cri-o.PodLinuxOverhead";
inline constexpr std::string_view kPodLinuxResourcesV2 = "pod-linux-resources.crio.io";
inline constexpr std::string_view kPodLinuxOverheadV2 = "pod-linux-overhead.crio.io";

}  // namespace crio

}  // namespace hull::oci
