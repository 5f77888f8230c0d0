// Pod sizing: turns what CRI tells the runtime about a pod's resources into
// the size a VM backend boots at (whole vCPUs, MiB of RAM), once, before the
// pod starts, so no CPU or memory hotplug is ever needed. Three inputs:
//   (a) containerd's four sizing annotations on the pause spec,
//   (b) CRI-O's PodLinuxResources / PodLinuxOverhead JSON annotations,
//   (c) PodSandboxConfig.linux.resources and .overhead (Sandbox-API mode).
// The formula, the defaults and every edge case are in docs/sizing.md.
// Pure functions: bad input never fails, it is counted as "not set" and
// explained in PodSize::warnings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace runtime::v1 {
class PodSandboxConfig;
class LinuxContainerResources;
}  // namespace runtime::v1

namespace hull::oci {

// How hull sizes a pod VM; from hull's config. Defaults are argued in
// docs/sizing.md.
struct SizingPolicy {
  // What the guest itself costs (kernel, hull-agent), added to the workload's
  // CPU limit before rounding up to whole vCPUs.
  double overhead_vcpus = 0.25;
  // Same for memory, added to the workload's memory limit: a fixed part
  // and a share of the limit (the guest kernel's own cost grows with its
  // RAM), rounded up to whole MiB. Both measured (docs/sizing.md).
  uint64_t overhead_memory_mib = 112;
  double overhead_memory_percent = 3.0;
  // The size of a dimension the pod sets no limit for.
  uint32_t default_vcpus = 1;
  uint64_t default_memory_mib = 2048;
  // Floor for the VM's memory whatever the inputs (never 0 MiB).
  uint64_t min_memory_mib = 128;
  // Cap on vCPUs; 0 means no cap.
  uint32_t max_vcpus = 0;
  // Round the VM's memory up to an even MiB (2 MiB huge page alignment).
  bool round_memory_to_even = true;
};

// The four values as CRI carries them (LinuxContainerResources): cpu_period
// and cpu_quota in microseconds, cpu_shares as cgroup v1 shares, memory in
// bytes. 0 means "not set"; cpu_quota -1 means "unlimited".
struct CpuMemory {
  int64_t cpu_period = 0;
  int64_t cpu_quota = 0;
  int64_t cpu_shares = 0;
  int64_t memory_limit_bytes = 0;
  friend bool operator==(const CpuMemory&, const CpuMemory&) = default;
};

enum class SizeSource {
  kNone,                   // no sizing information: defaults
  kContainerdAnnotations,  // (a)
  kCrioAnnotations,        // (b)
  kPodSandboxConfig,       // (c)
};
const char* SizeSourceName(SizeSource source);

struct PodSize {
  SizeSource source = SizeSource::kNone;

  // The workload's resources (the containers' sum, no overhead) after
  // validation: a value that could not be parsed or makes no sense is 0 here.
  CpuMemory workload;
  // The RuntimeClass overhead, when the source carries one ((b) and (c) only;
  // containerd drops it).
  CpuMemory overhead;
  bool has_overhead = false;

  // Which limits the workload sets.
  bool cpu_limit_set = false;      // cpu_quota > 0 (with a period)
  bool cpu_unconstrained = false;  // cpu_quota < 0: static CPU manager pods
  bool cpu_shares_set = false;     // cpu_shares > 0
  bool memory_limit_set = false;   // memory_limit_bytes > 0

  // What the pod's cgroup gets from kubelet: workload + overhead, in
  // millicores and bytes; 0 when the workload has no such limit.
  uint64_t pod_cpu_millis = 0;
  uint64_t pod_memory_bytes = 0;

  // The VM size.
  uint32_t vcpus = 0;
  uint64_t memory_mib = 0;
  // Of memory_mib, what the pod's containers can use: the largest workload
  // whose guest overhead still fits (ContainerMemoryMib). An in-place resize
  // beyond it is refused (docs/vm.md, "Resize"); 0 when unknown (a size
  // stored by an older hull).
  uint64_t container_memory_mib = 0;
  // True when the policy default was used for that dimension.
  bool vcpus_defaulted = false;
  bool memory_defaulted = false;

  // Why an input was ignored or adjusted, one sentence each.
  std::vector<std::string> warnings;

  // One line for logs: "2 vCPUs, 320 MiB (containerd annotations: quota ...)".
  std::string ToString() const;
};

// The core formula: size a pod from its workload resources (and the overhead
// the source carried, if any). Negative or nonsensical values are dropped with
// a warning before sizing.
PodSize ComputePodSize(SizeSource source, const CpuMemory& workload, const CpuMemory* overhead,
                       const SizingPolicy& policy);

// (a) or (b), from a spec's annotations: containerd's keys if any of the four
// is present, else CRI-O's (the *.crio.io spelling first), else defaults.
PodSize SizeFromAnnotations(const std::map<std::string, std::string>& annotations,
                            const SizingPolicy& policy);

// The guest's memory overhead for a workload of `workload_mib`:
// overhead_memory_mib + ceil(workload_mib * overhead_memory_percent / 100),
// saturating.
uint64_t GuestMemoryOverheadMib(uint64_t workload_mib, const SizingPolicy& policy);

// The largest workload (MiB) that, with its guest overhead, fits a VM of
// `memory_mib`: what a VM pod's containers can grow to without hotplug.
uint64_t ContainerMemoryMib(uint64_t memory_mib, const SizingPolicy& policy);

// (c): linux.resources and linux.overhead; defaults when resources is absent.
PodSize SizeFromPodSandboxConfig(const ::runtime::v1::PodSandboxConfig& config,
                                 const SizingPolicy& policy);

// The four values of a CRI message.
CpuMemory CpuMemoryFromProto(const ::runtime::v1::LinuxContainerResources& resources);

}  // namespace hull::oci
