// TerminalIo: stdio through a pty. The runtime creates the pty and sends its
// master over the console socket; the shim then copies stdin FIFO -> master
// and master -> stdout FIFO, file or logging binary. There is no stderr.
// The console is shut down (master closed) when output ends, i.e. when the
// process and everything holding the pty's slave have gone, and also when
// stdin reaches EOF, as containerd's shim does: the process sees a hangup.
#include <sys/ioctl.h>
#include <termios.h>

#include <algorithm>
#include <optional>

#include "shim/stdio/drain_waiters_internal.h"
#include "shim/stdio/process_io_internal.h"
#include "shim/stdio/pump_internal.h"

namespace hull::shim::stdio {
namespace {

class TerminalIo final : public ProcessIo {
 public:
  TerminalIo(EventLoop& loop, const StdioContext& context, StdinFifo stdin_fifo, Outputs outputs,
             std::unique_ptr<ConsoleSocket> console)
      : loop_(loop),
        container_id_(context.container_id),
        on_output_error_(context.on_output_error),
        outputs_(std::move(outputs)),
        stdin_(std::move(stdin_fifo)),
        console_(std::move(console)),
        waiters_(loop) {
    if (outputs_.logger) outputs_.logger->OnExit([this] { CheckDrained(); });
  }

  ProcessStdio runtime_stdio() const override {
    ProcessStdio stdio;
    if (console_) stdio.console_socket = console_->path();
    return stdio;
  }

  void RuntimeStarted() override {
    if (started_ || !console_) return;
    started_ = true;
    receiving_ = true;
    console_->Receive(loop_, [this](Result<UniqueFd> master) { OnMaster(std::move(master)); });
  }

  void RuntimeFailed() override {
    console_.reset();
    receiving_ = false;
    in_pump_.reset();
    out_pump_.reset();
    master_.reset();
    stdin_ = StdinFifo();
    outputs_.out.reset();
    outputs_.err.reset();
    outputs_.logger.reset();
    CheckDrained();
  }

  void CloseStdin() override { stdin_.holder.reset(); }

  Status Resize(uint32_t width, uint32_t height) override {
    winsize size{};
    size.ws_col = static_cast<unsigned short>(std::min<uint32_t>(width, 0xffff));
    size.ws_row = static_cast<unsigned short>(std::min<uint32_t>(height, 0xffff));
    size_ = size;
    if (master_ && ::ioctl(master_.get(), TIOCSWINSZ, &size) != 0) {
      return ErrnoError("resize", "console");
    }
    return Status::Ok();
  }

  void Drain(std::chrono::milliseconds timeout, std::function<void()> done) override {
    waiters_.Add(timeout, Drained(), std::move(done));
  }

 private:
  void OnMaster(Result<UniqueFd> master);
  void OnStdinDone();
  void ShutDownConsole();
  bool Drained() const {
    if (!started_) return true;  // nothing was ever copied
    return !receiving_ && !out_pump_ && (!outputs_.logger || outputs_.logger->exited());
  }
  void CheckDrained() {
    if (Drained()) waiters_.Notify();
  }

  // Member order is destruction order reversed: pumps go before the
  // descriptors they borrow, sinks before the logger that reads them.
  EventLoop& loop_;
  const std::string container_id_;
  const std::function<void(const Status&)> on_output_error_;
  Outputs outputs_;
  StdinFifo stdin_;
  std::unique_ptr<ConsoleSocket> console_;
  UniqueFd master_;
  std::optional<winsize> size_;  // the last Resize, for a master still to come
  bool started_ = false;
  bool receiving_ = false;  // waiting for the master on the console socket
  std::unique_ptr<Pump> in_pump_, out_pump_;
  DrainWaiters waiters_;
};

void TerminalIo::OnMaster(Result<UniqueFd> master) {
  receiving_ = false;
  console_.reset();  // its file is gone already; it does nothing after calling us
  if (master) {
    master_ = std::move(*master);
    if (!SetNonBlocking(master_.get()).ok()) master_.reset();
  }
  if (!master_) {
    // No console will come: nothing to copy, and a logger should see EOF.
    ShutDownConsole();
    return;
  }
  if (size_) (void)::ioctl(master_.get(), TIOCSWINSZ, &*size_);
  out_pump_ = Pump::Start(loop_, "console output", master_.get(), outputs_.out_fd(),
                          [this](Status) { ShutDownConsole(); });
  // A failing sink (ENOSPC under a file:// log) is logged; the pump keeps
  // draining the master, so the process never blocks on the pty.
  out_pump_->ReportFirstErrorTo(on_output_error_, container_id_, "terminal");
  if (stdin_.read) {
    in_pump_ = Pump::Start(loop_, "console input", stdin_.read.get(), master_.get(),
                           [this](Status) { OnStdinDone(); });
  }
}

void TerminalIo::OnStdinDone() {
  in_pump_.reset();
  stdin_ = StdinFifo();
  // Write out what the master has already given, then close it.
  if (out_pump_) out_pump_->Finish();
}

void TerminalIo::ShutDownConsole() {
  in_pump_.reset();
  out_pump_.reset();
  master_.reset();
  outputs_.out.reset();  // a logging binary sees EOF on fd 3
  CheckDrained();
}

}  // namespace

Result<std::unique_ptr<ProcessIo>> MakeTerminalIo(EventLoop& loop, const StdioContext& context,
                                                  StdinFifo stdin_fifo, Outputs outputs,
                                                  std::unique_ptr<ConsoleSocket> console) {
  // A terminal has no stderr: a logging binary sees EOF on fd 4 at once.
  outputs.err.reset();
  outputs.err_is_out = false;
  if (!outputs.out) {
    // Nobody wants the output, but the process must not block on a full pty.
    HULL_ASSIGN_OR_RETURN(outputs.out, OpenDevNull());
  }
  // The shim alone writes this sink (a logger's pipe included), so it can be
  // nonblocking.
  HULL_RETURN_IF_ERROR(SetNonBlocking(outputs.out.get()));
  return std::unique_ptr<ProcessIo>(std::make_unique<TerminalIo>(
      loop, context, std::move(stdin_fifo), std::move(outputs), std::move(console)));
}

}  // namespace hull::shim::stdio
