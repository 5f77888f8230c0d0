#include "shim/cli/info.h"

#include "containerd/types/introspection.pb.h"
#include "google/protobuf/any.pb.h"
#include "shim/cli/version.h"
#include "shim/config/config.h"

namespace hull::shim {

Result<std::string> RunInfo(const InfoRequest& req) {
  containerd::types::RuntimeInfo info;
  info.set_name(std::string(kRuntimeName));
  info.mutable_version()->set_version(std::string(kVersion));
  info.mutable_version()->set_revision(std::string(kRevision));

  google::protobuf::Any options;
  const bool has_options = !req.stdin_data.empty();
  if (has_options && !options.ParseFromString(req.stdin_data)) {
    return InvalidArgumentError("info: stdin is not a protobuf Any of runtime options");
  }
  HULL_ASSIGN_OR_RETURN(ShimConfig config,
                        ResolveConfig(req.env.config_path, has_options ? &options : nullptr));
  if (has_options) *info.mutable_options() = options;

  if (req.features) {
    Result<std::string> features = req.features(config.runtime);
    if (features) {
      info.mutable_features()->set_type_url(std::string(kFeaturesTypeUrl));
      info.mutable_features()->set_value(std::move(*features));
    }
  }
  return info.SerializeAsString();
}

std::string VersionText() {
  std::string text = std::string(kBinaryName) + ": version " + std::string(kVersion);
  if (!kRevision.empty()) text += " (revision " + std::string(kRevision) + ")";
  return text + "\n";
}

}  // namespace hull::shim
