// containerd-shim-hull-v2: parses the command line and hands over — serve
// mode to RunServer, everything else to shim/cli.
#include <signal.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "shim/backend/make_backend.h"
#include "shim/cli/actions.h"
#include "shim/cli/args.h"
#include "shim/cli/bundle_log.h"
#include "shim/cli/flags.h"
#include "shim/server.h"

int main(int argc, char** argv) {
  using namespace hull::shim;
  // Writes to a closed stdout or log FIFO must fail, not kill the process.
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args(argv + 1, argv + argc);
  Environment env = ReadEnvironment([](const char* name) { return ::getenv(name); });
  hull::Result<CommandLine> cmd = ParseCommandLine(args);
  if (!cmd) return ReportFailure(cmd.error());
  ApplyEnvironmentDefaults(env, *cmd);

  if (cmd->action != Action::kServe) {
    return RunAction(*cmd, env, {RuntimeFeatures, ForceDelete});
  }
  if (cmd->ns.empty()) return ReportFailure(hull::InvalidArgumentError("-namespace is required"));
  ServerArgs server_args = MakeServerArgs(*cmd, env, CurrentDirectory());
  if (!cmd->unknown_flags.empty()) {
    WarnUnknownFlags(*cmd, OpenBundleLog(server_args.bundle, cmd->debug));
  }
  return RunServer(server_args);
}
