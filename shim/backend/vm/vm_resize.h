// In-place resize of a VM pod's container (CRI UpdateContainerResources,
// the Task API's Update): the VM is sized once at boot and hull hot-plugs
// neither CPUs nor memory, so a new limit is applied inside the guest (the
// agent updates the container's cgroup there) only when the VM can honour
// it: memory within what the VM was booted for the pod's containers, CPU
// within its vCPUs. Anything beyond is refused before anything changes,
// naming both sizes (docs/vm.md, "Resize"). Pure. Any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::shim::vm {

// What the pod's VM booted with.
struct VmCapacity {
  uint32_t vcpus = 0;
  uint64_t memory_mib = 0;            // the VM's RAM, headroom included
  uint64_t container_memory_mib = 0;  // of it, for the pod's containers; 0: memory_mib
  // [vm] memory_headroom_mib: RAM beyond the pod's size, which a resize can
  // give the pod's containers on top of container_memory_mib.
  uint64_t headroom_mib = 0;
};

// The most the pod's containers can hold in the VM, in MiB:
// container_memory_mib (or the VM's RAM) plus the headroom.
uint64_t ContainersCapMib(const VmCapacity& vm);

// Ok when the LinuxResources JSON `resources_json` for container `id` fits
// `vm`; FailedPrecondition naming the request and the VM's size otherwise;
// InvalidArgument when it is not a JSON object.
Status CheckResizeFits(const std::string& id, std::string_view resources_json,
                       const VmCapacity& vm);

// The memory limit, in bytes, of LinuxResources: its memory.limit when
// positive, nullopt when it sets none (or is not a JSON object).
// MemoryLimitIn takes it parsed, MemoryLimitOf as JSON text.
std::optional<int64_t> MemoryLimitIn(const nlohmann::json& resources);
std::optional<int64_t> MemoryLimitOf(std::string_view resources_json);

// With headroom, the guest holds the pod's containers together to what
// their limits add up to (the cgroup above theirs, /sys/fs/cgroup/hull),
// never less than the pod's size (container_memory_mib) nor more than
// ContainersCapMib. `limits`: each container's memory limit in bytes, 0 for
// none (counted as nothing: the pod's size bounds it); the pause container
// left out. The bytes to set, or FailedPrecondition naming both sizes when
// the limits add up to more than the VM can give (`id`: the container whose
// update it is).
Result<uint64_t> PodMemoryMax(const std::string& id, const std::map<std::string, int64_t>& limits,
                              const VmCapacity& vm);

}  // namespace hull::shim::vm
