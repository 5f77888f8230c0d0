// PipeIo and TerminalIo: the two ProcessIo implementations. PipeIo gives the
// process pipes (or a logging binary's pipes directly) and copies them to the
// FIFOs or file; TerminalIo hands the runtime a console socket and copies
// between the pty master and the FIFOs. Both are built by ProcessIo::Create
// from parts it has already opened. Loop thread only.
#pragma once

#include <memory>

#include "base/event_loop.h"
#include "runtime/console_socket.h"
#include "shim/stdio/outputs_internal.h"
#include "shim/stdio/process_io.h"
#include "shim/stdio/stdio_files_internal.h"

namespace hull::shim::stdio {

using runtime::ConsoleSocket;
using runtime::ProcessStdio;

// Makes the process's pipes, and fchowns its ends to io_uid/io_gid when
// either is set.
Result<std::unique_ptr<ProcessIo>> MakePipeIo(EventLoop& loop, const StdioContext& context,
                                              StdinFifo stdin_fifo, Outputs outputs);

// A failing output sink is reported through context.on_output_error, as for
// pipes (stream "terminal").
Result<std::unique_ptr<ProcessIo>> MakeTerminalIo(EventLoop& loop, const StdioContext& context,
                                                  StdinFifo stdin_fifo, Outputs outputs,
                                                  std::unique_ptr<ConsoleSocket> console);

}  // namespace hull::shim::stdio
