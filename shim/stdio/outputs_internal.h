// Outputs: where a process's stdout and stderr go, opened from the plan: the
// FIFOs (or existing files), the file:// log file, or the pipes of a logging
// binary. The ProcessIo owns its Outputs; the sinks are borrowed by the pumps
// that write into them.
#pragma once

#include <memory>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/unique_fd.h"
#include "shim/stdio/binary_logger_internal.h"
#include "shim/stdio/process_io.h"
#include "shim/stdio/stdio_uri_internal.h"

namespace hull::shim::stdio {

struct Outputs {
  // Declared first so it is destroyed last: the logger's pipes close (EOF)
  // before it is told to stop.
  std::unique_ptr<BinaryLogger> logger;
  UniqueFd out;             // invalid: no stdout
  UniqueFd err;             // invalid: no stderr, or it shares `out`
  bool err_is_out = false;  // stdout and stderr go to the same FIFO or file
  // The sinks are pipes made for this process alone (a logging binary's):
  // the runtime may hand them to the process as they are, with no copying.
  bool direct = false;

  int out_fd() const { return out.get(); }
  int err_fd() const { return err_is_out ? out.get() : err.get(); }
};

// Opens the sinks `plan` names. A terminal has no stderr. For a logging
// binary this spawns it; the caller waits for it to be ready.
Result<Outputs> OpenOutputs(EventLoop& loop, Reaper& reaper, const StdioPlan& plan,
                            const StdioContext& context);

}  // namespace hull::shim::stdio
