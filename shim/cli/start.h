// The `start` action (docs/start-delete.md): decode stdin, resolve and store
// the config, find the pod's socket address, and either reuse the live
// server already listening there or spawn a new one with the listener on
// fd 3. Returns exactly what to print on stdout. Blocking; runs once in the
// short-lived `start` process.
#pragma once

#include <string>

#include "base/logging.h"
#include "base/status.h"
#include "shim/cli/flags.h"

namespace hull::shim {

struct StartRequest {
  CommandLine cmd;  // ApplyEnvironmentDefaults already applied
  Environment env;
  std::string bundle;      // the working directory containerd gave `start`
  std::string stdin_data;  // all of stdin
  std::string self_exe;    // the binary to run as the server
};

// On success what to print (bootstrap_output.h, ChooseStartOutput): the
// plain "unix://..." address (containerd 1.6, 1.7; task API v2), JSON
// version 3 (a containerd 2.x daemon; task API v3), or, when stdin was a
// BootstrapParams (containerd 2.3+), a protobuf BootstrapResult version 3;
// the config's start_output may force one.
Result<std::string> RunStart(const StartRequest& req, const Logger& log);

// This binary, for re-executing it as the server: /proc/self/exe resolved,
// so the server's process name is the binary's, not "exe".
std::string SelfExecutable();

}  // namespace hull::shim
