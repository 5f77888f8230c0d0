#include "shim/config/config.h"

#include <algorithm>
#include <string>

#include "base/file_util.h"
#include "containerd/linux/runc/runctypes.pb.h"
#include "containerd/runc/v1/options.pb.h"
#include "google/protobuf/any.pb.h"
#include "runtimeoptions/v1/options.pb.h"

namespace hull::shim {
namespace {

// "containerd.runc.v1.Options" for both the bare name containerd uses and a
// "type.googleapis.com/containerd.runc.v1.Options" style URL.
std::string_view TypeName(std::string_view type_url) {
  size_t slash = type_url.rfind('/');
  return slash == std::string_view::npos ? type_url : type_url.substr(slash + 1);
}

// Each field of runc's Options that is set replaces the config's value;
// proto3 cannot tell "unset" from "empty", so an empty binary_name keeps the
// configured runtime rather than resetting it.
void ApplyRuncOptions(const containerd::runc::v1::Options& o, ShimConfig& config) {
  RuntimeOptions& rt = config.runtime;
  if (!o.binary_name().empty()) rt.binary_name = o.binary_name();
  if (!o.root().empty()) rt.root = o.root();
  if (o.systemd_cgroup()) rt.systemd_cgroup = true;
  if (o.no_pivot_root()) rt.no_pivot_root = true;
  if (o.no_new_keyring()) rt.no_new_keyring = true;
  if (!o.criu_path().empty()) rt.criu_path = o.criu_path();
  if (!o.criu_image_path().empty()) rt.criu_image_path = o.criu_image_path();
  if (!o.criu_work_path().empty()) rt.criu_work_path = o.criu_work_path();
  if (!o.shim_cgroup().empty()) config.shim_cgroup = o.shim_cgroup();
  if (o.io_uid() != 0) config.io_uid = o.io_uid();
  if (o.io_gid() != 0) config.io_gid = o.io_gid();
}

// The runctypes form, set fields only, as for runc's Options. Its restore
// settings (open_tcp, external_unix_sockets, terminal, file_locks,
// empty_namespaces, cgroups_mode) have no config key: the Go runc shim
// ignores them at create too.
void ApplyRuncCreateOptions(const containerd::linux::runc::CreateOptions& o, ShimConfig& config) {
  RuntimeOptions& rt = config.runtime;
  if (o.no_pivot_root()) rt.no_pivot_root = true;
  if (o.no_new_keyring()) rt.no_new_keyring = true;
  if (!o.criu_image_path().empty()) rt.criu_image_path = o.criu_image_path();
  if (!o.criu_work_path().empty()) rt.criu_work_path = o.criu_work_path();
  if (!o.shim_cgroup().empty()) config.shim_cgroup = o.shim_cgroup();
  if (o.io_uid() != 0) config.io_uid = o.io_uid();
  if (o.io_gid() != 0) config.io_gid = o.io_gid();
}

Status ApplyRuntimeOptions(const runtimeoptions::v1::Options& o, ShimConfig& config) {
  if (!o.config_path().empty()) {
    HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(o.config_path()));
    HULL_RETURN_IF_ERROR(ApplyToml(text, o.config_path(), config));
  }
  if (!o.config_body().empty()) {
    HULL_RETURN_IF_ERROR(ApplyToml(o.config_body(), "runtime options config_body", config,
                                   /*containerd_keys=*/true));
  }
  return Status::Ok();
}

}  // namespace

bool operator==(const ShimConfig& a, const ShimConfig& b) {
  const RuntimeOptions& x = a.runtime;
  const RuntimeOptions& y = b.runtime;
  return x.binary_name == y.binary_name && x.root == y.root &&
         x.systemd_cgroup == y.systemd_cgroup && x.no_pivot_root == y.no_pivot_root &&
         x.no_new_keyring == y.no_new_keyring && x.criu_path == y.criu_path &&
         x.criu_image_path == y.criu_image_path && x.criu_work_path == y.criu_work_path &&
         a.shim_cgroup == b.shim_cgroup && a.io_uid == b.io_uid && a.io_gid == b.io_gid &&
         a.log_level == b.log_level && a.sizing == b.sizing && a.start_output == b.start_output &&
         x.runtime_flags == y.runtime_flags && a.ttrpc == b.ttrpc && a.security == b.security;
}

bool operator==(const TtrpcLimits& a, const TtrpcLimits& b) {
  return a.max_connections == b.max_connections &&
         a.max_calls_per_connection == b.max_calls_per_connection &&
         a.partial_frame_timeout_ms == b.partial_frame_timeout_ms;
}

bool operator==(const PodSizing& a, const PodSizing& b) {
  const oci::SizingPolicy& x = a.policy;
  const oci::SizingPolicy& y = b.policy;
  return x.overhead_vcpus == y.overhead_vcpus && x.overhead_memory_mib == y.overhead_memory_mib &&
         x.overhead_memory_percent == y.overhead_memory_percent &&
         x.default_vcpus == y.default_vcpus && x.default_memory_mib == y.default_memory_mib &&
         x.min_memory_mib == y.min_memory_mib && x.max_vcpus == y.max_vcpus &&
         x.round_memory_to_even == y.round_memory_to_even &&
         a.pod_cgroup_limits == b.pod_cgroup_limits && a.shim_in_pod_cgroup == b.shim_in_pod_cgroup;
}

Result<ShimConfig> LoadConfigFile(const std::string& path) {
  ShimConfig config;
  Result<std::string> text = ReadFile(path);
  if (!text) {
    if (text.error().code() == Code::kNotFound) return config;
    return text.error();
  }
  HULL_RETURN_IF_ERROR(ApplyToml(*text, path, config));
  return config;
}

Status ApplyOptions(const google::protobuf::Any& options, ShimConfig& config) {
  std::string_view type = TypeName(options.type_url());
  if (type.empty() && options.value().empty()) return Status::Ok();
  if (type == kRuncOptionsType) {
    containerd::runc::v1::Options runc;
    if (!runc.ParseFromString(options.value())) {
      return InvalidArgumentError("runtime options: malformed " + std::string(type));
    }
    ShimConfig updated = config;
    ApplyRuncOptions(runc, updated);
    // The TOML keys' rules are the one check (an absolute root, a runtime
    // name, ...): what is stored in the bundle as TOML must read back
    // (tests/fuzz/config_fuzzer found a relative root that did not).
    ShimConfig reread;
    if (Status valid = ApplyToml(ToToml(updated), type, reread); !valid.ok()) {
      return InvalidArgumentError("runtime options: " + valid.message());
    }
    if (!(reread == updated)) {  // e.g. a string TOML cannot carry as it is
      return InvalidArgumentError("runtime options: " + std::string(type) +
                                  " holds a value hull's config cannot store");
    }
    config = std::move(updated);
    return Status::Ok();
  }
  if (type == kRuncCreateOptionsType) {
    containerd::linux::runc::CreateOptions create;
    if (!create.ParseFromString(options.value())) {
      return InvalidArgumentError("runtime options: malformed " + std::string(type));
    }
    ApplyRuncCreateOptions(create, config);
    return Status::Ok();
  }
  if (type == kRuntimeOptionsType) {
    runtimeoptions::v1::Options generic;
    if (!generic.ParseFromString(options.value())) {
      return InvalidArgumentError("runtime options: malformed " + std::string(type));
    }
    // Applied onto a copy, so a failure leaves `config` as it was.
    ShimConfig updated = config;
    HULL_RETURN_IF_ERROR(ApplyRuntimeOptions(generic, updated));
    config = std::move(updated);
    return Status::Ok();
  }
  return InvalidArgumentError("runtime options: unsupported type \"" + options.type_url() +
                              "\" (hull accepts " + std::string(kRuncOptionsType) + ", " +
                              std::string(kRuncCreateOptionsType) + " and " +
                              std::string(kRuntimeOptionsType) + ")");
}

Result<ShimConfig> ResolveConfig(const std::string& defaults_path,
                                 const google::protobuf::Any* options) {
  HULL_ASSIGN_OR_RETURN(ShimConfig config, LoadConfigFile(defaults_path));
  if (options) HULL_RETURN_IF_ERROR(ApplyOptions(*options, config));
  return config;
}

Result<ShimConfig> ResolveContainerConfig(const google::protobuf::Any& options,
                                          const std::string& bundle,
                                          const std::string& config_path) {
  if (!options.type_url().empty() || !options.value().empty()) {
    return ResolveConfig(config_path, &options);
  }
  Result<ShimConfig> stored = ReadBundleConfig(bundle);
  if (stored || stored.error().code() != Code::kNotFound) return stored;
  return LoadConfigFile(config_path);
}

std::string ConfigFilePath(const char* hull_config_env) {
  if (hull_config_env && *hull_config_env) return hull_config_env;
  return std::string(kDefaultConfigPath);
}

namespace {
constexpr std::string_view kOriginComment = "# resolved by start from: ";
}  // namespace

Status WriteBundleConfig(const std::string& bundle, const ShimConfig& config,
                         std::string_view origin) {
  std::string text;
  if (!origin.empty()) {
    std::string line(origin);
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::replace(line.begin(), line.end(), '\r', ' ');
    text = std::string(kOriginComment) + line + "\n";
  }
  text += ToToml(config);
  return WriteFileAtomic(bundle + "/" + std::string(kBundleConfigFile), text, 0600);
}

std::string ReadBundleConfigOrigin(const std::string& bundle) {
  Result<std::string> text = ReadFile(bundle + "/" + std::string(kBundleConfigFile));
  if (!text || !text->starts_with(kOriginComment)) return "";
  size_t end = text->find('\n');
  return text->substr(kOriginComment.size(),
                      (end == std::string::npos ? text->size() : end) - kOriginComment.size());
}

Result<ShimConfig> ReadBundleConfig(const std::string& bundle) {
  std::string path = bundle + "/" + std::string(kBundleConfigFile);
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  ShimConfig config;
  HULL_RETURN_IF_ERROR(ApplyToml(text, path, config));
  return config;
}

}  // namespace hull::shim
