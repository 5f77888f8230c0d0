// What `start` prints for containerd to connect to the server, and how it
// decides (docs/start-delete.md, "What start prints"). containerd 1.6 takes
// the output as the address; 1.7 parses JSON but refuses a version above 2;
// 2.0-2.2 take JSON version 3 (task API v3); 2.3+ send a BootstrapParams and
// take a protobuf BootstrapResult. 1.7 and 2.0-2.2 launch `start` with the
// same argv, env and stdin, so telling them apart needs the daemon itself:
// the Go module path in the build info of the running daemon's executable.
// The decision is a pure function; reading the daemon is a blocking file read.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "shim/config/config.h"

namespace hull::shim {

enum class StartOutputFormat {
  kAddress,     // unix://... (task API v2)
  kJsonV2,      // {"version":2,...}: task API v2
  kJsonV3,      // {"version":3,...}: task API v3 (containerd 2.0+)
  kProtobufV3,  // BootstrapResult{3, address, "ttrpc"} (containerd 2.3+)
};

// What `start` knows about the containerd that runs it.
struct DaemonSignals {
  // stdin was a BootstrapParams: containerd 2.3+.
  bool bootstrap_params = false;
  // MAX_SHIM_VERSION is set: containerd 1.7+ (1.6 does not set it).
  bool max_shim_version_set = false;
  // The major version of the Go module the daemon was built as
  // (github.com/containerd/containerd = 1, .../v2 = 2); nullopt when unknown.
  std::optional<int> daemon_module_major;
};

// The format for `mode` (the config key `start_output`). kAuto: protobuf v3
// for a BootstrapParams; JSON v3 when MAX_SHIM_VERSION is set and the daemon
// is module v2 or later; the plain address otherwise (1.6, 1.7, or a daemon
// it cannot read, which all accept it). A forced mode is used as given.
StartOutputFormat ChooseStartOutput(StartOutputMode mode, const DaemonSignals& signals);

// The bytes to print for `format` and `address`.
std::string FormatStartOutput(StartOutputFormat format, const std::string& address);

// Log name of a format ("address", "json-v2", ...).
std::string_view StartOutputName(StartOutputFormat format);

// The major version in Go build info's module text ("mod\t<path>\t..."):
// 1 for github.com/containerd/containerd, N for .../vN; nullopt when the
// main module is not containerd's (or the text has no "mod" line).
std::optional<int> ContainerdModuleMajor(std::string_view modinfo);

// The Go module info (the "path/mod/dep/build" text) of the ELF executable
// at `path`, from its .go.buildinfo section (Go 1.18+ layout). NotFound when
// it has none; other errors name the file.
Result<std::string> ReadGoModuleInfo(const std::string& path);

// ContainerdModuleMajor of /proc/<pid>/exe: the image the process runs, even
// if the file was replaced on disk since. nullopt on any failure.
std::optional<int> DaemonModuleMajor(pid_t pid);

}  // namespace hull::shim
