#include "agent/guest_stdio.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

// The console socket the shim uses for runc and crun (--console-socket),
// shared rather than written twice; the agent links hull_shim's archive.
#include "runtime/console_socket.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;

Status SetNonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoError("fcntl(O_NONBLOCK)");
  }
  return Status::Ok();
}

// A pipe: {read end, write end}, close-on-exec; the agent's end nonblocking.
Status MakePipe(UniqueFd& read_end, UniqueFd& write_end, bool agent_reads) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return SetNonblocking(agent_reads ? fds[0] : fds[1]);
}

}  // namespace

void OutputStream::Attach(int fd, bool is_pty, std::function<void()> on_eof) {
  fd_ = fd;
  is_pty_ = is_pty;
  attached_ = true;
  on_eof_ = std::move(on_eof);
  if (fd_ < 0) SetEof();
  Serve();
}

void OutputStream::Read(const ttrpc::CallContext& context, uint32_t max_bytes,
                        ttrpc::TypedResponder<pb::ReadStreamResponse> responder) {
  if (max_bytes == 0) max_bytes = kDefaultReadBytes;
  max_bytes = std::min(max_bytes, kMaxReadBytes);
  if (eof_) {
    pb::ReadStreamResponse resp;
    resp.set_eof(true);
    return responder.Reply(resp);
  }
  polls_.Park(context, std::move(responder), max_bytes);
  Serve();
}

void OutputStream::Serve() {
  if (!attached_ || eof_) return;
  std::string buffer;
  while (auto* waiter = polls_.Front()) {
    buffer.resize(waiter->max_bytes);
    ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      // Nothing yet: the caller stays first in line.
      if (!watch_.active()) {
        watch_ = loop_.WatchFd(fd_, kReadable, [this](uint32_t) { Serve(); });
      }
      return;
    }
    auto taken = polls_.Take();
    pb::ReadStreamResponse resp;
    if (n > 0) {
      resp.set_data(buffer.data(), static_cast<size_t>(n));
      taken->responder.Reply(resp);
      continue;
    }
    // 0: every writer has closed it. EIO on a pty master: the terminal's
    // last holder has gone. Any other error ends the stream too.
    resp.set_eof(true);
    taken->responder.Reply(resp);
    SetEof();
    return;
  }
  // Nobody listens: stop watching, or a readable pipe would spin the loop.
  watch_.Reset();
}

void OutputStream::SetEof() {
  eof_ = true;
  watch_.Reset();
  fd_ = -1;
  if (auto on_eof = std::exchange(on_eof_, nullptr)) on_eof();
  polls_.AnswerAll([](ttrpc::TypedResponder<pb::ReadStreamResponse>& r) {
    pb::ReadStreamResponse resp;
    resp.set_eof(true);
    r.Reply(resp);
  });
}

void OutputStream::FailAll(const Status& status) {
  watch_.Reset();
  polls_.AnswerAll([&](ttrpc::TypedResponder<pb::ReadStreamResponse>& r) { r.Fail(status); });
}

GuestStdio::GuestStdio(EventLoop& loop)
    : loop_(loop),
      out_(std::make_unique<OutputStream>(loop)),
      err_(std::make_unique<OutputStream>(loop)) {}

GuestStdio::~GuestStdio() = default;

Result<std::unique_ptr<GuestStdio>> GuestStdio::Create(EventLoop& loop, const pb::Stdio& request,
                                                       const std::string& dir) {
  std::unique_ptr<GuestStdio> io(new GuestStdio(loop));
  io->terminal_ = request.terminal();
  io->stdin_wanted_ = request.stdin();
  if (io->terminal_) {
    auto console = runtime::ConsoleSocket::Create(dir);
    if (!console) return console.error().WithContext("console socket");
    io->console_ = std::move(*console);
    return io;
  }
  if (request.stdin()) HULL_RETURN_IF_ERROR(MakePipe(io->stdin_r_, io->stdin_w_, false));
  if (request.stdout()) HULL_RETURN_IF_ERROR(MakePipe(io->stdout_r_, io->stdout_w_, true));
  if (request.stderr()) HULL_RETURN_IF_ERROR(MakePipe(io->stderr_r_, io->stderr_w_, true));
  GuestStdio* self = io.get();
  io->out_->Attach(io->stdout_r_ ? io->stdout_r_.get() : -1, false,
                   [self] { self->stdout_r_.reset(); });
  io->err_->Attach(io->stderr_r_ ? io->stderr_r_.get() : -1, false,
                   [self] { self->stderr_r_.reset(); });
  return io;
}

runtime::ProcessStdio GuestStdio::ForRuntime() const {
  runtime::ProcessStdio io;
  if (console_) {
    io.console_socket = console_->path();
    return io;
  }
  io.stdin_fd = stdin_r_ ? stdin_r_.get() : -1;
  io.stdout_fd = stdout_w_ ? stdout_w_.get() : -1;
  io.stderr_fd = stderr_w_ ? stderr_w_.get() : -1;
  return io;
}

void GuestStdio::ProcessStarted() {
  stdin_r_.reset();
  stdout_w_.reset();
  stderr_w_.reset();
}

void GuestStdio::ReceiveMaster(std::function<void(Status)> on_master) {
  if (!console_) return on_master(InternalError("no console socket"));
  console_->Receive(loop_, [this, on_master = std::move(on_master)](Result<UniqueFd> master) {
    // The socket's file is gone; the object may go after this callback.
    loop_.Post([this] { console_.reset(); });
    if (!master) return on_master(master.error().WithContext("receive the pty master"));
    master_ = std::move(*master);
    Status s = SetNonblocking(master_.get());
    if (!s.ok()) return on_master(s);
    // Once the terminal's output has ended nothing else can use it.
    out_->Attach(master_.get(), true, [this] { master_.reset(); });
    err_->Attach(-1, false);
    on_master(Status::Ok());
  });
}

Result<uint32_t> GuestStdio::WriteStdin(const std::string& data) {
  if (!stdin_wanted_) return FailedPreconditionError("the process was started without stdin");
  if (stdin_closed_) return FailedPreconditionError("stdin is closed");
  int fd = terminal_ ? master_.get() : stdin_w_.get();
  if (fd < 0) return FailedPreconditionError("stdin is not open (the process has exited)");
  if (data.empty()) return 0u;
  ssize_t n = ::write(fd, data.data(), data.size());
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return 0u;
    // EPIPE: the process has closed its stdin or exited.
    return ErrnoError("write stdin");
  }
  return static_cast<uint32_t>(n);
}

void GuestStdio::ProcessExited() {
  if (!terminal_) stdin_w_.reset();
}

Status GuestStdio::CloseStdin() {
  if (stdin_closed_) return Status::Ok();
  stdin_closed_ = true;
  // A terminal's master also carries the output: it stays open.
  stdin_w_.reset();
  return Status::Ok();
}

Status GuestStdio::Resize(uint32_t rows, uint32_t columns) {
  if (!terminal_) return FailedPreconditionError("the process has no terminal");
  if (!master_) return FailedPreconditionError("the terminal is not open");
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(columns);
  if (::ioctl(master_.get(), TIOCSWINSZ, &ws) != 0) return ErrnoError("ioctl(TIOCSWINSZ)");
  return Status::Ok();
}

void GuestStdio::FailAll(const Status& status) {
  out_->FailAll(status);
  err_->FailAll(status);
}

}  // namespace hull::agent
