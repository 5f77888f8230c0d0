// hull config TOML, read and written with toml++ in its non-throwing mode.
// This is the only file that includes toml++ (header-only, so its exception
// setting is ours alone).
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <limits>
#include <span>
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

// An absolute path, or empty for "the default".
Result<std::string> GetPath(const toml::node& node, std::string_view origin,
                            std::string_view key) {
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
    return Invalid(origin, node,
                   std::string(key) + ": expected a runtime name (runc, crun) or an absolute path");
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

// One config key: its name and how a TOML value lands in the config.
struct Key {
  std::string_view name;
  Status (*apply)(const toml::node& node, std::string_view origin, std::string_view name,
                  ShimConfig& config);
};

// Reads the value with `Read` and stores it where `Field(config)` refers.
template <auto Read, auto Field>
Status Set(const toml::node& node, std::string_view origin, std::string_view name,
           ShimConfig& config) {
  auto value = Read(node, origin, name);
  if (!value) return value.error();
  Field(config) = std::move(*value);
  return Status::Ok();
}

// The top-level keys. docs/config.md describes each one; keep them in step.
constexpr Key kTopLevelKeys[] = {
    {"runtime", Set<GetRuntime, [](ShimConfig& c) -> auto& { return c.runtime.binary_name; }>},
    {"root", Set<GetPath, [](ShimConfig& c) -> auto& { return c.runtime.root; }>},
    {"systemd_cgroup", Set<GetBool, [](ShimConfig& c) -> auto& { return c.runtime.systemd_cgroup; }>},
    {"no_pivot_root", Set<GetBool, [](ShimConfig& c) -> auto& { return c.runtime.no_pivot_root; }>},
    {"no_new_keyring",
     Set<GetBool, [](ShimConfig& c) -> auto& { return c.runtime.no_new_keyring; }>},
    {"io_uid", Set<GetUint32, [](ShimConfig& c) -> auto& { return c.io_uid; }>},
    {"io_gid", Set<GetUint32, [](ShimConfig& c) -> auto& { return c.io_gid; }>},
    {"shim_cgroup", Set<GetString, [](ShimConfig& c) -> auto& { return c.shim_cgroup; }>},
    {"criu_path", Set<GetPath, [](ShimConfig& c) -> auto& { return c.runtime.criu_path; }>},
    {"criu_image_path",
     Set<GetPath, [](ShimConfig& c) -> auto& { return c.runtime.criu_image_path; }>},
    {"criu_work_path",
     Set<GetPath, [](ShimConfig& c) -> auto& { return c.runtime.criu_work_path; }>},
    {"log_level", Set<GetLogLevel, [](ShimConfig& c) -> auto& { return c.log_level; }>},
};

// A [section] and its keys. Later features add theirs here ([sizing],
// [runsc_config], [vm]), each with its own key table and ShimConfig member.
struct Section {
  std::string_view name;
  std::span<const Key> keys;
};
constexpr std::array<Section, 0> kSections{};

// containerd's own fields of runtimeoptions.v1.Options, which CRI leaves in
// config_body (it is the whole `options` table of the runtime handler).
constexpr std::string_view kContainerdKeys[] = {"TypeUrl", "ConfigPath"};

const Key* FindKey(std::span<const Key> keys, std::string_view name) {
  for (const Key& key : keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

bool IsContainerdKey(std::string_view name) {
  return std::find(std::begin(kContainerdKeys), std::end(kContainerdKeys), name) !=
         std::end(kContainerdKeys);
}

const Section* FindSection(std::string_view name) {
  for (const Section& section : kSections) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

// Applies the keys of `table` (the top level when `section` is empty).
Status ApplyKeys(const toml::table& table, std::span<const Key> keys, std::string_view section,
                 std::string_view origin, ShimConfig& config, bool containerd_keys) {
  for (auto&& [name, node] : table) {
    std::string_view key_name = name.str();
    std::string full_name =
        section.empty() ? std::string(key_name) : std::string(section) + "." + std::string(key_name);
    if (const Key* key = FindKey(keys, key_name)) {
      HULL_RETURN_IF_ERROR(key->apply(node, origin, full_name, config));
      continue;
    }
    if (section.empty() && node.is_table()) {
      const Section* known = FindSection(key_name);
      if (!known) return Invalid(origin, node, "unknown section [" + full_name + "]");
      HULL_RETURN_IF_ERROR(
          ApplyKeys(*node.as_table(), known->keys, known->name, origin, config, false));
      continue;
    }
    if (section.empty() && containerd_keys && IsContainerdKey(key_name)) continue;
    return Invalid(origin, node, "unknown key \"" + full_name + "\"");
  }
  return Status::Ok();
}

}  // namespace

Status ApplyToml(std::string_view text, std::string_view origin, ShimConfig& config,
                 bool containerd_keys) {
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
  HULL_RETURN_IF_ERROR(
      ApplyKeys(parsed.table(), kTopLevelKeys, "", origin, updated, containerd_keys));
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
  };
  std::ostringstream out;
  out << table << '\n';
  return out.str();
}

}  // namespace hull::shim
