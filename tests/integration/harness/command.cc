#include "tests/integration/harness/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hull::itest {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Output a process's own children may still hold after it exits is read for
// at most this long.
constexpr auto kDrainAfterExit = 2s;

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

// Reads what is available from `fd` into `out`. Returns false (and resets the
// fd) at EOF or on a read error.
bool ReadSome(internal::Fd& fd, std::string& out) {
  char buf[65536];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n > 0) {
    out.append(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  fd.Reset();
  return false;
}

}  // namespace

std::string CommandResult::Describe() const {
  std::string s = "exit " + std::to_string(exit_code);
  if (timed_out) s += " (timed out)";
  s += "\nstdout: " + out + "\nstderr: " + err;
  return s;
}

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         const std::string& stdin_data, const std::vector<std::string>& extra_env) {
  CommandResult result;
  internal::Child child;
  std::string error;
  internal::SpawnOptions options{
      .argv = argv, .extra_env = extra_env, .pipe_stdin = true, .output_fd = -1};
  if (!internal::Spawn(options, &child, &error)) {
    result.exit_code = 127;
    result.err = error;
    return result;
  }

  const auto deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> drain_deadline;  // set once the process exited
  size_t written = 0;
  if (stdin_data.empty()) {
    child.stdin_w.Reset();
  } else {
    ::fcntl(child.stdin_w.get(), F_SETFL, O_NONBLOCK);
  }

  while (!drain_deadline || child.stdout_r.valid() || child.stderr_r.valid()) {
    auto until = drain_deadline ? std::min(deadline, *drain_deadline) : deadline;
    int wait_ms = MillisUntil(until);
    if (wait_ms == 0) break;

    pollfd fds[4];
    nfds_t n = 0;
    auto add = [&](const internal::Fd& fd, short events) -> pollfd* {
      if (!fd.valid()) return nullptr;
      fds[n] = pollfd{.fd = fd.get(), .events = events, .revents = 0};
      return &fds[n++];
    };
    pollfd* in = add(child.stdin_w, POLLOUT);
    pollfd* out = add(child.stdout_r, POLLIN);
    pollfd* err = add(child.stderr_r, POLLIN);
    pollfd* exited = drain_deadline ? nullptr : add(child.pidfd, POLLIN);
    if (::poll(fds, n, wait_ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (in != nullptr && in->revents != 0) {
      ssize_t w =
          ::write(child.stdin_w.get(), stdin_data.data() + written, stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (written == stdin_data.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) {
        child.stdin_w.Reset();
      }
    }
    if (out != nullptr && out->revents != 0) ReadSome(child.stdout_r, result.out);
    if (err != nullptr && err->revents != 0) ReadSome(child.stderr_r, result.err);
    if (exited != nullptr && exited->revents != 0) drain_deadline = Clock::now() + kDrainAfterExit;
  }

  if (!drain_deadline) {
    result.timed_out = true;
    ::kill(-child.pid, SIGKILL);
    ::kill(child.pid, SIGKILL);
  }
  result.exit_code = internal::Reap(child.pid);
  return result;
}

std::unique_ptr<BackgroundCommand> BackgroundCommand::Start(
    const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
    std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  std::unique_ptr<BackgroundCommand> cmd(new BackgroundCommand());
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    *error = "pipe2 failed";
    return nullptr;
  }
  cmd->wake_r_.Reset(wake[0]);
  cmd->wake_w_.Reset(wake[1]);
  internal::SpawnOptions options{
      .argv = argv, .extra_env = extra_env, .pipe_stdin = false, .output_fd = -1};
  if (!internal::Spawn(options, &cmd->child_, error)) return nullptr;
  cmd->reader_ = std::thread([c = cmd.get()] { c->ReadLoop(); });
  return cmd;
}

BackgroundCommand::~BackgroundCommand() {
  Stop();
}

void BackgroundCommand::ReadLoop() {
  bool draining = false;  // woken: read what is buffered, then quit
  while (child_.stdout_r.valid() || child_.stderr_r.valid()) {
    pollfd fds[3];
    nfds_t n = 0;
    int out_i = -1, err_i = -1;
    if (child_.stdout_r.valid()) {
      out_i = static_cast<int>(n);
      fds[n++] = pollfd{.fd = child_.stdout_r.get(), .events = POLLIN, .revents = 0};
    }
    if (child_.stderr_r.valid()) {
      err_i = static_cast<int>(n);
      fds[n++] = pollfd{.fd = child_.stderr_r.get(), .events = POLLIN, .revents = 0};
    }
    int wake_i = static_cast<int>(n);
    fds[n++] = pollfd{.fd = wake_r_.get(), .events = POLLIN, .revents = 0};

    int r = ::poll(fds, n, draining ? 0 : -1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // drained (or poll failed)
    if (fds[wake_i].revents != 0) draining = true;

    std::lock_guard lock(mu_);
    if (out_i >= 0 && fds[out_i].revents != 0 && !ReadSome(child_.stdout_r, out_)) {
      out_closed_ = true;
    }
    if (err_i >= 0 && fds[err_i].revents != 0) ReadSome(child_.stderr_r, err_);
    cv_.notify_all();
  }
  std::lock_guard lock(mu_);
  out_closed_ = true;
  cv_.notify_all();
}

std::string BackgroundCommand::Output() {
  std::lock_guard lock(mu_);
  return out_;
}

std::string BackgroundCommand::ErrorOutput() {
  std::lock_guard lock(mu_);
  return err_;
}

bool BackgroundCommand::WaitForOutput(std::string_view needle, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout,
               [&] { return out_.find(needle) != std::string::npos || out_closed_; });
  return out_.find(needle) != std::string::npos;
}

std::optional<int> BackgroundCommand::Wait(std::chrono::milliseconds timeout) {
  if (!exit_code_ && child_.pid > 0 && internal::WaitPidfd(child_.pidfd.get(), timeout)) {
    exit_code_ = internal::Reap(child_.pid);
    FinishReader();
  }
  return exit_code_;
}

int BackgroundCommand::Stop(std::chrono::milliseconds grace) {
  if (child_.pid <= 0) return -1;  // never started
  if (!exit_code_) exit_code_ = internal::TerminateAndReap(child_, grace);
  FinishReader();
  return *exit_code_;
}

void BackgroundCommand::FinishReader() {
  if (!reader_.joinable()) return;
  char byte = 0;
  (void)!::write(wake_w_.get(), &byte, 1);
  reader_.join();
}

}  // namespace hull::itest
