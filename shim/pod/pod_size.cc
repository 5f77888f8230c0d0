#include "shim/pod/pod_size.h"

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "oci/annotations.h"
#include "shim/mount/spawner_bundle_files.h"

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
  j["container_memory_mib"] = size.container_memory_mib;
  j["cpu_period"] = size.workload.cpu_period;
  j["cpu_quota"] = size.workload.cpu_quota;
  j["cpu_shares"] = size.workload.cpu_shares;
  j["memory_limit_bytes"] = size.workload.memory_limit_bytes;
  j["pod_cpu_millis"] = size.pod_cpu_millis;
  j["pod_memory_bytes"] = size.pod_memory_bytes;
  j["vcpus_defaulted"] = size.vcpus_defaulted;
  j["memory_defaulted"] = size.memory_defaulted;
  if (size.has_overhead) {
    j["overhead"] = {{"cpu_period", size.overhead.cpu_period},
                     {"cpu_quota", size.overhead.cpu_quota},
                     {"cpu_shares", size.overhead.cpu_shares},
                     {"memory_limit_bytes", size.overhead.memory_limit_bytes}};
  }
  j["warnings"] = size.warnings;
  // dump() replaces invalid UTF-8 (a warning may quote an annotation value).
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Status WritePodSizeFile(const std::string& bundle, const oci::PodSize& size,
                        SpawnerClient* spawner) {
  return WriteBundleFileVia(spawner, bundle + "/" + std::string(kPodSizeFile), PodSizeJson(size));
}

Result<oci::PodSize> ReadPodSizeFile(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&path](std::string_view what) {
    return InvalidArgumentError(path + ": " + std::string(what));
  };
  if (!j.is_object()) return bad("not a JSON object");
  auto integer = [&j](const nlohmann::json& object, const char* key, auto& out) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return false;
    out = it->get<std::remove_reference_t<decltype(out)>>();
    return true;
  };
  oci::PodSize size;
  auto source = j.find("source");
  if (source == j.end() || !source->is_string()) return bad("no source");
  bool known = false;
  for (oci::SizeSource s :
       {oci::SizeSource::kNone, oci::SizeSource::kContainerdAnnotations,
        oci::SizeSource::kCrioAnnotations, oci::SizeSource::kPodSandboxConfig}) {
    if (*source == oci::SizeSourceName(s)) {
      size.source = s;
      known = true;
    }
  }
  if (!known) return bad("unknown source");
  oci::CpuMemory& w = size.workload;
  if (!integer(j, "vcpus", size.vcpus) || !integer(j, "memory_mib", size.memory_mib) ||
      !integer(j, "cpu_period", w.cpu_period) || !integer(j, "cpu_quota", w.cpu_quota) ||
      !integer(j, "cpu_shares", w.cpu_shares) ||
      !integer(j, "memory_limit_bytes", w.memory_limit_bytes) ||
      !integer(j, "pod_cpu_millis", size.pod_cpu_millis) ||
      !integer(j, "pod_memory_bytes", size.pod_memory_bytes)) {
    return bad("a size field is missing or not an integer");
  }
  size.cpu_limit_set = w.cpu_quota > 0 && w.cpu_period > 0;
  size.cpu_unconstrained = w.cpu_quota < 0;
  size.cpu_shares_set = w.cpu_shares > 0;
  size.memory_limit_set = w.memory_limit_bytes > 0;
  // Absent from a size an older hull stored: unknown (0).
  if (auto c = j.find("container_memory_mib"); c != j.end() && c->is_number_unsigned()) {
    size.container_memory_mib = c->get<uint64_t>();
  }
  size.vcpus_defaulted = j.value("vcpus_defaulted", false);
  size.memory_defaulted = j.value("memory_defaulted", false);
  if (auto o = j.find("overhead"); o != j.end() && o->is_object()) {
    size.has_overhead = integer(*o, "cpu_period", size.overhead.cpu_period) &&
                        integer(*o, "cpu_quota", size.overhead.cpu_quota) &&
                        integer(*o, "cpu_shares", size.overhead.cpu_shares) &&
                        integer(*o, "memory_limit_bytes", size.overhead.memory_limit_bytes);
    if (!size.has_overhead) return bad("overhead is malformed");
  }
  if (auto warnings = j.find("warnings"); warnings != j.end() && warnings->is_array()) {
    for (const auto& warning : *warnings) {
      if (warning.is_string()) size.warnings.push_back(warning.get<std::string>());
    }
  }
  return size;
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
