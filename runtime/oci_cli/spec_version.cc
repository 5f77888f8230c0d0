#include "runtime/oci_cli/spec_version.h"

#include <sys/stat.h>

#include <charconv>
#include <optional>
#include <utility>

#include "base/file_util.h"

namespace hull::runtime::oci_cli {
namespace {

using nlohmann::json;

// A runtime-spec version: major.minor.patch and, for the 1.1.0 release
// candidates that added fields, the candidate number. Other suffixes
// ("-dev", "+dev") are read as the release they name.
struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  int rc = kRelease;  // "-rc.N": N; a release sorts after its candidates
  static constexpr int kRelease = 1 << 20;
  auto operator<=>(const Version&) const = default;
};

std::optional<Version> Parse(std::string_view version) {
  Version v;
  const char* p = version.data();
  const char* end = p + version.size();
  auto [p1, e1] = std::from_chars(p, end, v.major);
  if (e1 != std::errc() || p1 == end || *p1 != '.') return std::nullopt;
  auto [p2, e2] = std::from_chars(p1 + 1, end, v.minor);
  if (e2 != std::errc()) return std::nullopt;
  p = p2;
  if (p != end && *p == '.') {
    auto [p3, e3] = std::from_chars(p + 1, end, v.patch);
    if (e3 != std::errc()) return std::nullopt;
    p = p3;
  }
  constexpr std::string_view kRc = "-rc.";
  if (std::string_view(p, end - p).starts_with(kRc)) {
    int rc = 0;
    auto [p4, e4] = std::from_chars(p + kRc.size(), end, rc);
    if (e4 == std::errc() && rc >= 0 && rc < Version::kRelease) v.rc = rc;
  }
  return v;
}

// The release a version names, without suffixes: the ociVersion written
// when down-levelling.
std::string Name(const Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

// What each release of runtime-spec 1.x added to config.json that a runtime
// of an earlier release would not know, as JSON pointers, from the spec's
// ChangeLog and its schema at each tag (docs/backends.md, "Spec versions").
// 1.1.0's fields came in three release candidates; Debian's crun 1.8.1
// knows the first only. 1.2.0 added only mount options (below).
struct Addition {
  Version since;
  std::string_view where;  // JSON pointer
};
constexpr Version V(int major, int minor, int patch, int rc = Version::kRelease) {
  return Version{major, minor, patch, rc};
}
constexpr Addition kAdditions[] = {
    {V(1, 0, 2), "/linux/personality"},
    {V(1, 1, 0, 1), "/domainname"},
    {V(1, 1, 0, 1), "/zos"},
    {V(1, 1, 0, 1), "/linux/resources/unified"},
    {V(1, 1, 0, 1), "/linux/resources/cpu/idle"},
    {V(1, 1, 0, 1), "/linux/resources/cpu/burst"},
    {V(1, 1, 0, 1), "/linux/resources/memory/checkBeforeUpdate"},
    {V(1, 1, 0, 1), "/linux/intelRdt/enableCMT"},
    {V(1, 1, 0, 1), "/linux/intelRdt/enableMBM"},
    {V(1, 1, 0, 1), "/linux/seccomp/defaultErrnoRet"},
    {V(1, 1, 0, 1), "/linux/seccomp/listenerPath"},
    {V(1, 1, 0, 1), "/linux/seccomp/listenerMetadata"},
    {V(1, 1, 0, 2), "/linux/timeOffsets"},
    {V(1, 1, 0, 3), "/process/ioPriority"},
    {V(1, 1, 0, 3), "/process/scheduler"},
    {V(1, 2, 1), "/process/execCPUAffinity"},
    {V(1, 3, 0), "/linux/netDevices"},
    {V(1, 3, 0), "/linux/memoryPolicy"},
    {V(1, 3, 0), "/linux/intelRdt/schemata"},
    {V(1, 3, 0), "/linux/intelRdt/enableMonitoring"},
    {V(1, 3, 0), "/vm/hwConfig"},
    {V(1, 3, 0), "/freebsd"},
};
// The newest release whose additions are all listed above.
constexpr Version kNewestKnown = V(1, 3, 0);

bool After(const Version& v, const Version& from, const Version& to) {
  return from < v && v <= to;
}

// The first field of `spec` added after `from` up to `to`; "" if none.
std::string NewerField(const json& spec, const Version& from, const Version& to) {
  for (const Addition& a : kAdditions) {
    if (!After(a.since, from, to)) continue;
    json::json_pointer pointer{std::string(a.where)};
    if (spec.contains(pointer) && !spec.at(pointer).is_null()) return std::string(a.where);
  }
  json::json_pointer syscalls{"/linux/seccomp/syscalls"};
  if (After(V(1, 1, 0, 1), from, to) && spec.contains(syscalls) && spec.at(syscalls).is_array()) {
    for (const json& s : spec.at(syscalls)) {
      if (s.is_object() && s.contains("errnoRet")) return "/linux/seccomp/syscalls/*/errnoRet";
    }
  }
  if (spec.contains("mounts") && spec["mounts"].is_array()) {
    for (const json& m : spec["mounts"]) {
      if (!m.is_object()) continue;
      // 1.1.0-rc.1: id-mapped mounts.
      if (After(V(1, 1, 0, 1), from, to) &&
          (m.contains("uidMappings") || m.contains("gidMappings"))) {
        return "/mounts/*/uidMappings";
      }
      // 1.2.0: the idmap and ridmap mount options.
      if (After(V(1, 2, 0), from, to) && m.contains("options") && m["options"].is_array()) {
        for (const json& o : m["options"]) {
          if (o == "idmap" || o == "ridmap")
            return "/mounts/*/options (" + o.get<std::string>() + ")";
        }
      }
    }
  }
  // 1.1.0-rc.2: the time namespace.
  json::json_pointer ns{"/linux/namespaces"};
  if (After(V(1, 1, 0, 2), from, to) && spec.contains(ns) && spec.at(ns).is_array()) {
    for (const json& n : spec.at(ns)) {
      if (n.is_object() && n.value("type", "") == "time") return "/linux/namespaces (time)";
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
  std::optional<Version> have = Parse(version);
  std::optional<Version> max = Parse(runtime_max);
  if (!have || !max || *have <= *max) return std::string();
  const std::string prefix = std::string(runtime) + " takes runtime-spec up to " +
                             std::string(runtime_max) + ", the spec is " + version;
  if (have->major != max->major || have->major != 1 || *have > kNewestKnown) {
    return FailedPreconditionError(prefix + ", and hull does not know what " + version + " added");
  }
  if (std::string field = NewerField(spec, *max, *have); !field.empty()) {
    return FailedPreconditionError(prefix + " and uses " + field + ", which " +
                                   std::string(runtime) + " does not know");
  }
  // Nothing newer in it: within the runtime's minor release the spec goes
  // as it is (a runtime that checks ociVersion checks major.minor); across
  // minor releases it is written as the runtime's own release.
  if (have->major == max->major && have->minor == max->minor) return std::string();
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
