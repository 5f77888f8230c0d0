#include "shim/cli/actions.h"

#include <fcntl.h>
#include <unistd.h>

#include "shim/cli/bundle_log.h"
#include "shim/cli/delete.h"
#include "shim/cli/fd_io.h"
#include "shim/cli/info.h"
#include "shim/cli/start.h"
#include "shim/cli/version.h"

namespace hull::shim {
namespace {

// All of stdin; nothing when it is a terminal (someone running -info by hand)
// or closed.
Result<std::string> ReadStdin() {
  if (::fcntl(STDIN_FILENO, F_GETFD) < 0 || ::isatty(STDIN_FILENO)) return std::string();
  return ReadAll(STDIN_FILENO, "stdin");
}

int Emit(const Result<std::string>& output) {
  if (!output) return ReportFailure(output.error());
  Status written = WriteAll(STDOUT_FILENO, *output, "stdout");
  if (!written.ok()) return ReportFailure(written);
  return 0;
}

}  // namespace

int ReportFailure(const Status& status) {
  std::string line = std::string(kBinaryName) + ": " + status.message() + "\n";
  WriteAll(STDERR_FILENO, line, "stderr").IgnoreError();
  return 1;
}

void WarnUnknownFlags(const CommandLine& cmd, const Logger& log) {
  for (const std::string& flag : cmd.unknown_flags) {
    log.Warn("ignoring unknown flag {}", flag);
  }
}

std::string CurrentDirectory() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string();
}

int RunAction(const CommandLine& cmd, const Environment& env, const ActionBackend& backend) {
  switch (cmd.action) {
    case Action::kHelp: return Emit(Usage());
    case Action::kVersion: return Emit(VersionText());
    case Action::kInfo: {
      Result<std::string> stdin_data = ReadStdin();
      if (!stdin_data) return ReportFailure(stdin_data.error());
      return Emit(RunInfo({env, std::move(*stdin_data), backend.features}));
    }
    case Action::kStart: {
      std::string bundle = CurrentDirectory();
      Logger log = OpenBundleLog(bundle, cmd.debug);
      WarnUnknownFlags(cmd, log);
      Result<std::string> stdin_data = ReadStdin();
      if (!stdin_data) return ReportFailure(stdin_data.error());
      StartRequest req{cmd, env, std::move(bundle), std::move(*stdin_data), SelfExecutable()};
      return Emit(RunStart(req, log));
    }
    case Action::kDelete: {
      std::string bundle = cmd.bundle.empty() ? CurrentDirectory() : cmd.bundle;
      Logger log = OpenBundleLog(bundle, cmd.debug);
      WarnUnknownFlags(cmd, log);
      DeleteRequest req{cmd, env, std::move(bundle), backend.force_delete, nullptr, {}};
      return Emit(RunDelete(req, log));
    }
    case Action::kServe: break;
  }
  return ReportFailure(InternalError("serve mode is not an action"));
}

}  // namespace hull::shim
