// BinaryLogger: see binary_logger_internal.h.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/spawn.h"
#include "shim/stdio/binary_logger_internal.h"

namespace hull::shim::stdio {
namespace {

// A logger being stopped after its ProcessIo is gone. The reaper owns it
// through the exit handler; the handler (and with it the Stopper) is dropped
// once the exit is delivered, or with the reaper at shutdown. The reaper is
// built on the loop and dies before it, so the timer is always released
// while the loop still exists.
struct Stopper {
  explicit Stopper(pid_t p) : pid(p) {}
  ~Stopper() {
    // Only reached unexited when the reaper itself goes away (shutdown): do
    // not leave the logger running, and do not call into the dying reaper.
    if (!exited) ::kill(pid, SIGKILL);
  }
  pid_t pid;
  bool exited = false;
  EventHandle kill_timer;
};

void StopGracefully(EventLoop& loop, Reaper& reaper, pid_t pid, std::chrono::milliseconds grace) {
  auto stopper = std::make_shared<Stopper>(pid);
  // Until the exit is reaped the pid cannot be reused, so both signals reach
  // the logger and nothing else.
  ::kill(pid, SIGTERM);
  Stopper* raw = stopper.get();
  stopper->kill_timer = loop.AddTimer(grace, [raw] { ::kill(raw->pid, SIGKILL); });
  // Replaces the BinaryLogger's own handler.
  reaper.Watch(pid, [stopper](int) {
    stopper->exited = true;
    stopper->kill_timer.Reset();
  });
}

}  // namespace

Result<BinaryLogger::Started> BinaryLogger::Start(EventLoop& loop, Reaper& reaper,
                                                  const LoggerSpec& spec,
                                                  const std::string& container_id,
                                                  const std::string& ns,
                                                  std::chrono::milliseconds stop_grace) {
  // Blocking pipes: the logger reads its ends as ordinary files, and the
  // write ends may go to the container as they are.
  HULL_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  HULL_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  HULL_ASSIGN_OR_RETURN(Pipe wait, MakePipe());
  HULL_RETURN_IF_ERROR(SetNonBlocking(wait.read.get()));

  SpawnOptions options;
  options.argv.push_back(spec.path);
  options.argv.insert(options.argv.end(), spec.args.begin(), spec.args.end());
  options.env =
      std::vector<std::string>{"CONTAINER_ID=" + container_id, "CONTAINER_NAMESPACE=" + ns};
  options.fds = {{3, out.read.get()}, {4, err.read.get()}, {5, wait.write.get()}};
  Result<pid_t> pid = reaper.Spawn(options);
  if (!pid) return pid.error().WithContext("start logging binary");

  std::unique_ptr<BinaryLogger> logger(new BinaryLogger(loop, reaper, spec, stop_grace));
  logger->pid_ = *pid;
  logger->wait_ = std::move(wait.read);
  // Nothing has run on the loop since Spawn, so the exit cannot have been
  // reaped yet and the handler is registered, not posted.
  BinaryLogger* self = logger.get();
  reaper.Watch(*pid, [self](int) {
    self->exited_ = true;
    std::function<void()> on_exit = std::exchange(self->on_exit_, nullptr);
    if (on_exit) on_exit();
  });
  // Only the logger holds the read ends and the wait pipe's write end now,
  // so EOF on fd 5 means the logger closed it (or exited).
  return Started{std::move(logger), std::move(out.write), std::move(err.write)};
}

BinaryLogger::~BinaryLogger() {
  if (pid_ > 0 && !exited_) StopGracefully(loop_, reaper_, pid_, stop_grace_);
}

void BinaryLogger::WaitReady(std::function<void(Status)> on_ready) {
  on_ready_ = std::move(on_ready);
  wait_watch_ = loop_.WatchFd(wait_.get(), kReadable, [this](uint32_t) { OnWaitReadable(); });
}

void BinaryLogger::OnWaitReadable() {
  char byte;
  ssize_t n = ::read(wait_.get(), &byte, 1);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  Status status;
  if (n < 0) {
    status = ErrnoError("read readiness of logging binary", spec_.path);
  } else if (n == 0 && spec_.v2) {
    status = UnknownError("logging binary " + spec_.path +
                          " closed fd 5 without writing its ready byte (binary-v2)");
  }
  wait_watch_.Reset();
  wait_.reset();
  std::function<void(Status)> on_ready = std::exchange(on_ready_, nullptr);
  on_ready(status);  // may destroy us: nothing after this
}

}  // namespace hull::shim::stdio
