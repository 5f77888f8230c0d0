// RunServer: the shim's serve mode, the long-lived process `start` spawned.
// Builds the one context (loop, reaper, log, publisher), serves the Task API
// and the Sandbox API on the inherited listener until Shutdown (ShutdownSandbox
// for a pod the Sandbox API created) or SIGTERM, then removes its
// socket and returns the process exit code.
#pragma once

#include "shim/cli/args.h"

namespace hull::shim {

int RunServer(const ServerArgs& args);

}  // namespace hull::shim
