// The command line containerd gives the shim, in Go `flag` syntax: `-f v`,
// `-f=v`, `--f v`, bare `-debug` for booleans, flags before the action word
// (`start`, `delete`, or none for serve mode). Also the environment
// variables containerd sets. Pure parsing; main calls it once.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "shim/cli/args.h"

namespace hull::shim {

enum class Action {
  kServe,    // no action word: run the long-lived server on fd 3
  kStart,    // `start`
  kDelete,   // `delete`
  kInfo,     // -info
  kVersion,  // -v / -version
  kHelp,     // -h / -help
};

struct CommandLine {
  std::string ns;              // -namespace
  std::string address;         // -address
  std::string publish_binary;  // -publish-binary
  std::string id;              // -id
  std::string bundle;          // -bundle
  std::string socket;          // -socket (server mode of Go shims; unused)
  std::string debug_socket;    // -debug-socket (likewise)
  bool debug = false;          // -debug
  Action action = Action::kServe;
  // Flags hull does not know, as given ("-foo=1", or "-foo" plus the value
  // it took). A Go shim would exit 2; hull warns and carries on.
  std::vector<std::string> unknown_flags;
  // Arguments after the action word (ignored, as Go shims do).
  std::vector<std::string> extra_args;
};

// Parses argv without argv[0]. -v/-version win over -info, and both over an
// action word, as in Go shims. An unknown flag without "=value" takes the
// next argument as its value unless that argument starts with '-' or is an
// action word. Malformed input (a value-taking flag at the end, "---x",
// "-debug=maybe", an unknown action word) is InvalidArgument.
Result<CommandLine> ParseCommandLine(std::span<const std::string> args);

// The environment as containerd sets it, plus hull's own overrides.
struct Environment {
  std::string ttrpc_address;     // TTRPC_ADDRESS: where events are published
  std::string grpc_address;      // GRPC_ADDRESS (1.7+): same as -address
  std::string ns;                // NAMESPACE (1.7+): same as -namespace
  std::string max_shim_version;  // MAX_SHIM_VERSION (1.7+): set means not 1.6
  bool sched_core = false;       // SCHED_CORE non-empty (1.6/1.7 sched_core=true)
  std::string config_path;       // HULL_CONFIG, else /etc/hull/config.toml
  std::string socket_dir;        // HULL_SOCKET_DIR, else /run/containerd/s
};

// Reads the environment through `getenv` (a seam for tests).
Environment ReadEnvironment(const std::function<const char*(const char*)>& getenv);

// -namespace and -address fall back to $NAMESPACE and $GRPC_ADDRESS.
void ApplyEnvironmentDefaults(const Environment& env, CommandLine& cmd);

// Serve mode's arguments. `cwd` is the bundle `start` ran the server in.
ServerArgs MakeServerArgs(const CommandLine& cmd, const Environment& env, std::string cwd);

// Usage text for -h.
std::string Usage();

}  // namespace hull::shim
