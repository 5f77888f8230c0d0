#include "runtime/oci_cli/spec_version.h"

#include <sys/stat.h>

#include <charconv>
#include <optional>
#include <utility>

#include "base/file_util.h"

namespace hull::runtime::oci_cli {
namespace {

using nlohmann::json;

struct MajorMinor {
  int major = 0;
  int minor = 0;
  auto operator<=>(const MajorMinor&) const = default;
};

// "1.2.1", "1.0.2-dev", "1.1.0+dev": major and minor. Patch releases of
// the runtime-spec add no fields, so they never matter here.
std::optional<MajorMinor> Parse(std::string_view version) {
  MajorMinor v;
  const char* end = version.data() + version.size();
  auto [p1, e1] = std::from_chars(version.data(), end, v.major);
  if (e1 != std::errc() || p1 == end || *p1 != '.') return std::nullopt;
  auto [p2, e2] = std::from_chars(p1 + 1, end, v.minor);
  if (e2 != std::errc()) return std::nullopt;
  return v;
}

std::string Name(MajorMinor v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + ".0";
}

// What each minor release of runtime-spec 1.x added that a runtime of the
// release before would not know, as JSON pointers into config.json (from
// the spec's ChangeLog). hull down-levels only across releases listed here.
struct Addition {
  int minor;               // added in 1.<minor>.0
  std::string_view where;  // JSON pointer
};
constexpr Addition kAdditions[] = {
    {1, "/domainname"},
    {1, "/linux/personality"},
    {1, "/linux/timeOffsets"},
    {1, "/linux/resources/unified"},
    {1, "/linux/resources/cpu/idle"},
    {1, "/linux/intelRdt/enableCMT"},
    {1, "/linux/intelRdt/enableMBM"},
    {1, "/linux/seccomp/listenerPath"},
    {1, "/linux/seccomp/listenerMetadata"},
    {2, "/process/ioPriority"},
    {2, "/process/scheduler"},
    {2, "/process/execCPUAffinity"},
    {2, "/linux/netDevices"},
    {2, "/linux/resources/memory/checkBeforeUpdate"},
    {2, "/linux/resources/cpu/burst"},
    {2, "/linux/intelRdt/schemata"},
    {2, "/linux/intelRdt/enableMonitoring"},
};
constexpr int kNewestKnownMinor = 2;

// The first field of `spec` added after 1.<from> up to 1.<to>; "" if none.
std::string NewerField(const json& spec, int from, int to) {
  for (const Addition& a : kAdditions) {
    if (a.minor <= from || a.minor > to) continue;
    json::json_pointer pointer{std::string(a.where)};
    if (spec.contains(pointer) && !spec.at(pointer).is_null()) return std::string(a.where);
  }
  // 1.1.0: id-mapped mounts and the time namespace.
  if (from < 1 && to >= 1) {
    if (spec.contains("mounts") && spec["mounts"].is_array()) {
      for (const json& m : spec["mounts"]) {
        if (m.is_object() && (m.contains("uidMappings") || m.contains("gidMappings"))) {
          return "/mounts/*/uidMappings";
        }
      }
    }
    json::json_pointer ns{"/linux/namespaces"};
    if (spec.contains(ns) && spec.at(ns).is_array()) {
      for (const json& n : spec.at(ns)) {
        if (n.is_object() && n.value("type", "") == "time") return "/linux/namespaces (time)";
      }
    }
  }
  return "";
}

}  // namespace

std::string SpecVersionMax(std::string_view features_json) {
  json doc = json::parse(features_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "";
  auto it = doc.find("ociVersionMax");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<std::string> FitSpecVersion(const json& spec, std::string_view runtime_max,
                                   std::string_view runtime) {
  if (!spec.is_object() || !spec.contains("ociVersion") || !spec["ociVersion"].is_string()) {
    return std::string();
  }
  const std::string version = spec["ociVersion"].get<std::string>();
  std::optional<MajorMinor> have = Parse(version);
  std::optional<MajorMinor> max = Parse(runtime_max);
  if (!have || !max || *have <= *max) return std::string();
  const std::string prefix = std::string(runtime) + " takes runtime-spec up to " +
                             std::string(runtime_max) + ", the spec is " + version;
  if (have->major != max->major || have->major != 1 || have->minor > kNewestKnownMinor) {
    return FailedPreconditionError(prefix + ", and hull does not know what " + version + " added");
  }
  if (std::string field = NewerField(spec, max->minor, have->minor); !field.empty()) {
    return FailedPreconditionError(prefix + " and uses " + field + ", which " +
                                   std::string(runtime) + " does not know");
  }
  return Name(*max);
}

Status FitBundleSpecVersion(const std::string& path, std::string_view runtime_max,
                            std::string_view runtime, std::string* rewritten_from) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json spec = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return InvalidArgumentError(path + ": not a JSON object");
  HULL_ASSIGN_OR_RETURN(std::string target, FitSpecVersion(spec, runtime_max, runtime));
  if (target.empty()) return Status::Ok();
  if (rewritten_from != nullptr) *rewritten_from = spec["ociVersion"].get<std::string>();
  spec["ociVersion"] = target;
  struct stat st;
  const int mode = ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : 0644;
  return WriteFileAtomic(path, spec.dump(-1, ' ', false, json::error_handler_t::replace), mode);
}

}  // namespace hull::runtime::oci_cli
