#include "shim/cli/flags.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "shim/config/config.h"

namespace hull::shim {
namespace {

constexpr std::string_view kDefaultSocketDir = "/run/containerd/s";

enum class Kind { kString, kBool };

struct Flag {
  std::string_view name;
  Kind kind;
  std::string CommandLine::*string_field = nullptr;
  bool CommandLine::*bool_field = nullptr;
};

// -v/-version, -info and -h are handled as actions below.
constexpr Flag kFlags[] = {
    {"namespace", Kind::kString, &CommandLine::ns},
    {"address", Kind::kString, &CommandLine::address},
    {"publish-binary", Kind::kString, &CommandLine::publish_binary},
    {"id", Kind::kString, &CommandLine::id},
    {"bundle", Kind::kString, &CommandLine::bundle},
    {"socket", Kind::kString, &CommandLine::socket},
    {"debug-socket", Kind::kString, &CommandLine::debug_socket},
    {"debug", Kind::kBool, nullptr, &CommandLine::debug},
    {"v", Kind::kBool},
    {"version", Kind::kBool},
    {"info", Kind::kBool},
    {"h", Kind::kBool},
    {"help", Kind::kBool},
};

// Go's strconv.ParseBool.
Result<bool> ParseBool(std::string_view flag, std::string_view value) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (value == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (value == f) return false;
  }
  return InvalidArgumentError("invalid boolean value \"" + std::string(value) + "\" for -" +
                              std::string(flag));
}

bool IsActionWord(std::string_view arg) {
  return arg == "start" || arg == "delete";
}

}  // namespace

Result<CommandLine> ParseCommandLine(std::span<const std::string> args) {
  CommandLine cmd;
  bool version = false;
  bool info = false;
  bool help = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') break;  // the action word (or "-")
    if (arg == "--") {
      ++i;
      break;
    }
    std::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    if (body.empty() || body[0] == '-' || body[0] == '=') {
      return InvalidArgumentError("bad flag syntax: " + std::string(arg));
    }
    std::string_view name = body;
    std::optional<std::string_view> value;
    if (size_t eq = body.find('='); eq != std::string_view::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }

    const Flag* flag = std::find_if(std::begin(kFlags), std::end(kFlags),
                                    [&](const Flag& f) { return f.name == name; });
    if (flag == std::end(kFlags)) {
      std::string given(arg);
      if (!value && i + 1 < args.size() && !args[i + 1].starts_with("-") &&
          !IsActionWord(args[i + 1])) {
        given += " " + args[++i];
      }
      cmd.unknown_flags.push_back(std::move(given));
      continue;
    }
    if (flag->kind == Kind::kBool) {
      bool on = true;
      if (value) {
        HULL_ASSIGN_OR_RETURN(on, ParseBool(name, *value));
      }
      if (flag->bool_field) cmd.*(flag->bool_field) = on;
      if (name == "v" || name == "version") version = on;
      if (name == "info") info = on;
      if (name == "h" || name == "help") help = on;
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return InvalidArgumentError("flag needs an argument: -" + std::string(name));
      }
      value = args[++i];
    }
    cmd.*(flag->string_field) = std::string(*value);
  }

  if (i < args.size()) {
    const std::string& word = args[i];
    if (word == "start") {
      cmd.action = Action::kStart;
    } else if (word == "delete") {
      cmd.action = Action::kDelete;
    } else if (!version && !info && !help) {
      return InvalidArgumentError("unknown action \"" + word + "\" (expected start or delete)");
    }
    cmd.extra_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  }
  if (help) cmd.action = Action::kHelp;
  if (info) cmd.action = Action::kInfo;
  if (version) cmd.action = Action::kVersion;
  return cmd;
}

Environment ReadEnvironment(const std::function<const char*(const char*)>& getenv) {
  auto get = [&](const char* name) {
    const char* value = getenv(name);
    return value ? std::string(value) : std::string();
  };
  Environment env;
  env.ttrpc_address = get("TTRPC_ADDRESS");
  env.grpc_address = get("GRPC_ADDRESS");
  env.ns = get("NAMESPACE");
  env.max_shim_version = get("MAX_SHIM_VERSION");
  env.sched_core = !get("SCHED_CORE").empty();
  env.config_path = ConfigFilePath(getenv(std::string(kConfigPathEnv).c_str()));
  env.socket_dir = get("HULL_SOCKET_DIR");
  if (env.socket_dir.empty()) env.socket_dir = kDefaultSocketDir;
  return env;
}

void ApplyEnvironmentDefaults(const Environment& env, CommandLine& cmd) {
  if (cmd.ns.empty()) cmd.ns = env.ns;
  if (cmd.address.empty()) cmd.address = env.grpc_address;
}

ServerArgs MakeServerArgs(const CommandLine& cmd, const Environment& env, std::string cwd) {
  ServerArgs args;
  args.ns = cmd.ns;
  args.id = cmd.id;
  args.address = cmd.address;
  args.publish_binary = cmd.publish_binary;
  args.ttrpc_address = env.ttrpc_address;
  if (args.ttrpc_address.empty() && !cmd.address.empty()) {
    args.ttrpc_address = cmd.address + ".ttrpc";
  }
  args.bundle = std::move(cwd);
  args.debug = cmd.debug;
  return args;
}

std::string Usage() {
  return "Usage: containerd-shim-hull-v2 [flags] [start|delete]\n"
         "  -namespace <ns>        containerd namespace\n"
         "  -id <id>               task id\n"
         "  -address <path>        containerd's gRPC socket\n"
         "  -publish-binary <path> containerd binary (unused)\n"
         "  -bundle <dir>          bundle directory (delete)\n"
         "  -debug                 debug logging\n"
         "  -info                  print RuntimeInfo (protobuf) for containerd\n"
         "  -v, -version           print the version\n"
         "  -h, -help              print this\n"
         "containerd runs it for runtime type io.containerd.hull.v2 (start, then the server;\n"
         "delete after a crash). Configuration: /etc/hull/config.toml (HULL_CONFIG names\n"
         "another file), then the runtime handler's options (ConfigPath). See\n"
         "containerd-shim-hull-v2(8), docs/config.md and docs/install.md.\n";
}

}  // namespace hull::shim
