// hull config TOML, read and written with toml++ in its non-throwing mode.
// This is the only file that includes toml++ (header-only, so its exception
// setting is ours alone).
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
// toml++ 3.3 checks its parser's internal preconditions with assert() where
// NDEBUG is not defined, and one fails on input its release build refuses
// with a parse error: "[" and then a control character (found by
// tests/fuzz/config_fuzzer in the Debug sanitizer tree). Debug builds take
// toml++ as release builds do, so both answer InvalidArgument.
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "shim/config/config.h"

namespace hull::shim {
namespace {

// "<origin>: line N: <what>".
Status Invalid(std::string_view origin, const toml::node& node, std::string_view what) {
  std::string message(origin);
  if (node.source().begin.line != 0) {
    message += ": line " + std::to_string(node.source().begin.line);
  }
  message += ": ";
  message += what;
  return InvalidArgumentError(std::move(message));
}

// Readers for one value; `key` names it in messages.
Result<std::string> GetString(const toml::node& node, std::string_view origin,
                              std::string_view key) {
  const auto* value = node.as_string();
  if (!value) return Invalid(origin, node, std::string(key) + ": expected a string");
  return value->get();
}

Result<bool> GetBool(const toml::node& node, std::string_view origin, std::string_view key) {
  const auto* value = node.as_boolean();
  if (!value) return Invalid(origin, node, std::string(key) + ": expected true or false");
  return value->get();
}

Result<uint32_t> GetUint32(const toml::node& node, std::string_view origin, std::string_view key) {
  const auto* value = node.as_integer();
  if (!value || value->get() < 0 || value->get() > std::numeric_limits<uint32_t>::max()) {
    return Invalid(origin, node, std::string(key) + ": expected an integer from 0 to 4294967295");
  }
  return static_cast<uint32_t>(value->get());
}

// An integer in [min, max] (both within int64).
Result<uint64_t> GetUintInRange(const toml::node& node, std::string_view origin,
                                std::string_view key, uint64_t min, uint64_t max) {
  const auto* value = node.as_integer();
  if (!value || value->get() < 0 || static_cast<uint64_t>(value->get()) < min ||
      static_cast<uint64_t>(value->get()) > max) {
    return Invalid(origin, node,
                   std::string(key) + ": expected an integer from " + std::to_string(min) + " to " +
                       std::to_string(max));
  }
  return static_cast<uint64_t>(value->get());
}

Result<uint32_t> GetUint32InRange(const toml::node& node, std::string_view origin,
                                  std::string_view key, uint32_t min, uint32_t max) {
  HULL_ASSIGN_OR_RETURN(uint64_t value, GetUintInRange(node, origin, key, min, max));
  return static_cast<uint32_t>(value);
}

// A number (integer or float) in [0, max].
Result<double> GetNonNegativeNumber(const toml::node& node, std::string_view origin,
                                    std::string_view key, double max) {
  std::optional<double> number;
  if (const auto* f = node.as_floating_point()) number = f->get();
  if (const auto* i = node.as_integer()) number = static_cast<double>(i->get());
  if (!number || !std::isfinite(*number) || *number < 0 || *number > max) {
    return Invalid(origin, node,
                   std::string(key) + ": expected a number from 0 to " +
                       std::to_string(static_cast<int64_t>(max)));
  }
  return *number;
}

// An absolute path, or empty for "the default".
Result<std::string> GetPath(const toml::node& node, std::string_view origin, std::string_view key) {
  HULL_ASSIGN_OR_RETURN(std::string path, GetString(node, origin, key));
  if (!path.empty() && path.front() != '/') {
    return Invalid(origin, node, std::string(key) + ": expected an absolute path");
  }
  return path;
}

Result<std::string> GetRuntime(const toml::node& node, std::string_view origin,
                               std::string_view key) {
  HULL_ASSIGN_OR_RETURN(std::string runtime, GetString(node, origin, key));
  if (runtime.empty()) return Invalid(origin, node, std::string(key) + ": must not be empty");
  if (runtime.find('/') != std::string::npos && runtime.front() != '/') {
    return Invalid(
        origin, node,
        std::string(key) + ": expected a runtime name (runc, crun, runsc, vm) or an absolute path");
  }
  return runtime;
}

Result<LogLevel> GetLogLevel(const toml::node& node, std::string_view origin,
                             std::string_view key) {
  HULL_ASSIGN_OR_RETURN(std::string level, GetString(node, origin, key));
  if (level == "debug") return LogLevel::kDebug;
  if (level == "info") return LogLevel::kInfo;
  if (level == "warn") return LogLevel::kWarn;
  if (level == "error") return LogLevel::kError;
  return Invalid(origin, node, std::string(key) + ": expected debug, info, warn or error");
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

Result<StartOutputMode> GetStartOutput(const toml::node& node, std::string_view origin,
                                       std::string_view key) {
  HULL_ASSIGN_OR_RETURN(std::string mode, GetString(node, origin, key));
  if (mode == "auto") return StartOutputMode::kAuto;
  if (mode == "address") return StartOutputMode::kAddress;
  if (mode == "json-v2") return StartOutputMode::kJsonV2;
  if (mode == "json-v3") return StartOutputMode::kJsonV3;
  return Invalid(origin, node, std::string(key) + ": expected auto, address, json-v2 or json-v3");
}

std::string_view StartOutputModeName(StartOutputMode mode) {
  switch (mode) {
    case StartOutputMode::kAuto: return "auto";
    case StartOutputMode::kAddress: return "address";
    case StartOutputMode::kJsonV2: return "json-v2";
    case StartOutputMode::kJsonV3: return "json-v3";
  }
  return "auto";
}

// Stores a value read from TOML into its field, or passes the error on.
template <typename T>
Status Assign(Result<T> value, T& field) {
  if (!value) return value.error();
  field = std::move(*value);
  return Status::Ok();
}

// Applies one top-level key; nullopt when `key` is not one of hull's. The
// keys are documented in docs/config.md; keep the two in step.
std::optional<Status> ApplyTopLevelKey(std::string_view key, const toml::node& node,
                                       std::string_view origin, ShimConfig& config) {
  RuntimeOptions& rt = config.runtime;
  // `binary_name` is the name gVisor's runsc.toml uses for the same key.
  if (key == "runtime" || key == "binary_name") {
    return Assign(GetRuntime(node, origin, key), rt.binary_name);
  }
  if (key == "root") return Assign(GetPath(node, origin, key), rt.root);
  if (key == "systemd_cgroup") return Assign(GetBool(node, origin, key), rt.systemd_cgroup);
  if (key == "no_pivot_root") return Assign(GetBool(node, origin, key), rt.no_pivot_root);
  if (key == "no_new_keyring") return Assign(GetBool(node, origin, key), rt.no_new_keyring);
  if (key == "io_uid") return Assign(GetUint32(node, origin, key), config.io_uid);
  if (key == "io_gid") return Assign(GetUint32(node, origin, key), config.io_gid);
  if (key == "shim_cgroup") return Assign(GetString(node, origin, key), config.shim_cgroup);
  if (key == "criu_path") return Assign(GetPath(node, origin, key), rt.criu_path);
  if (key == "criu_image_path") return Assign(GetPath(node, origin, key), rt.criu_image_path);
  if (key == "criu_work_path") return Assign(GetPath(node, origin, key), rt.criu_work_path);
  if (key == "log_level") return Assign(GetLogLevel(node, origin, key), config.log_level);
  if (key == "start_output") {
    return Assign(GetStartOutput(node, origin, key), config.start_output);
  }
  return std::nullopt;
}

// Bounds of the [ttrpc] numbers.
constexpr uint32_t kMaxTtrpcCount = 1u << 20;
constexpr uint32_t kMaxPartialFrameTimeoutMs = 3'600'000;  // an hour

Status ApplyTtrpc(const toml::table& table, std::string_view origin, TtrpcLimits& limits) {
  for (auto&& [name, node] : table) {
    std::string_view key = name.str();
    Status applied;
    if (key == "max_connections") {
      applied =
          Assign(GetUint32InRange(node, origin, key, 1, kMaxTtrpcCount), limits.max_connections);
    } else if (key == "max_calls_per_connection") {
      applied = Assign(GetUint32InRange(node, origin, key, 1, kMaxTtrpcCount),
                       limits.max_calls_per_connection);
    } else if (key == "partial_frame_timeout_ms") {
      applied = Assign(GetUint32InRange(node, origin, key, 0, kMaxPartialFrameTimeoutMs),
                       limits.partial_frame_timeout_ms);
    } else {
      return Invalid(origin, node, "unknown key \"ttrpc." + std::string(key) + "\"");
    }
    HULL_RETURN_IF_ERROR(applied);
  }
  return Status::Ok();
}

toml::table TtrpcTable(const TtrpcLimits& limits) {
  return toml::table{
      {"max_connections", static_cast<int64_t>(limits.max_connections)},
      {"max_calls_per_connection", static_cast<int64_t>(limits.max_calls_per_connection)},
      {"partial_frame_timeout_ms", static_cast<int64_t>(limits.partial_frame_timeout_ms)},
  };
}

Status ApplySecurity(const toml::table& table, std::string_view origin, SecurityOptions& security) {
  for (auto&& [name, node] : table) {
    std::string_view key = name.str();
    if (key == "confine") {
      HULL_RETURN_IF_ERROR(Assign(GetBool(node, origin, key), security.confine));
      continue;
    }
    if (key != "logging_binaries") {
      return Invalid(origin, node, "unknown key \"security." + std::string(key) + "\"");
    }
    const toml::array* paths = node.as_array();
    if (paths == nullptr) return Invalid(origin, node, "logging_binaries: expected an array");
    std::vector<std::string> binaries;
    for (const toml::node& path : *paths) {
      HULL_ASSIGN_OR_RETURN(std::string binary, GetPath(path, origin, "logging_binaries"));
      if (binary.empty()) return Invalid(origin, path, "logging_binaries: empty path");
      binaries.push_back(std::move(binary));
    }
    security.logging_binaries = std::move(binaries);
  }
  return Status::Ok();
}

toml::table SecurityTable(const SecurityOptions& security) {
  toml::array binaries;
  for (const std::string& binary : security.logging_binaries) binaries.push_back(binary);
  return toml::table{{"confine", security.confine}, {"logging_binaries", std::move(binaries)}};
}

// Bounds of the [sizing] numbers: far above any real machine, low enough
// that sums and MiB-to-byte conversions cannot overflow.
constexpr uint32_t kMaxVcpus = 4096;
constexpr uint64_t kMaxMemoryMib = uint64_t{1} << 24;  // 16 TiB

// One key of [sizing]; nullopt when it is not one.
std::optional<Status> ApplySizingKey(std::string_view key, const toml::node& node,
                                     std::string_view origin, PodSizing& sizing) {
  oci::SizingPolicy& p = sizing.policy;
  if (key == "overhead_vcpus") {
    return Assign(GetNonNegativeNumber(node, origin, key, kMaxVcpus), p.overhead_vcpus);
  }
  if (key == "overhead_memory_mib") {
    return Assign(GetUintInRange(node, origin, key, 0, kMaxMemoryMib), p.overhead_memory_mib);
  }
  if (key == "overhead_memory_percent") {
    return Assign(GetNonNegativeNumber(node, origin, key, 100), p.overhead_memory_percent);
  }
  if (key == "default_vcpus") {
    return Assign(GetUint32InRange(node, origin, key, 1, kMaxVcpus), p.default_vcpus);
  }
  if (key == "default_memory_mib") {
    return Assign(GetUintInRange(node, origin, key, 1, kMaxMemoryMib), p.default_memory_mib);
  }
  if (key == "min_memory_mib") {
    return Assign(GetUintInRange(node, origin, key, 1, kMaxMemoryMib), p.min_memory_mib);
  }
  if (key == "max_vcpus") {
    return Assign(GetUint32InRange(node, origin, key, 0, kMaxVcpus), p.max_vcpus);
  }
  if (key == "round_memory_to_even") {
    return Assign(GetBool(node, origin, key), p.round_memory_to_even);
  }
  if (key == "pod_cgroup_limits") {
    return Assign(GetBool(node, origin, key), sizing.pod_cgroup_limits);
  }
  if (key == "shim_in_pod_cgroup") {
    return Assign(GetBool(node, origin, key), sizing.shim_in_pod_cgroup);
  }
  return std::nullopt;
}

Status ApplySizing(const toml::table& table, std::string_view origin, PodSizing& sizing) {
  for (auto&& [name, node] : table) {
    std::string_view key = name.str();
    std::optional<Status> applied = ApplySizingKey(key, node, origin, sizing);
    if (!applied) return Invalid(origin, node, "unknown key \"sizing." + std::string(key) + "\"");
    HULL_RETURN_IF_ERROR(*applied);
  }
  return Status::Ok();
}

// A runtime flag name: lower-case letters, digits, '-' and '_', not starting
// with '-' (hull writes the dashes), so that no value can smuggle in a
// second flag or an argument.
bool IsFlagName(std::string_view name) {
  if (name.empty() || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// [runsc_config]: each key becomes the global flag `--<key>=<value>`. Values
// are strings, as in gVisor's own runsc.toml; booleans and integers are
// accepted and written the way runsc parses them.
Status ApplyRuntimeFlags(const toml::table& table, std::string_view origin,
                         std::map<std::string, std::string>& flags) {
  for (auto&& [name, node] : table) {
    std::string key(name.str());
    if (!IsFlagName(key)) {
      return Invalid(origin, node,
                     "[runsc_config] " + key + ": not a flag name (a-z, 0-9, '-', '_')");
    }
    if (const auto* s = node.as_string()) {
      flags[key] = s->get();
    } else if (const auto* b = node.as_boolean()) {
      flags[key] = b->get() ? "true" : "false";
    } else if (const auto* i = node.as_integer()) {
      flags[key] = std::to_string(i->get());
    } else {
      return Invalid(origin, node,
                     "[runsc_config] " + key + ": expected a string, boolean or integer");
    }
  }
  return Status::Ok();
}

toml::table SizingTable(const PodSizing& sizing) {
  const oci::SizingPolicy& p = sizing.policy;
  return toml::table{
      {"overhead_vcpus", p.overhead_vcpus},
      {"overhead_memory_mib", static_cast<int64_t>(p.overhead_memory_mib)},
      {"overhead_memory_percent", p.overhead_memory_percent},
      {"default_vcpus", static_cast<int64_t>(p.default_vcpus)},
      {"default_memory_mib", static_cast<int64_t>(p.default_memory_mib)},
      {"min_memory_mib", static_cast<int64_t>(p.min_memory_mib)},
      {"max_vcpus", static_cast<int64_t>(p.max_vcpus)},
      {"round_memory_to_even", p.round_memory_to_even},
      {"pod_cgroup_limits", sizing.pod_cgroup_limits},
      {"shim_in_pod_cgroup", sizing.shim_in_pod_cgroup},
  };
}

// [vm]: the vm backend's QEMU and guest (docs/vm.md). Closed sets of
// values are checked here; paths are checked when a VM boots.
Result<std::string> GetOneOf(const toml::node& node, std::string_view origin, std::string_view key,
                             std::initializer_list<std::string_view> allowed) {
  HULL_ASSIGN_OR_RETURN(std::string value, GetString(node, origin, key));
  std::string list;
  for (std::string_view a : allowed) {
    if (value == a) return value;
    list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
  }
  return Invalid(origin, node,
                 "vm." + std::string(key) + ": \"" + value + "\" is not one of " + list);
}

constexpr uint32_t kMaxAgentTimeoutMs = 3'600'000;     // an hour
constexpr uint32_t kMaxTbSizeMib = 4096;               // QEMU's own cap is 2 GiB+
constexpr uint32_t kMaxTemplateCacheMib = 16'777'216;  // 16 TiB
constexpr uint32_t kMaxHeadroomMib = 1'048'576;        // 1 TiB
// Room above for every pid (pid_max is at most 2^22) below uid_t's -1.
constexpr uint32_t kMaxJailIdBase = 0xffffffffu - (1u << 22) - 1;

Status ApplyVm(const toml::table& table, std::string_view origin, VmOptions& vm) {
  for (auto&& [name, node] : table) {
    std::string_view key = name.str();
    Status applied;
    if (key == "qemu") {
      applied = Assign(GetString(node, origin, key), vm.qemu);
    } else if (key == "kernel") {
      applied = Assign(GetString(node, origin, key), vm.kernel);
    } else if (key == "initramfs") {
      applied = Assign(GetString(node, origin, key), vm.initramfs);
    } else if (key == "kernel_args") {
      applied = Assign(GetString(node, origin, key), vm.kernel_args);
    } else if (key == "machine") {
      applied = Assign(GetOneOf(node, origin, key, {"microvm", "pc"}), vm.machine);
    } else if (key == "accel") {
      applied = Assign(GetOneOf(node, origin, key, {"tcg", "kvm"}), vm.accel);
    } else if (key == "share") {
      applied = Assign(GetOneOf(node, origin, key, {"9p", "virtiofs"}), vm.share);
    } else if (key == "agent_timeout_ms") {
      applied =
          Assign(GetUint32InRange(node, origin, key, 1, kMaxAgentTimeoutMs), vm.agent_timeout_ms);
    } else if (key == "tcg_tb_size_mib") {
      applied = Assign(GetUint32InRange(node, origin, key, 0, kMaxTbSizeMib), vm.tcg_tb_size_mib);
    } else if (key == "clone_tcg_tb_size_mib") {
      applied =
          Assign(GetUint32InRange(node, origin, key, 0, kMaxTbSizeMib), vm.clone_tcg_tb_size_mib);
    } else if (key == "templates") {
      applied = Assign(GetBool(node, origin, key), vm.templates);
    } else if (key == "jail") {
      applied = Assign(GetBool(node, origin, key), vm.jail);
    } else if (key == "share_helper") {
      applied = Assign(GetString(node, origin, key), vm.share_helper);
    } else if (key == "jail_id_base") {
      applied = Assign(GetUint32InRange(node, origin, key, 1, kMaxJailIdBase), vm.jail_id_base);
    } else if (key == "template_cache_mib") {
      applied = Assign(GetUint32InRange(node, origin, key, 0, kMaxTemplateCacheMib),
                       vm.template_cache_mib);
    } else if (key == "memory_headroom_mib") {
      applied =
          Assign(GetUint32InRange(node, origin, key, 0, kMaxHeadroomMib), vm.memory_headroom_mib);
    } else {
      return Invalid(origin, node, "unknown key \"vm." + std::string(key) + "\"");
    }
    HULL_RETURN_IF_ERROR(applied);
  }
  return Status::Ok();
}

toml::table VmTable(const VmOptions& vm) {
  return toml::table{
      {"qemu", vm.qemu},
      {"kernel", vm.kernel},
      {"initramfs", vm.initramfs},
      {"kernel_args", vm.kernel_args},
      {"machine", vm.machine},
      {"accel", vm.accel},
      {"share", vm.share},
      {"agent_timeout_ms", static_cast<int64_t>(vm.agent_timeout_ms)},
      {"tcg_tb_size_mib", static_cast<int64_t>(vm.tcg_tb_size_mib)},
      {"clone_tcg_tb_size_mib", static_cast<int64_t>(vm.clone_tcg_tb_size_mib)},
      {"templates", vm.templates},
      {"jail", vm.jail},
      {"share_helper", vm.share_helper},
      {"jail_id_base", static_cast<int64_t>(vm.jail_id_base)},
      {"template_cache_mib", static_cast<int64_t>(vm.template_cache_mib)},
      {"memory_headroom_mib", static_cast<int64_t>(vm.memory_headroom_mib)},
  };
}

// Applies one [section]; nullopt when it is not one of hull's.
std::optional<Status> ApplySection(std::string_view name, const toml::table& table,
                                   std::string_view origin, ShimConfig& config) {
  if (name == "sizing") return ApplySizing(table, origin, config.sizing);
  if (name == "ttrpc") return ApplyTtrpc(table, origin, config.ttrpc);
  if (name == "vm") return ApplyVm(table, origin, config.runtime.vm);
  if (name == "security") return ApplySecurity(table, origin, config.security);
  if (name == "runsc_config") {
    // Key by key over a lower layer's flags, like the top-level keys.
    return ApplyRuntimeFlags(table, origin, config.runtime.runtime_flags);
  }
  return std::nullopt;
}

// containerd's own fields of runtimeoptions.v1.Options, which CRI leaves in
// config_body (it is the whole `options` table of the runtime handler).
bool IsContainerdKey(std::string_view key) {
  return key == "TypeUrl" || key == "ConfigPath";
}

// The runtime's basename names runsc ("runsc", "/usr/local/bin/runsc-x",
// ...), as the backend's flavour rule reads it (docs/config.md).
bool NamesRunsc(std::string_view runtime) {
  size_t slash = runtime.rfind('/');
  std::string_view base = slash == std::string_view::npos ? runtime : runtime.substr(slash + 1);
  return base.substr(0, 5) == "runsc";
}

// A file with a [runsc_config] section that names no runtime is gVisor's
// runsc.toml (Monogon's, for one: `root` and [runsc_config] only), and
// gVisor's shim runs runsc when `binary_name` is absent: so does hull, unless
// a lower layer already named a runsc binary.
void ImplyRunsc(const toml::table& table, ShimConfig& config) {
  const toml::node* section = table.get("runsc_config");
  if (section == nullptr || !section->is_table()) return;
  if (table.contains("runtime") || table.contains("binary_name")) return;
  if (!NamesRunsc(config.runtime.binary_name)) config.runtime.binary_name = "runsc";
}

Status ApplyTable(const toml::table& table, std::string_view origin, ShimConfig& config,
                  bool containerd_keys) {
  for (auto&& [name, node] : table) {
    std::string_view key = name.str();
    std::optional<Status> applied = node.is_table()
                                        ? ApplySection(key, *node.as_table(), origin, config)
                                        : ApplyTopLevelKey(key, node, origin, config);
    if (applied) {
      HULL_RETURN_IF_ERROR(*applied);
      continue;
    }
    if (containerd_keys && IsContainerdKey(key)) continue;
    if (node.is_table()) return Invalid(origin, node, "unknown section [" + std::string(key) + "]");
    return Invalid(origin, node, "unknown key \"" + std::string(key) + "\"");
  }
  ImplyRunsc(table, config);
  return Status::Ok();
}

// toml++ 3 (Debian 12) reaches __builtin_unreachable (undefined behaviour)
// in is_non_ascii_horizontal_whitespace, which its parser calls on every
// character it advances over. Its lookup splits U+00A0..U+FEFF into blocks
// of 0x3FA code points and has no case for blocks 0, 11 and 63, so every
// code point of U+00A1..U+0499, U+2C5E..U+3057 (but U+3000) and
// U+FB26..U+FEFE (U+FEFF is whitespace) reaches it (found by
// tests/fuzz/config_fuzzer; the ranges read from toml++'s table). Such text
// is refused before parsing. This refuses, among others, accented Latin
// letters in config values.
bool TomlMishandles(char32_t cp) {
  return (cp >= 0xA1 && cp <= 0x499) || (cp >= 0x2C5E && cp <= 0x3057 && cp != 0x3000) ||
         (cp >= 0xFB26 && cp <= 0xFEFE);
}

// The byte offset of the first such code point (2- and 3-byte UTF-8).
std::optional<size_t> FindCodePointTomlMishandles(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    char32_t cp = 0;
    if (byte(i) >= 0xC2 && byte(i) <= 0xDF) {
      cp = (char32_t{byte(i) & 0x1Fu} << 6) | (byte(i + 1) & 0x3Fu);
    } else if (byte(i) >= 0xE0 && byte(i) <= 0xEF && i + 2 < text.size()) {
      cp = (char32_t{byte(i) & 0x0Fu} << 12) | (char32_t{byte(i + 1) & 0x3Fu} << 6) |
           (byte(i + 2) & 0x3Fu);
    } else {
      continue;
    }
    if (TomlMishandles(cp)) return i;
  }
  return std::nullopt;
}

}  // namespace

Status ApplyToml(std::string_view text, std::string_view origin, ShimConfig& config,
                 bool containerd_keys) {
  if (std::optional<size_t> at = FindCodePointTomlMishandles(text)) {
    return InvalidArgumentError(std::string(origin) + ": byte " + std::to_string(*at) +
                                ": unsupported character (toml++ cannot parse U+00A1-U+0499, "
                                "U+2C5E-U+3057 but U+3000, or U+FB26-U+FEFE)");
  }
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    std::string message(origin);
    message += ": line " + std::to_string(error.source().begin.line) + ", column " +
               std::to_string(error.source().begin.column) + ": " +
               std::string(error.description());
    return InvalidArgumentError(std::move(message));
  }
  // Apply onto a copy so that a bad key leaves `config` untouched.
  ShimConfig updated = config;
  HULL_RETURN_IF_ERROR(ApplyTable(parsed.table(), origin, updated, containerd_keys));
  config = std::move(updated);
  return Status::Ok();
}

std::string ToToml(const ShimConfig& config) {
  const RuntimeOptions& rt = config.runtime;
  toml::table table{
      {"runtime", rt.binary_name},
      {"root", rt.root},
      {"systemd_cgroup", rt.systemd_cgroup},
      {"no_pivot_root", rt.no_pivot_root},
      {"no_new_keyring", rt.no_new_keyring},
      {"io_uid", static_cast<int64_t>(config.io_uid)},
      {"io_gid", static_cast<int64_t>(config.io_gid)},
      {"shim_cgroup", config.shim_cgroup},
      {"criu_path", rt.criu_path},
      {"criu_image_path", rt.criu_image_path},
      {"criu_work_path", rt.criu_work_path},
      {"log_level", std::string(LogLevelName(config.log_level))},
      {"start_output", std::string(StartOutputModeName(config.start_output))},
      {"sizing", SizingTable(config.sizing)},
      {"ttrpc", TtrpcTable(config.ttrpc)},
      {"vm", VmTable(rt.vm)},
      {"security", SecurityTable(config.security)},
  };
  toml::table flags;
  for (const auto& [key, value] : rt.runtime_flags) flags.insert(key, value);
  table.insert("runsc_config", std::move(flags));
  std::ostringstream out;
  out << table << '\n';
  return out.str();
}

namespace {

// A value as TOML writes it (strings quoted), for messages.
std::string TomlText(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

}  // namespace

std::vector<KeyDifference> DifferingKeys(const ShimConfig& a, const ShimConfig& b,
                                         std::span<const std::string_view> names) {
  // Both configs go through their TOML form, so every key of a named
  // section counts, including keys added to it later.
  toml::parse_result first = toml::parse(ToToml(a));
  toml::parse_result second = toml::parse(ToToml(b));
  std::vector<KeyDifference> out;
  if (!first || !second) return out;  // ToToml's own output always parses
  auto compare = [&out](const std::string& key, const toml::node& x, const toml::node& y) {
    std::string first_text = TomlText(x);
    std::string second_text = TomlText(y);
    if (first_text != second_text) out.push_back({key, first_text, second_text});
  };
  for (std::string_view name : names) {
    const toml::node* x = first.table().get(name);
    const toml::node* y = second.table().get(name);
    if (x == nullptr || y == nullptr) continue;
    if (x->is_table() && y->is_table()) {
      for (auto&& [key, value] : *x->as_table()) {
        const toml::node* other = y->as_table()->get(key.str());
        if (other == nullptr) continue;
        compare(std::string(name) + "." + std::string(key.str()), value, *other);
      }
    } else {
      compare(std::string(name), *x, *y);
    }
  }
  return out;
}

}  // namespace hull::shim
