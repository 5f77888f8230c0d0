// In-place resize of a VM pod's container (CRI UpdateContainerResources,
// the Task API's Update): the VM is sized once at boot and hull hot-plugs
// neither CPUs nor memory, so a new limit is applied inside the guest (the
// agent updates the container's cgroup there) only when the VM can honour
// it: memory within what the VM was booted for the pod's containers, CPU
// within its vCPUs. Anything beyond is refused before anything changes,
// naming both sizes (docs/vm.md, "Resize"). Pure. Any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::shim::vm {

// What the pod's VM booted with.
struct VmCapacity {
  uint32_t vcpus = 0;
  uint64_t memory_mib = 0;            // the VM's RAM
  uint64_t container_memory_mib = 0;  // of it, for the pod's containers; 0: memory_mib
};

// Ok when the LinuxResources JSON `resources_json` for container `id` fits
// `vm`; FailedPrecondition naming the request and the VM's size otherwise;
// InvalidArgument when it is not a JSON object.
Status CheckResizeFits(const std::string& id, std::string_view resources_json,
                       const VmCapacity& vm);

}  // namespace hull::shim::vm
