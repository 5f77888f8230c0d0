// Which runtime-spec version a runtime that checks `ociVersion` can take
// (docs/backends.md, "Spec versions"). crun refuses a config.json whose
// ociVersion is newer than it knows ("unknown version specified"), and
// containerd 2.1 writes 1.2.x, 2.3 1.3.0. When the spec uses nothing newer
// than the runtime's version, hull rewrites ociVersion down to it; otherwise
// Create fails FailedPrecondition naming both versions and the field. hull
// knows what each release up to 1.3.0 added. Pure except
// FitBundleSpecVersion (one file read, one atomic write). Any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::runtime::oci_cli {

// ociVersionMax of an OCI features document; "" when it has none.
std::string SpecVersionMax(std::string_view features_json);

// What to do with `spec` for a runtime that takes up to `runtime_max`
// ("1.1.0", "1.1.0-rc.1"): "" = run it as is (not newer, or newer in the
// runtime's own minor release without a newer field, or either version
// unreadable); a version ("1.1.0") = rewrite ociVersion to it (a newer minor
// release, but nothing in the spec was added after `runtime_max`);
// FailedPrecondition naming `runtime`, both versions and the first newer
// field, or saying that hull does not know what the spec's version added
// (newer than 1.3.0, or not 1.x).
Result<std::string> FitSpecVersion(const nlohmann::json& spec, std::string_view runtime_max,
                                   std::string_view runtime);

// FitSpecVersion on the config.json at `path`, rewriting it (atomically,
// same mode) when it must be down-levelled. `*rewritten_from` gets the
// original version when it was.
Status FitBundleSpecVersion(const std::string& path, std::string_view runtime_max,
                            std::string_view runtime, std::string* rewritten_from);

}  // namespace hull::runtime::oci_cli
