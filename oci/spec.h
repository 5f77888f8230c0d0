// Spec: one container's OCI runtime spec (the bundle's config.json). It keeps
// the whole JSON document, unknown fields included, so that later steps can
// read or rewrite any part of it; the accessors cover what the shim itself
// needs. Accessors never throw: a field of the wrong type reads as absent
// (Parse rejects the wrong types it knows about). Plain value; no threads.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hull::oci {

inline constexpr std::string_view kConfigFileName = "config.json";

// One entry of linux.namespaces: `type` ("pid", "network", ...) and, when the
// container joins an existing namespace, its `path`.
struct Namespace {
  std::string type;
  std::string path;
  friend bool operator==(const Namespace&, const Namespace&) = default;
};

class Spec {
 public:
  // Parses config.json text. InvalidArgument "config.json: ..." when it is not
  // JSON, not an object, or a field hull reads has the wrong type.
  static Result<Spec> Parse(std::string_view text);
  // Reads and parses the file at `path` (an errno Status if it cannot be read).
  static Result<Spec> Load(const std::string& path);

  // The whole document.
  const nlohmann::json& json() const { return json_; }
  nlohmann::json& mutable_json() { return json_; }

  // `annotations`, string values only.
  std::map<std::string, std::string> Annotations() const;
  std::optional<std::string> Annotation(std::string_view key) const;
  // process.terminal; false when absent.
  bool Terminal() const;
  // linux.cgroupsPath; empty when absent.
  std::string CgroupsPath() const;
  // linux.namespaces, in order.
  std::vector<Namespace> Namespaces() const;

  // Compact JSON; invalid UTF-8 (only possible after mutation) is replaced.
  std::string Dump() const;

 private:
  explicit Spec(nlohmann::json json) : json_(std::move(json)) {}

  nlohmann::json json_;
};

}  // namespace hull::oci
