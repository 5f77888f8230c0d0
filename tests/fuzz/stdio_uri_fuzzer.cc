// The stdio URI parser and planner: stdin, stdout and stderr strings as
// containerd passes them (split on newlines), terminal from the first byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shim/stdio/stdio_uri_internal.h"

using namespace hull::shim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string parts[3];
  for (int i = 0; i < 3; ++i) {
    size_t nl = text.find('\n');
    parts[i] = std::string(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  (void)stdio::ParseUri(parts[1]);
  StdioConfig config{.stdin_path = parts[0],
                     .stdout_path = parts[1],
                     .stderr_path = parts[2],
                     .terminal = (data[0] & 1) != 0};
  auto plan = stdio::PlanStdio(config);
  if (plan && plan->mode == stdio::OutputMode::kBinary && plan->logger.path.empty()) {
    __builtin_trap();  // a logging binary always has a path
  }
  return 0;
}
