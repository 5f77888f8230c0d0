// Spec: one container's OCI runtime spec (the bundle's config.json). It keeps
// the whole JSON document, unknown fields and key order included, so that a
// spec hull rewrites differs from the one it read only where hull changed it.
// Typed accessors and mutators cover what hull touches; everything else is
// reachable through json(). Accessors never throw: a field of the wrong type
// reads as absent (Parse rejects the wrong types it knows about), and a
// mutator replaces a wrong-typed container on its way with the right type.
// Plain value; no threads.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hull::oci {

inline constexpr std::string_view kConfigFileName = "config.json";

// The JSON type of a spec document: insertion-ordered objects, so dumping a
// parsed spec writes its keys in the order they were read. Note that
// operator== on it compares objects order-sensitively; convert to
// nlohmann::json to compare as sets.
using SpecJson = nlohmann::ordered_json;

// One entry of linux.namespaces: `type` ("pid", "network", ...) and, when the
// container joins an existing namespace, its `path`.
struct Namespace {
  std::string type;
  std::string path;
  friend bool operator==(const Namespace&, const Namespace&) = default;
};

// One entry of `mounts`. Empty type/source/options are omitted when written,
// as the runtime-spec Go types do.
struct Mount {
  std::string destination;
  std::string type;
  std::string source;
  std::vector<std::string> options;
  friend bool operator==(const Mount&, const Mount&) = default;
};

class Spec {
 public:
  // Parses config.json text. InvalidArgument "config.json: ..." when it is not
  // JSON, not an object, or a field hull reads has the wrong type.
  static Result<Spec> Parse(std::string_view text);
  // Reads and parses the file at `path` (an errno Status if it cannot be read).
  static Result<Spec> Load(const std::string& path);
  // Wraps a document built in memory; same checks as Parse.
  static Result<Spec> FromJson(SpecJson doc);
  // An empty document ({}): every accessor answers its default.
  Spec() : json_(SpecJson::object()) {}

  // The whole document.
  const SpecJson& json() const { return json_; }
  SpecJson& mutable_json() { return json_; }

  // --- annotations ---
  // `annotations`, string values only.
  std::map<std::string, std::string> Annotations() const;
  std::optional<std::string> Annotation(std::string_view key) const;
  // Adds or replaces; a new key goes last.
  void SetAnnotation(std::string_view key, std::string_view value);
  // True if the key was there.
  bool RemoveAnnotation(std::string_view key);

  // --- process ---
  // process.terminal; false when absent.
  bool Terminal() const;
  // process.args / process.env; empty when absent.
  std::vector<std::string> Args() const;
  std::vector<std::string> Env() const;
  // process.cwd; empty when absent.
  std::string Cwd() const;
  // process.oomScoreAdj.
  std::optional<int> OomScoreAdj() const;
  void SetOomScoreAdj(int adj);

  // hostname; empty when absent.
  std::string Hostname() const;

  // --- mounts ---
  std::vector<Mount> Mounts() const;
  // Appends.
  void AddMount(const Mount& mount);
  // Removes every mount whose destination is `destination`; returns how many.
  size_t RemoveMounts(std::string_view destination);

  // --- linux ---
  // linux.cgroupsPath; empty when absent.
  std::string CgroupsPath() const;
  void SetCgroupsPath(std::string_view path);
  // linux.namespaces, in order.
  std::vector<Namespace> Namespaces() const;
  // Sets the path of the namespace of `type`, adding the entry (last) if the
  // spec has none. An empty path removes the "path" member.
  void SetNamespacePath(std::string_view type, std::string_view path);
  // Removes every entry of `type`; returns how many.
  size_t RemoveNamespace(std::string_view type);
  // linux.sysctl, string values only.
  std::map<std::string, std::string> Sysctls() const;
  void SetSysctl(std::string_view key, std::string_view value);

  // JSON text: compact by default (as containerd writes config.json), or
  // pretty with `indent` characters of `indent_char` per level. Invalid UTF-8
  // (only possible after mutation) is replaced.
  std::string Dump(int indent = -1, char indent_char = ' ') const;
  // Writes Dump() to `path` atomically (temporary file and rename).
  Status Save(const std::string& path) const;

 private:
  explicit Spec(SpecJson json) : json_(std::move(json)) {}

  SpecJson json_;
};

// The host namespaces a pod's spec asks for by having no entry of the type
// (CRI's hostPID, hostIPC): "the host's PID namespace (hostPID: true)",
// the same for IPC, or both joined with " and "; "" when it has both
// entries. For backends whose pods run under a kernel of their own.
std::string HostNamespacesAsked(const Spec& spec);

// The pid in a namespace path `/proc/<pid>/ns/<type>` (how CRI names the
// pause container's namespaces for a pod's containers); nullopt for any
// other path, or one of another type.
std::optional<int> NamespacePathPid(std::string_view path, std::string_view type);

}  // namespace hull::oci
