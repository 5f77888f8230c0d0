#include "runtime/oci_cli/runsc_features.h"

#include <nlohmann/json.hpp>

#include "base/text.h"

namespace hull::runtime::oci_cli {

Result<std::string> BuildRunscFeatures(std::string_view version_output) {
  constexpr std::string_view kVersion = "runsc version ";
  constexpr std::string_view kSpec = "spec:";
  std::string version, spec;
  std::string_view rest = version_output;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = TrimSpace(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line.starts_with(kVersion)) version = TrimSpace(line.substr(kVersion.size()));
    if (line.starts_with(kSpec)) spec = TrimSpace(line.substr(kSpec.size()));
  }
  if (version.empty()) {
    return InvalidArgumentError("not a runsc --version banner: " +
                                std::string(version_output.substr(0, version_output.find('\n'))));
  }
  using nlohmann::json;
  json doc = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", spec.empty() ? std::string("1.0.0") : spec},
      // runsc manages cgroup v1 and v2 through cgroupfs, and through systemd
      // with --systemd-cgroup (`runsc flags`).
      {"linux", {{"cgroup", {{"v1", true}, {"v2", true}, {"systemd", true}}}}},
      {"annotations",
       {
           {"dev.gvisor.runsc.version", version},
           // hull does not offer runsc's experimental checkpoint (docs/backends.md).
           {"org.opencontainers.runc.checkpoint.enabled", "false"},
       }},
  };
  return doc.dump(4, ' ', false, json::error_handler_t::replace);
}

}  // namespace hull::runtime::oci_cli
