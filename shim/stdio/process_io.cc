// ProcessIo::Create: plans from containerd's strings, opens the parts in an
// order that leaves nothing behind on failure (the URIs are checked before
// anything is opened; a logging binary, the one part that is a process, is
// started last), then builds the PipeIo or TerminalIo and, for a logging
// binary, completes once the logger says it is ready.
#include "shim/stdio/process_io.h"

#include "shim/stdio/outputs_internal.h"
#include "shim/stdio/process_io_internal.h"
#include "shim/stdio/stdio_files_internal.h"
#include "shim/stdio/stdio_uri_internal.h"

namespace hull::shim {
namespace {

struct Built {
  std::unique_ptr<ProcessIo> io;
  stdio::BinaryLogger* logger = nullptr;  // owned by `io`; set when it must get ready
};

Result<Built> Build(EventLoop& loop, Reaper& reaper, const StdioConfig& config,
                    const StdioContext& context) {
  HULL_ASSIGN_OR_RETURN(stdio::StdioPlan plan, stdio::PlanStdio(config));
  stdio::StdinFifo stdin_fifo;
  if (!plan.stdin_path.empty()) {
    HULL_ASSIGN_OR_RETURN(stdin_fifo, stdio::OpenStdinFifo(plan.stdin_path));
  }
  std::unique_ptr<stdio::ConsoleSocket> console;
  if (plan.terminal) {
    // A confined server's bundles are not its to write: its TMPDIR then.
    HULL_ASSIGN_OR_RETURN(
        console, stdio::ConsoleSocket::Create(reaper.spawner() != nullptr ? "" : context.work_dir));
  }
  HULL_ASSIGN_OR_RETURN(stdio::Outputs outputs, stdio::OpenOutputs(loop, reaper, plan, context));
  Built built;
  built.logger = outputs.logger.get();
  if (plan.terminal) {
    HULL_ASSIGN_OR_RETURN(built.io, stdio::MakeTerminalIo(loop, context, std::move(stdin_fifo),
                                                          std::move(outputs), std::move(console)));
  } else {
    HULL_ASSIGN_OR_RETURN(
        built.io, stdio::MakePipeIo(loop, context, std::move(stdin_fifo), std::move(outputs)));
  }
  return built;
}

}  // namespace

void ProcessIo::Create(EventLoop& loop, Reaper& reaper, const StdioConfig& config,
                       const StdioContext& context,
                       std::function<void(Result<std::unique_ptr<ProcessIo>>)> done) {
  Result<Built> built = Build(loop, reaper, config, context);
  if (!built) {
    loop.Post([done = std::move(done), status = built.error()] { done(status); });
    return;
  }
  if (built->logger == nullptr) {
    // std::function must be copyable, a unique_ptr is not.
    auto io = std::make_shared<std::unique_ptr<ProcessIo>>(std::move(built->io));
    loop.Post([done = std::move(done), io] { done(std::move(*io)); });
    return;
  }
  // Until the logger is ready, the ProcessIo belongs to this wait.
  ProcessIo* pending = built->io.release();
  built->logger->WaitReady([pending, done = std::move(done)](Status ready) {
    std::unique_ptr<ProcessIo> io(pending);
    if (!ready.ok()) {
      io.reset();  // stops the logger and closes everything
      done(ready);
      return;
    }
    done(std::move(io));
  });
}

std::function<void(const Status&)> LogOutputErrors(const Logger& log) {
  return [&log](const Status& error) { log.Warn("{}", error.ToString()); };
}

}  // namespace hull::shim
