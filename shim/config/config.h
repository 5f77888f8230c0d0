// ShimConfig: how one hull shim runs its containers, resolved once per bundle
// from (lowest to highest) built-in defaults, hull's config file
// (/etc/hull/config.toml, or $HULL_CONFIG), and the options containerd passes
// (a runc Options or a runtimeoptions Options, as an Any). `start` stores the
// result in the bundle so that `delete` and a restarted server use the same.
// docs/config.md lists every key. Plain values and blocking file reads; no
// threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/logging.h"
#include "base/status.h"
#include "oci/sizing.h"
#include "shim/config/runtime_options.h"

namespace google::protobuf {
class Any;
}

namespace hull::shim {

inline constexpr std::string_view kDefaultConfigPath = "/etc/hull/config.toml";
// Replaces kDefaultConfigPath (tests, packaging checks).
inline constexpr std::string_view kConfigPathEnv = "HULL_CONFIG";
// The resolved config, in the bundle.
inline constexpr std::string_view kBundleConfigFile = "hull-config.toml";

// The option messages containerd sends, by type name (the type_url without
// any "<host>/" prefix).
inline constexpr std::string_view kRuncOptionsType = "containerd.runc.v1.Options";
inline constexpr std::string_view kRuntimeOptionsType = "runtimeoptions.v1.Options";
// The older runctypes form containerd 1.6's client sends to runtimes whose
// name does not start with io.containerd.runc (WithShimCgroup).
inline constexpr std::string_view kRuncCreateOptionsType = "containerd.linux.runc.CreateOptions";

// The [sizing] section.
struct PodSizing {
  oci::SizingPolicy policy;
  // cgroup v2: create the pod cgroup if missing and write the pod's size into
  // its cpu.max, cpu.weight and memory.max before the pause container starts.
  bool pod_cgroup_limits = false;
  // cgroup v2: `start` of a pause container puts the server into the leaf
  // <pod cgroup>/hull-shim, so the pod pays for its shim.
  bool shim_in_pod_cgroup = false;
};
bool operator==(const PodSizing& a, const PodSizing& b);

// The `start_output` key: what `start` prints (shim/cli/bootstrap_output.h,
// docs/start-delete.md). kAuto decides from containerd's environment and
// build; the others force one format for daemons hull cannot tell apart.
enum class StartOutputMode { kAuto, kAddress, kJsonV2, kJsonV3 };

// The [ttrpc] section: the server's limits (docs/ttrpc.md, "Limits"). Read
// from the config file when the server starts.
struct TtrpcLimits {
  uint32_t max_connections = 256;
  uint32_t max_calls_per_connection = 4096;
  // 0: no deadline.
  uint32_t partial_frame_timeout_ms = 10'000;
};
bool operator==(const TtrpcLimits& a, const TtrpcLimits& b);

// The [security] section (docs/security.md). Read from the config file when
// the server starts.
struct SecurityOptions {
  // Fork a privileged spawner, then drop the server's capabilities, set
  // NoNewPrivs and install its seccomp filter.
  bool confine = true;
  // The binary:// logging binaries a confined server's spawner starts
  // (absolute paths); any other is refused.
  std::vector<std::string> logging_binaries;
  friend bool operator==(const SecurityOptions&, const SecurityOptions&) = default;
};

struct ShimConfig {
  // What runs the containers: the `runtime` key is runtime.binary_name.
  RuntimeOptions runtime;
  // cgroup `start` moves the long-lived server into; empty = stay in
  // containerd's.
  std::string shim_cgroup;
  // Owner of the stdio pipes handed to containers.
  uint32_t io_uid = 0;
  uint32_t io_gid = 0;
  // The server's log level (-debug raises it to debug).
  LogLevel log_level = LogLevel::kInfo;
  // [sizing]: how a pod is sized, and what hull does with the size on the
  // host (docs/sizing.md, "What the shim does with it").
  PodSizing sizing;
  // start_output: what `start` prints.
  StartOutputMode start_output = StartOutputMode::kAuto;
  TtrpcLimits ttrpc;
  SecurityOptions security;
};

bool operator==(const ShimConfig& a, const ShimConfig& b);

// Applies hull config TOML onto `config`: keys present replace values.
// `origin` names the source in messages ("/etc/hull/config.toml: line 3:
// unknown key \"x\""). Syntax errors, unknown keys or sections and values of
// the wrong type or range are InvalidArgument. With `containerd_keys`, the
// top-level keys containerd itself puts into a runtimeoptions config_body
// (TypeUrl, ConfigPath) are accepted and ignored.
Status ApplyToml(std::string_view text, std::string_view origin, ShimConfig& config,
                 bool containerd_keys = false);

// Every key of `config` as TOML, so that the text alone reproduces it.
std::string ToToml(const ShimConfig& config);

// A key whose value differs between two configs: its dotted name
// ("security.confine") and both values as TOML text.
struct KeyDifference {
  std::string key;
  std::string first;
  std::string second;
  friend bool operator==(const KeyDifference&, const KeyDifference&) = default;
};
// The keys among `names` whose values differ between `a` and `b`, in the
// order of `names` (a section's keys sorted). A name is a top-level key
// ("log_level") or a section ("ttrpc"), which stands for each of its keys.
std::vector<KeyDifference> DifferingKeys(const ShimConfig& a, const ShimConfig& b,
                                         std::span<const std::string_view> names);

// Built-in defaults overlaid with the TOML file at `path`. A missing file is
// not an error (the defaults apply); an unreadable or invalid one is.
Result<ShimConfig> LoadConfigFile(const std::string& path);

// Applies containerd's options onto `config`:
//  - containerd.runc.v1.Options: each field that is set (non-empty, non-zero,
//    true) replaces the config's value;
//  - containerd.linux.runc.CreateOptions: the same for its no_pivot_root,
//    no_new_keyring, shim_cgroup, io_uid, io_gid, criu_work_path and
//    criu_image_path; its restore fields (open_tcp, ...) are ignored;
//  - runtimeoptions.v1.Options: config_path names a TOML file applied on top,
//    then config_body (TOML bytes) is applied on top of that;
//  - an empty Any changes nothing.
// Any other type is InvalidArgument, as is a message that does not decode.
Status ApplyOptions(const google::protobuf::Any& options, ShimConfig& config);

// LoadConfigFile(defaults_path), then ApplyOptions(*options) if given.
Result<ShimConfig> ResolveConfig(const std::string& defaults_path,
                                 const google::protobuf::Any* options);

// The config of a container the server is creating (Task.Create): resolved
// from its options when containerd sent any (containerd 2.x skips `start`
// for the app containers of a pod at bootstrap version 3, so their bundles
// hold nothing), else what `start` stored in the bundle, else the config
// file at `config_path`.
Result<ShimConfig> ResolveContainerConfig(const google::protobuf::Any& options,
                                          const std::string& bundle,
                                          const std::string& config_path);

// The config file: `hull_config_env` ($HULL_CONFIG) when set and non-empty,
// else /etc/hull/config.toml.
std::string ConfigFilePath(const char* hull_config_env);

// <bundle>/hull-config.toml, written atomically (mode 0600). A non-empty
// `origin` (where `start` resolved it from, server_config.h) is kept as its
// first line, a TOML comment.
Status WriteBundleConfig(const std::string& bundle, const ShimConfig& config,
                         std::string_view origin = {});
// The origin WriteBundleConfig kept; "" when none (or no file).
std::string ReadBundleConfigOrigin(const std::string& bundle);
// Reads it back onto built-in defaults (not the config file: the stored file
// is complete). NotFound when the bundle has none.
Result<ShimConfig> ReadBundleConfig(const std::string& bundle);

}  // namespace hull::shim
