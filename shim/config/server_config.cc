#include "shim/config/server_config.h"

#include <array>

#include "google/protobuf/any.pb.h"
#include "runtimeoptions/v1/options.pb.h"

namespace hull::shim {
namespace {

constexpr std::array<std::string_view, 6> kServerWideKeys = {
    "log_level", "start_output", "shim_cgroup", "sizing", "ttrpc", "security"};

}  // namespace

std::span<const std::string_view> ServerWideKeys() {
  return kServerWideKeys;
}

namespace {

// "<origin> (stored in <bundle>/hull-config.toml)", or the file alone.
std::string StoredOrigin(const std::string& bundle) {
  std::string file = bundle + "/" + std::string(kBundleConfigFile);
  std::string origin = ReadBundleConfigOrigin(bundle);
  return origin.empty() ? file : origin + " (stored in " + file + ")";
}

}  // namespace

Result<ServerConfig> LoadServerConfig(const std::string& bundle_dir,
                                      const std::string& config_path) {
  Result<ShimConfig> stored = ReadBundleConfig(bundle_dir);
  if (stored) return ServerConfig{.config = std::move(*stored), .origin = StoredOrigin(bundle_dir)};
  if (stored.error().code() != Code::kNotFound) return stored.error();
  HULL_ASSIGN_OR_RETURN(ShimConfig file, LoadConfigFile(config_path));
  return ServerConfig{.config = std::move(file), .origin = config_path};
}

std::string ConfigOrigin(const google::protobuf::Any* options, const std::string& config_path) {
  if (options == nullptr || (options->type_url().empty() && options->value().empty())) {
    return config_path;
  }
  std::string_view type = options->type_url();
  if (size_t slash = type.rfind('/'); slash != std::string_view::npos) {
    type = type.substr(slash + 1);
  }
  const std::string over = " over " + config_path;
  runtimeoptions::v1::Options generic;
  if (type != kRuntimeOptionsType || !generic.ParseFromString(options->value())) {
    return "runtime options " + std::string(type) + over;
  }
  std::string origin;
  if (!generic.config_path().empty()) origin = generic.config_path();
  if (!generic.config_body().empty()) {
    origin += std::string(origin.empty() ? "" : " and ") + "runtime options config_body";
  }
  if (origin.empty()) origin = "runtime options " + std::string(type);
  return origin + over;
}

std::string ContainerConfigOrigin(const google::protobuf::Any& options, const std::string& bundle,
                                  const std::string& config_path) {
  if (options.type_url().empty() && options.value().empty()) return StoredOrigin(bundle);
  return ConfigOrigin(&options, config_path);
}

Status CheckServerWideKeys(const ShimConfig& server, const ShimConfig& container,
                           std::string_view who, std::string_view origin, const Logger& log) {
  for (const KeyDifference& d : DifferingKeys(server, container, ServerWideKeys())) {
    log.Error(
        "{}: {}: key {} = {} is not applied: the pod's server keeps {} = {}, fixed when it "
        "started (docs/config.md, \"Where each key applies\")",
        who, origin, d.key, d.second, d.key, d.first);
  }
  if (container.security.confine && !server.security.confine) {
    return FailedPreconditionError(std::string(origin) +
                                   ": security.confine = true, but the pod's server runs "
                                   "unconfined (it was started without it)");
  }
  return Status::Ok();
}

}  // namespace hull::shim
