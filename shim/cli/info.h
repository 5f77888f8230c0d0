// -info and -version. -info answers containerd 2.x's runtime introspection:
// a protobuf containerd.types.RuntimeInfo on stdout, whose features are the
// OCI features document of the configured backend (CRI enables user
// namespaces and recursive read-only mounts from it). Blocking; runs once.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "shim/backend/make_backend.h"
#include "shim/cli/flags.h"

namespace hull::shim {

inline constexpr std::string_view kFeaturesTypeUrl =
    "types.containerd.io/opencontainers/runtime-spec/1/features/Features";

struct InfoRequest {
  Environment env;
  std::string stdin_data;  // a protobuf Any of the runtime options, or nothing
  // The backend's features JSON (a seam: main passes RuntimeFeatures).
  std::function<Result<std::string>(const RuntimeOptions&)> features;
};

// The serialized RuntimeInfo: name io.containerd.hull.v2, hull's version
// and revision, the stdin options echoed back, and the features (left out
// when the backend cannot produce them, as the runc shim does). Options that
// do not decode or do not apply are an error.
Result<std::string> RunInfo(const InfoRequest& req);

// "containerd-shim-hull-v2: version 0.1.0 (revision abc123)\n".
std::string VersionText();

}  // namespace hull::shim
