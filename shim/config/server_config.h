// The settings the long-lived server fixes when it starts ([security],
// [ttrpc], log_level) and the pod-wide ones `start` applied (shim_cgroup,
// start_output, [sizing]): where the server reads them, and what it does
// when a later container's config asks for other values (docs/config.md,
// "Where each key applies"). Plain functions, no loop.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/logging.h"
#include "base/status.h"
#include "shim/config/config.h"

namespace google::protobuf {
class Any;
}

namespace hull::shim {

// The keys (top-level keys and whole sections) fixed for the server's life
// once it has started.
std::span<const std::string_view> ServerWideKeys();

// The server's own config and where it came from (for the log).
struct ServerConfig {
  ShimConfig config;
  std::string origin;
};

// The config the server starts with. `start` resolved it from the config
// file and containerd's options (a handler's ConfigPath file, its options
// table) and stored it in the bundle, the server's working directory
// `bundle_dir`: that copy is read, so a key set in a handler's file applies
// to the server as it does to the container. Without one (a server not
// started by `start`), the config file at `config_path`. An unreadable or
// invalid file is an error.
Result<ServerConfig> LoadServerConfig(const std::string& bundle_dir,
                                      const std::string& config_path);

// Where a config resolved from `options` (none: null or empty) over the
// config file `config_path` came from, for messages: the runtime options'
// config_path file and config_body, or the options' type, "over
// <config_path>"; `config_path` alone without options. `start` keeps it in
// the bundle's copy (WriteBundleConfig).
std::string ConfigOrigin(const google::protobuf::Any* options, const std::string& config_path);

// Where a container's config at Create came from: ConfigOrigin of its
// options when containerd sent any, else the origin `start` kept with the
// bundle's copy.
std::string ContainerConfigOrigin(const google::protobuf::Any& options, const std::string& bundle,
                                  const std::string& config_path);

// A container's config (from `origin`) against the server's: each
// server-wide key whose value differs is not applied, and logged as an error
// naming `origin` and the key. A container that asks for a confined server
// from one that is not is refused (FailedPrecondition): it is never run with
// less confinement than its config asks for.
Status CheckServerWideKeys(const ShimConfig& server, const ShimConfig& container,
                           std::string_view who, std::string_view origin, const Logger& log);

}  // namespace hull::shim
