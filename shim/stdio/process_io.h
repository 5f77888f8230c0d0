// ProcessIo: the stdio of one container process, as containerd asked for it
// (FIFOs, file://, binary:// or binary-v2:// logging binaries, or a terminal),
// wired to what the runtime hands the process. Copies run on the event loop;
// nothing blocks. Owned by the process it belongs to. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "runtime/backend.h"

namespace hull::shim {

struct StdioConfig {
  std::string stdin_path;  // containerd's strings, as received
  std::string stdout_path;
  std::string stderr_path;
  bool terminal = false;
};

struct StdioContext {
  std::string container_id;
  std::string ns;
  uint32_t io_uid = 0;  // owner of the container's ends
  uint32_t io_gid = 0;
  std::string work_dir;  // where a console socket may be created
  // A logging binary still running when its ProcessIo goes gets SIGTERM, then
  // SIGKILL this much later (containerd's runc shim waits 12 s).
  std::chrono::milliseconds logger_stop_grace{12000};
  // Told once per output stream about its first error (ENOSPC under a file://
  // log, a FIFO whose reader went away), when it happens. The stream's output
  // is discarded from then on and its pipe still drained, so the process
  // never blocks on it. Optional; the shim logs it.
  std::function<void(const Status&)> on_output_error;
};

// An on_output_error that logs a warning to `log` (which must outlive it).
std::function<void(const Status&)> LogOutputErrors(const Logger& log);

class ProcessIo {
 public:
  // Sets up the process's stdio: opens the FIFOs or file, starts a logging
  // binary and waits for it to say it is ready, or opens a console socket.
  // InvalidArgument for a bad URI (and then nothing was opened or spawned).
  // Calls `done` once, on a later loop turn, never inside Create. While a
  // logging binary is getting ready, the half-built ProcessIo is owned by
  // that wait; the loop and reaper must outlive it.
  static void Create(EventLoop& loop, Reaper& reaper, const StdioConfig& config,
                     const StdioContext& context,
                     std::function<void(Result<std::unique_ptr<ProcessIo>>)> done);
  // Closes everything and removes the console socket. A logging binary still
  // running is handed to the reaper (SIGTERM, SIGKILL after the grace). A
  // pending Drain is dropped without calling its `done`.
  virtual ~ProcessIo() = default;

  // What to give the runtime for this process.
  virtual runtime::ProcessStdio runtime_stdio() const = 0;
  // The runtime's create/exec returned: close the container's ends held by
  // the shim and start copying (for a terminal, once the pty master arrives
  // on the console socket).
  virtual void RuntimeStarted() = 0;
  // The runtime call failed: release everything.
  virtual void RuntimeFailed() = 0;
  // CloseIO: stop holding stdin open, so EOF reaches the process once the
  // client's writer has closed too. With a terminal, stdin EOF shuts the
  // console down (as containerd's shim does): the process sees a hangup.
  virtual void CloseStdin() = 0;
  // ResizePty; OK and nothing when there is no terminal. A size set before
  // the pty master has arrived is applied when it does.
  virtual Status Resize(uint32_t width, uint32_t height) = 0;
  // The process has exited: call `done` when its output is copied out, or
  // after `timeout`, whichever comes first. "Copied out": the output pipes
  // (or pty) reached EOF and everything read was written; with a logging
  // binary, the logger has also exited. `done` always runs on a later loop
  // turn. Several Drains may be pending at once.
  virtual void Drain(std::chrono::milliseconds timeout, std::function<void()> done) = 0;
};

}  // namespace hull::shim
