// The OCI runtime features document (runtime-spec features.md) for gVisor's
// runsc, which has no `features` command: hull builds it from `runsc
// --version` and states only what that release's CLI shows. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::runtime::oci_cli {

// The document for the runsc whose `runsc --version` printed
// `version_output` ("runsc version X\nspec: Y\n"). InvalidArgument if that is
// not runsc's banner. A Flavour::build_features.
Result<std::string> BuildRunscFeatures(std::string_view version_output);

}  // namespace hull::runtime::oci_cli
