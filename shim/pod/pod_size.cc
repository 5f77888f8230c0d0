#include "shim/pod/pod_size.h"

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "oci/annotations.h"

namespace hull::shim {

bool IsSandboxContainer(const std::map<std::string, std::string>& annotations) {
  auto it = annotations.find(std::string(oci::kContainerType));
  return it != annotations.end() && it->second == oci::kContainerTypeSandbox;
}

std::string PodSizeJson(const oci::PodSize& size) {
  nlohmann::ordered_json j;
  j["source"] = oci::SizeSourceName(size.source);
  j["vcpus"] = size.vcpus;
  j["memory_mib"] = size.memory_mib;
  j["cpu_period"] = size.workload.cpu_period;
  j["cpu_quota"] = size.workload.cpu_quota;
  j["cpu_shares"] = size.workload.cpu_shares;
  j["memory_limit_bytes"] = size.workload.memory_limit_bytes;
  j["pod_cpu_millis"] = size.pod_cpu_millis;
  j["pod_memory_bytes"] = size.pod_memory_bytes;
  j["warnings"] = size.warnings;
  // dump() replaces invalid UTF-8 (a warning may quote an annotation value).
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Status WritePodSizeFile(const std::string& bundle, const oci::PodSize& size) {
  return WriteFileAtomic(bundle + "/" + std::string(kPodSizeFile), PodSizeJson(size), 0644);
}

Result<std::optional<oci::PodSize>> RecordPodSize(
    const std::string& bundle, const std::map<std::string, std::string>& annotations,
    const oci::SizingPolicy& policy, const Logger& log, std::string_view who) {
  if (!IsSandboxContainer(annotations)) return std::optional<oci::PodSize>();
  oci::PodSize size = oci::SizeFromAnnotations(annotations, policy);
  log.Info("{}: pod size {}", who, size.ToString());
  for (const std::string& warning : size.warnings) log.Warn("{}: pod size: {}", who, warning);
  HULL_RETURN_IF_ERROR_CTX(WritePodSizeFile(bundle, size), "record the pod size");
  return std::optional<oci::PodSize>(std::move(size));
}

}  // namespace hull::shim
