#include "runtime/oci_cli/sandbox_kernel_spec.h"

#include <filesystem>

namespace hull::runtime::oci_cli {

Result<bool> FitSpecToSandboxKernel(oci::Spec& spec, bool joins_sandbox) {
  constexpr std::string_view kSandbox = "a gVisor sandbox";
  if (std::string asked = oci::HostNamespacesAsked(spec); !asked.empty()) {
    return InvalidArgumentError(std::string(kSandbox) + " cannot run a container in " + asked +
                                ": its containers run on the sandbox's own kernel, which "
                                "shares no namespace with the host");
  }
  for (const auto& [key, value] : spec.Sysctls()) {
    if (key.starts_with("net.")) continue;
    return InvalidArgumentError("sysctl " + key + " cannot be set in " + std::string(kSandbox) +
                                ": its kernel takes no sysctls from the spec, and only net.* "
                                "ones reach the pod's network");
  }
  const oci::SpecJson& doc = spec.json();
  auto linux_ = doc.find("linux");
  for (const char* key : {"maskedPaths", "readonlyPaths"}) {
    if (linux_ == doc.end() || !linux_->is_object()) break;
    auto paths = linux_->find(key);
    if (paths == linux_->end() || !paths->is_array()) continue;
    for (const auto& path : *paths) {
      const std::string p = path.is_string() ? path.get<std::string>() : path.dump();
      // Lexically normal: "/proc/../bin/tr" is /bin/tr, not under /proc.
      const std::string normal = std::filesystem::path(p).lexically_normal().string();
      if (normal == "/proc" || normal == "/sys" || normal.starts_with("/proc/") ||
          normal.starts_with("/sys/")) {
        continue;
      }
      return InvalidArgumentError(std::string(key) + " entry " + p + " cannot be applied in " +
                                  std::string(kSandbox) +
                                  ": runsc ignores maskedPaths and readonlyPaths, and only "
                                  "entries under the sandbox's own /proc and /sys are taken");
    }
  }
  // Bidirectional (CRI: the volume's "rshared" option, and the root's
  // propagation with it): runsc refuses both ("root mount propagation option
  // must specify private or slave"), as an unknown error.
  auto shared = [](const oci::SpecJson& value) {
    return value.is_string() && (value == "shared" || value == "rshared");
  };
  if (auto mounts = doc.find("mounts"); mounts != doc.end() && mounts->is_array()) {
    for (const auto& mount : *mounts) {
      if (!mount.is_object()) continue;
      auto options = mount.find("options");
      if (options == mount.end() || !options->is_array()) continue;
      for (const auto& option : *options) {
        if (!shared(option)) continue;
        return InvalidArgumentError(
            std::string(kSandbox) + " cannot propagate mounts back to the host: volume " +
            mount.value("destination", std::string("?")) + " asks for " +
            option.get<std::string>() +
            " (mountPropagation Bidirectional); mounts made on the sandbox's kernel never "
            "reach the host (HostToContainer works)");
      }
    }
  }
  if (linux_ != doc.end() && linux_->is_object()) {
    if (auto root = linux_->find("rootfsPropagation"); root != linux_->end() && shared(*root)) {
      return InvalidArgumentError(
          std::string(kSandbox) + " cannot propagate mounts back to the host: rootfsPropagation " +
          root->get<std::string>() + "; mounts made on the sandbox's kernel never reach the host");
    }
  }
  if (!joins_sandbox) return false;
  for (const oci::Namespace& ns : spec.Namespaces()) {
    if (ns.type == "pid" && oci::NamespacePathPid(ns.path, "pid")) {
      spec.RemoveNamespace("pid");
      return true;
    }
  }
  return false;
}

Status FitBundleToSandboxKernel(const std::string& path, bool joins_sandbox) {
  HULL_ASSIGN_OR_RETURN(oci::Spec spec, oci::Spec::Load(path));
  HULL_ASSIGN_OR_RETURN(bool changed, FitSpecToSandboxKernel(spec, joins_sandbox));
  return changed ? spec.Save(path) : Status::Ok();
}

}  // namespace hull::runtime::oci_cli
