// Stdio URIs: turns containerd's stdin/stdout/stderr strings into a plan
// (which mode, which paths, which logging binary with which arguments).
// Pure string work, no I/O: every malformed or unsupported string is an
// InvalidArgument here, before anything is opened or spawned.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "shim/stdio/process_io.h"

namespace hull::shim::stdio {

// One parsed URI. A plain path (no scheme) has an empty scheme and the path
// verbatim; a URI's path and query are percent-decoded.
struct Uri {
  std::string scheme;  // lower case
  std::string host;    // what sits between "//" and the path; hull wants none
  std::string path;
  // In order of appearance; a key without '=' has an empty value.
  std::vector<std::pair<std::string, std::string>> query;
};

Result<Uri> ParseUri(std::string_view text);

// Where the output goes, by the scheme of stdout.
enum class OutputMode {
  kNone,    // stdout and stderr empty: the runtime gives /dev/null
  kFifo,    // no scheme or fifo://: FIFOs (or existing files) at the paths
  kFile,    // file:///abs: both streams appended to one file
  kBinary,  // binary:// or binary-v2://: a logging binary reads them
};

struct LoggerSpec {
  std::string path;               // absolute
  std::vector<std::string> args;  // k1, v1, k2, v2, ... (first value of each key)
  bool v2 = false;                // binary-v2: readiness needs one byte, not just EOF
};

struct StdioPlan {
  std::string stdin_path;  // a FIFO; empty: no stdin
  OutputMode mode = OutputMode::kNone;
  // kFifo: either may be empty. kFile: the file in stdout_path, and in
  // stderr_path too when stderr was asked for. Empty for kNone and kBinary.
  std::string stdout_path;
  std::string stderr_path;
  LoggerSpec logger;  // kBinary
  bool terminal = false;
};

// A terminal has no stderr (it shares the pty), so the stderr string is
// ignored when `config.terminal` is set, as containerd's shim does.
Result<StdioPlan> PlanStdio(const StdioConfig& config);

}  // namespace hull::shim::stdio
