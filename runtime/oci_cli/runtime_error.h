// What a failed runtime call says, as a Status: the runtime's own message
// (the last error its JSON log gained during the call, else its stderr, else
// the exit status), with a code chosen by the flavour's message patterns so
// that containerd sees NotFound/AlreadyExists/FailedPrecondition where the
// runtime meant it. Pure functions plus LogCursor, which reads the log file.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"
#include "runtime/oci_cli/flavour.h"

namespace hull::runtime::oci_cli {

// The `msg` of the last "error"/"fatal" entry in runc/crun JSON log lines
// (one JSON object per line, unparsable lines skipped); empty if none.
std::string LastLoggedError(std::string_view json_lines);

// The message for a call that exited with `exit_status`: LastLoggedError of
// what the log gained, else the last non-empty line of stderr, else
// "exit status N".
std::string FailureMessage(std::string_view log_tail, std::string_view stderr_text,
                           int exit_status);

// `message` with the code the flavour's patterns give it (Unknown when none
// matches). `state_dir` (<root>/<id>) fills "{state}" in the patterns.
Status ClassifyFailure(const Flavour& flavour, std::string_view state_dir, std::string message);

// Whether a failed kill's message means the process had already exited.
bool IsProcessGone(const Flavour& flavour, std::string_view message);

// Where a runtime's JSON log ends now, so that after the call only what the
// call appended is read (the log accumulates every call of the container).
class LogCursor {
 public:
  // Records the current size of `path` (0 if it does not exist yet; an empty
  // path reads nothing).
  static LogCursor At(std::string path);
  // What was appended since At(), at most the last 64 KiB of it.
  std::string ReadNew() const;

 private:
  std::string path_;
  off_t offset_ = 0;
};

}  // namespace hull::runtime::oci_cli
