#include "runtime/oci_cli/sandbox_kernel_spec.h"

#include "base/file_util.h"
#include "oci/spec.h"
#include "runtime/oci_cli/spec_version.h"

namespace hull::runtime::oci_cli {

using json = nlohmann::json;

Result<bool> FitSpecToSandboxKernel(json& spec, bool joins_sandbox) {
  if (!spec.is_object()) return InvalidArgumentError("the spec is not a JSON object");
  auto linux_ = spec.find("linux");
  if (linux_ == spec.end() || !linux_->is_object()) return false;
  if (auto sysctl = linux_->find("sysctl"); sysctl != linux_->end() && sysctl->is_object()) {
    for (const auto& [key, value] : sysctl->items()) {
      if (key.starts_with("net.")) continue;
      return InvalidArgumentError(
          "sysctl " + key +
          " cannot be set in a gVisor sandbox: its kernel takes no "
          "sysctls from the spec, and only net.* ones reach the pod's network");
    }
  }
  for (const char* key : {"maskedPaths", "readonlyPaths"}) {
    auto paths = linux_->find(key);
    if (paths == linux_->end() || !paths->is_array()) continue;
    for (const auto& path : *paths) {
      const std::string p = path.is_string() ? path.get<std::string>() : path.dump();
      if (p == "/proc" || p == "/sys" || p.starts_with("/proc/") || p.starts_with("/sys/")) {
        continue;
      }
      return InvalidArgumentError(std::string(key) + " entry " + p +
                                  " cannot be applied in a gVisor sandbox: runsc ignores "
                                  "maskedPaths and readonlyPaths, and only entries under the "
                                  "sandbox's own /proc and /sys are taken");
    }
  }
  if (!joins_sandbox) return false;
  auto namespaces = linux_->find("namespaces");
  if (namespaces == linux_->end() || !namespaces->is_array()) return false;
  for (auto it = namespaces->begin(); it != namespaces->end(); ++it) {
    if (!it->is_object() || it->value("type", "") != "pid") continue;
    auto path = it->find("path");
    if (path == it->end() || !path->is_string() ||
        !oci::NamespacePathPid(path->get<std::string>(), "pid")) {
      return false;
    }
    namespaces->erase(it);
    return true;
  }
  return false;
}

Status FitBundleToSandboxKernel(const std::string& path, bool joins_sandbox) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json spec = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return InvalidArgumentError(path + ": not a JSON object");
  HULL_ASSIGN_OR_RETURN(bool changed, FitSpecToSandboxKernel(spec, joins_sandbox));
  return changed ? RewriteBundleSpec(path, spec) : Status::Ok();
}

}  // namespace hull::runtime::oci_cli
