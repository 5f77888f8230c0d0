#include "shim/backend/vm/vm_resize.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace hull::shim::vm {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// An integer member of `object`, or 0 when absent or not an integer.
int64_t Int(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
  }
  return 0;
}

std::string Mib(uint64_t bytes) {
  return std::to_string((bytes + kMiB - 1) / kMiB) + " MiB";
}

// " (256 MiB of them headroom)", or "" without headroom.
std::string Headroom(const VmCapacity& vm) {
  if (vm.headroom_mib == 0) return "";
  return " (" + std::to_string(vm.headroom_mib) + " MiB of them [vm] memory_headroom_mib)";
}

}  // namespace

uint64_t ContainersCapMib(const VmCapacity& vm) {
  const uint64_t pod =
      vm.container_memory_mib > 0
          ? vm.container_memory_mib
          : (vm.memory_mib > vm.headroom_mib ? vm.memory_mib - vm.headroom_mib : 0);
  return pod + vm.headroom_mib;
}

std::optional<int64_t> MemoryLimitIn(const nlohmann::json& resources) {
  if (!resources.is_object() || !resources.contains("memory")) return std::nullopt;
  const int64_t limit = Int(resources["memory"], "limit");
  if (limit <= 0) return std::nullopt;
  return limit;
}

std::optional<int64_t> MemoryLimitOf(std::string_view resources_json) {
  return MemoryLimitIn(nlohmann::json::parse(resources_json, nullptr, false));
}

Result<uint64_t> PodMemoryMax(const std::string& id, const std::map<std::string, int64_t>& limits,
                              const VmCapacity& vm) {
  const uint64_t cap = ContainersCapMib(vm) * kMiB;
  const uint64_t floor = (ContainersCapMib(vm) - vm.headroom_mib) * kMiB;
  uint64_t sum = 0;
  for (const auto& [container, limit] : limits) {
    if (limit > 0) sum += std::min(static_cast<uint64_t>(limit), cap + 1);
  }
  if (sum > cap) {
    return FailedPreconditionError(
        "update " + id + ": the pod's containers' memory limits would add up to " + Mib(sum) +
        ", more than the " + Mib(cap) + " the pod's VM (booted with " +
        std::to_string(vm.memory_mib) + " MiB of RAM) has for them" + Headroom(vm) +
        " (docs/vm.md, \"Resize\")");
  }
  return std::max(sum, floor);
}

Status CheckResizeFits(const std::string& id, std::string_view resources_json,
                       const VmCapacity& vm) {
  const nlohmann::json r = nlohmann::json::parse(resources_json, nullptr, false);
  if (!r.is_object()) {
    return InvalidArgumentError("update " + id +
                                ": resources are not a LinuxResources JSON object");
  }
  const std::string why =
      " (the VM's size is fixed at boot: hull hot-plugs no memory or CPUs; docs/vm.md, "
      "\"Resize\")";
  const uint64_t for_containers = ContainersCapMib(vm);
  const int64_t memory = Int(r.contains("memory") ? r["memory"] : nlohmann::json(), "limit");
  if (memory > 0 && vm.memory_mib > 0 && static_cast<uint64_t>(memory) > for_containers * kMiB) {
    return FailedPreconditionError(
        "update " + id + ": a memory limit of " + Mib(static_cast<uint64_t>(memory)) +
        " does not fit the pod's VM, booted with " + std::to_string(vm.memory_mib) +
        " MiB of RAM of which " + std::to_string(for_containers) +
        " MiB are for the pod's containers" + Headroom(vm) + why);
  }
  const nlohmann::json cpu = r.contains("cpu") ? r["cpu"] : nlohmann::json();
  const int64_t quota = Int(cpu, "quota");
  const int64_t period = Int(cpu, "period") > 0 ? Int(cpu, "period") : 100000;
  if (quota > 0 && vm.vcpus > 0 &&
      static_cast<uint64_t>(quota) > static_cast<uint64_t>(period) * vm.vcpus) {
    const uint64_t millis = static_cast<uint64_t>(quota) * 1000 / static_cast<uint64_t>(period);
    return FailedPreconditionError("update " + id + ": a CPU limit of " + std::to_string(millis) +
                                   "m does not fit the pod's VM of " + std::to_string(vm.vcpus) +
                                   " vCPU" + (vm.vcpus == 1 ? "" : "s") + why);
  }
  return Status::Ok();
}

}  // namespace hull::shim::vm
