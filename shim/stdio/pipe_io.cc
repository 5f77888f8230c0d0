// PipeIo: stdio through pipes, for a process without a terminal. The process
// gets one pipe per stream it has; the shim copies stdin FIFO -> pipe and
// pipe -> FIFO or file with Pumps. A logging binary's pipes go to the process
// directly, since the logger reads them itself.
#include <unistd.h>

#include <string>

#include "shim/stdio/drain_waiters_internal.h"
#include "shim/stdio/process_io_internal.h"
#include "shim/stdio/pump_internal.h"

namespace hull::shim::stdio {
namespace {

class PipeIo final : public ProcessIo {
 public:
  PipeIo(EventLoop& loop, const StdioContext& context, StdinFifo stdin_fifo, Outputs outputs)
      : loop_(loop),
        container_id_(context.container_id),
        on_output_error_(context.on_output_error),
        outputs_(std::move(outputs)),
        stdin_(std::move(stdin_fifo)),
        waiters_(loop) {
    if (outputs_.logger) outputs_.logger->OnExit([this] { CheckDrained(); });
  }

  Status MakePipes(const StdioContext& context);

  ProcessStdio runtime_stdio() const override {
    ProcessStdio stdio;
    stdio.stdin_fd = child_in_.get();
    stdio.stdout_fd = outputs_.direct ? outputs_.out.get() : child_out_.get();
    stdio.stderr_fd = outputs_.direct ? outputs_.err.get() : child_err_.get();
    return stdio;
  }

  void RuntimeStarted() override;
  void RuntimeFailed() override;
  void CloseStdin() override { stdin_.holder.reset(); }
  Status Resize(uint32_t, uint32_t) override { return Status::Ok(); }
  void Drain(std::chrono::milliseconds timeout, std::function<void()> done) override {
    waiters_.Add(timeout, Drained(), std::move(done));
  }

 private:
  bool Drained() const;
  void CheckDrained() {
    if (Drained()) waiters_.Notify();
  }
  void OnStdinDone();
  // Closes each sink whose pumps are done, so that a client reading a FIFO
  // sees EOF once the process's output is copied (CRI's ExecSync waits for
  // it), not only when the process is deleted.
  void CloseFinishedSinks();
  // Passes the first error of `pump`'s stream to on_output_error_.
  void ReportErrors(Pump& pump, const char* stream);

  // Member order is destruction order reversed: pumps go before the
  // descriptors they borrow, sinks before the logger that reads them.
  EventLoop& loop_;
  const std::string container_id_;
  const std::function<void(const Status&)> on_output_error_;
  Outputs outputs_;
  StdinFifo stdin_;
  // The process's ends, held until the runtime has passed them on.
  UniqueFd child_in_, child_out_, child_err_;
  // The shim's ends, nonblocking.
  UniqueFd in_write_, out_read_, err_read_;
  bool started_ = false;
  std::unique_ptr<Pump> in_pump_, out_pump_, err_pump_;
  DrainWaiters waiters_;
};

Status PipeIo::MakePipes(const StdioContext& context) {
  // Blocking ends for the process (it shares their file descriptions), and
  // nonblocking ones for the shim.
  auto make = [](UniqueFd& child, UniqueFd& shim, bool child_reads) -> Status {
    HULL_ASSIGN_OR_RETURN(Pipe pipe, MakePipe());
    child = std::move(child_reads ? pipe.read : pipe.write);
    shim = std::move(child_reads ? pipe.write : pipe.read);
    return SetNonBlocking(shim.get());
  };
  if (stdin_.read) HULL_RETURN_IF_ERROR(make(child_in_, in_write_, true));
  if (!outputs_.direct) {
    if (outputs_.out_fd() >= 0) HULL_RETURN_IF_ERROR(make(child_out_, out_read_, false));
    if (outputs_.err_fd() >= 0) HULL_RETURN_IF_ERROR(make(child_err_, err_read_, false));
  }
  if (context.io_uid == 0 && context.io_gid == 0) return Status::Ok();
  // The process may run as another user (user namespaces): let it reopen its
  // stdio through /proc/self/fd.
  ProcessStdio stdio = runtime_stdio();
  for (int fd : {stdio.stdin_fd, stdio.stdout_fd, stdio.stderr_fd}) {
    if (fd >= 0 && ::fchown(fd, context.io_uid, context.io_gid) != 0) {
      return ErrnoError("fchown stdio pipe to",
                        std::to_string(context.io_uid) + ":" + std::to_string(context.io_gid));
    }
  }
  return Status::Ok();
}

void PipeIo::RuntimeStarted() {
  if (started_) return;
  started_ = true;
  // The process has its ends now; only its exit (and its children's) may
  // close them, which is the EOF the pumps wait for.
  child_in_.reset();
  child_out_.reset();
  child_err_.reset();
  if (outputs_.direct) {
    outputs_.out.reset();
    outputs_.err.reset();
  }
  if (in_write_) {
    in_pump_ = Pump::Start(loop_, "stdin", stdin_.read.get(), in_write_.get(),
                           [this](Status) { OnStdinDone(); });
  }
  if (out_read_) {
    out_pump_ = Pump::Start(loop_, "stdout", out_read_.get(), outputs_.out_fd(), [this](Status) {
      out_pump_.reset();
      out_read_.reset();
      CloseFinishedSinks();
      CheckDrained();
    });
    ReportErrors(*out_pump_, "stdout");
  }
  if (err_read_) {
    err_pump_ = Pump::Start(loop_, "stderr", err_read_.get(), outputs_.err_fd(), [this](Status) {
      err_pump_.reset();
      err_read_.reset();
      CloseFinishedSinks();
      CheckDrained();
    });
    ReportErrors(*err_pump_, "stderr");
  }
}

void PipeIo::ReportErrors(Pump& pump, const char* stream) {
  pump.ReportFirstErrorTo(on_output_error_, container_id_, stream);
}

void PipeIo::CloseFinishedSinks() {
  if (outputs_.direct) return;  // the process wrote into them itself
  if (!out_pump_ && (!outputs_.err_is_out || !err_pump_)) outputs_.out.reset();
  if (!err_pump_) outputs_.err.reset();
}

void PipeIo::OnStdinDone() {
  // The client's stdin is finished: pass the EOF on to the process.
  in_pump_.reset();
  in_write_.reset();
  stdin_ = StdinFifo();
}

void PipeIo::RuntimeFailed() {
  in_pump_.reset();
  out_pump_.reset();
  err_pump_.reset();
  child_in_.reset();
  child_out_.reset();
  child_err_.reset();
  in_write_.reset();
  out_read_.reset();
  err_read_.reset();
  stdin_ = StdinFifo();
  outputs_.out.reset();
  outputs_.err.reset();
  outputs_.logger.reset();
  CheckDrained();
}

bool PipeIo::Drained() const {
  if (!started_) return true;  // nothing was ever copied
  return !out_pump_ && !err_pump_ && (!outputs_.logger || outputs_.logger->exited());
}

}  // namespace

Result<std::unique_ptr<ProcessIo>> MakePipeIo(EventLoop& loop, const StdioContext& context,
                                              StdinFifo stdin_fifo, Outputs outputs) {
  auto io = std::make_unique<PipeIo>(loop, context, std::move(stdin_fifo), std::move(outputs));
  HULL_RETURN_IF_ERROR(io->MakePipes(context));
  return std::unique_ptr<ProcessIo>(std::move(io));
}

}  // namespace hull::shim::stdio
