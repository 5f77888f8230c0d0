// hull-agent's command line; the agent itself is agent.h.
//
//   hull-agent [--port PATH | --port-name NAME] [--init | --no-init]
//              [--power-off | --no-power-off] [--modules FILE]
//              [--runtime PATH] [--runtime-root DIR] [--state-dir DIR]
//
// As PID 1 (the guest's /init) the defaults are right: --init --power-off,
// the virtio-serial port named hull.agent.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "agent/agent.h"

int main(int argc, char** argv) {
  hull::agent::AgentOptions options;
  options.init = ::getpid() == 1;
  options.power_off = ::getpid() == 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hull-agent: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--port") {
      options.port_path = value();
    } else if (arg == "--port-name") {
      options.port_name = value();
    } else if (arg == "--runtime") {
      options.runtime = value();
    } else if (arg == "--runtime-root") {
      options.runtime_root = value();
    } else if (arg == "--state-dir") {
      options.state_dir = value();
    } else if (arg == "--modules") {
      options.modules_list = value();
    } else if (arg == "--init") {
      options.init = true;
    } else if (arg == "--no-init") {
      options.init = false;
    } else if (arg == "--power-off") {
      options.power_off = true;
    } else if (arg == "--no-power-off") {
      options.power_off = false;
    } else if (getpid() == 1) {
      // The kernel passes unknown command-line words to init: ignore them.
      continue;
    } else {
      std::fprintf(stderr, "hull-agent: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  return hull::agent::RunAgent(options);
}
