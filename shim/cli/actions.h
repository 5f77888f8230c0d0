// The short-lived actions behind one entry point for main: start, delete,
// -info, -version, -h. Each writes its answer to stdout and nothing to
// stderr on success; a failure prints "containerd-shim-hull-v2: <error>" on
// stderr and exits 1. Serve mode is not here: main hands it to RunServer.
#pragma once

#include <functional>
#include <string>

#include "base/logging.h"
#include "base/status.h"
#include "shim/backend/make_backend.h"
#include "shim/cli/flags.h"

namespace hull::shim {

// The backend's blocking helpers, bound by main (RuntimeFeatures,
// ForceDelete) so that the command-line code does not link a backend itself.
struct ActionBackend {
  std::function<Result<std::string>(const RuntimeOptions&)> features;
  std::function<Status(const RuntimeOptions&, const std::string& ns, const std::string& bundle,
                       const std::string& id)>
      force_delete;
};

// Runs `cmd.action` (not kServe) and returns the process exit code.
int RunAction(const CommandLine& cmd, const Environment& env, const ActionBackend& backend);

// Prints "containerd-shim-hull-v2: <message>" on stderr; returns 1.
int ReportFailure(const Status& status);

// One warning per unknown flag, to `log`.
void WarnUnknownFlags(const CommandLine& cmd, const Logger& log);

// The working directory, or "" if it cannot be read.
std::string CurrentDirectory();

}  // namespace hull::shim
