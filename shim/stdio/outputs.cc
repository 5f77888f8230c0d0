// OpenOutputs: see outputs_internal.h.
#include "shim/stdio/outputs_internal.h"
#include "shim/stdio/stdio_files_internal.h"

namespace hull::shim::stdio {

Result<Outputs> OpenOutputs(EventLoop& loop, Reaper& reaper, const StdioPlan& plan,
                            const StdioContext& context) {
  Outputs outputs;
  switch (plan.mode) {
    case OutputMode::kNone: break;
    case OutputMode::kFifo: {
      if (!plan.stdout_path.empty()) {
        HULL_ASSIGN_OR_RETURN(outputs.out, OpenOutputPath(plan.stdout_path, reaper.spawner()));
      }
      if (plan.stderr_path.empty()) break;
      if (plan.stderr_path == plan.stdout_path) {
        outputs.err_is_out = true;  // one writer, as containerd's shim shares it
      } else {
        HULL_ASSIGN_OR_RETURN(outputs.err, OpenOutputPath(plan.stderr_path, reaper.spawner()));
      }
      break;
    }
    case OutputMode::kFile: {
      HULL_ASSIGN_OR_RETURN(outputs.out, OpenLogFile(plan.stdout_path, reaper.spawner()));
      outputs.err_is_out = !plan.stderr_path.empty();
      break;
    }
    case OutputMode::kBinary: {
      HULL_ASSIGN_OR_RETURN(BinaryLogger::Started started,
                            BinaryLogger::Start(loop, reaper, plan.logger, context.container_id,
                                                context.ns, context.logger_stop_grace));
      outputs.logger = std::move(started.logger);
      outputs.out = std::move(started.stdout_write);
      outputs.err = std::move(started.stderr_write);
      outputs.direct = true;
      break;
    }
  }
  return outputs;
}

}  // namespace hull::shim::stdio
