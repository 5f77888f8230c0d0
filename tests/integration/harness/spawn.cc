#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "tests/integration/harness/spawn_internal.h"

extern char** environ;

namespace hull::itest::internal {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) Reset(std::exchange(other.fd_, -1));
  return *this;
}

void Fd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

std::string KeyOf(const std::string& entry) {
  return entry.substr(0, entry.find('='));
}

std::vector<std::string> BuildEnv(const std::vector<std::string>& extra) {
  std::set<std::string> overridden;
  for (const auto& entry : extra) overridden.insert(KeyOf(entry));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (!overridden.contains(KeyOf(entry))) env.push_back(std::move(entry));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return true;
}

// Runs in the forked child: only async-signal-safe calls from here on.
[[noreturn]] void ExecChild(char** argv, char** envp, int in, int out, int err, int status_w) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);  // the test process ignores it; exec keeps SIG_IGN
  if (in < 0) in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
    int e = errno;
    (void)!::write(status_w, &e, sizeof(e));
    ::_exit(127);
  }
  ::execvpe(argv[0], argv, envp);
  int e = errno;
  (void)!::write(status_w, &e, sizeof(e));
  ::_exit(127);
}

}  // namespace

bool Spawn(const SpawnOptions& options, Child* child, std::string* error) {
  // A child that exits before reading its stdin must not kill the test.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { ::signal(SIGPIPE, SIG_IGN); });

  if (options.argv.empty()) {
    *error = "spawn: empty argv";
    return false;
  }
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = BuildEnv(options.extra_env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);

  Fd in_r, in_w, out_r, out_w, err_r, err_w, status_r, status_w;
  bool ok = MakePipe(&status_r, &status_w);
  if (options.pipe_stdin) ok = ok && MakePipe(&in_r, &in_w);
  if (options.output_fd < 0) ok = ok && MakePipe(&out_r, &out_w) && MakePipe(&err_r, &err_w);
  if (!ok) {
    *error = std::string("pipe2: ") + std::strerror(errno);
    return false;
  }
  int out_fd = options.output_fd >= 0 ? options.output_fd : out_w.get();
  int err_fd = options.output_fd >= 0 ? options.output_fd : err_w.get();

  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ExecChild(argv.data(), envp.data(), in_r.get(), out_fd, err_fd, status_w.get());
  }
  ::setpgid(pid, pid);  // also done by the child: whichever runs first wins the race
  status_w.Reset();
  in_r.Reset();
  out_w.Reset();
  err_w.Reset();

  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_r.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(child_errno)) {
    Reap(pid);
    *error = "exec " + options.argv[0] + ": " + std::strerror(child_errno);
    return false;
  }

  child->pid = pid;
  child->pidfd.Reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!child->pidfd.valid()) {
    *error = std::string("pidfd_open: ") + std::strerror(errno);
    ::kill(-pid, SIGKILL);
    Reap(pid);
    return false;
  }
  child->stdin_w = std::move(in_w);
  child->stdout_r = std::move(out_r);
  child->stderr_r = std::move(err_r);
  return true;
}

bool WaitPidfd(int pidfd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
    int r = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

int Reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int TerminateAndReap(const Child& child, std::chrono::milliseconds grace) {
  if (child.pid <= 0) return -1;  // kill(-(-1)) would signal every process
  ::kill(-child.pid, SIGTERM);
  if (!WaitPidfd(child.pidfd.get(), grace)) {
    ::kill(-child.pid, SIGKILL);
    ::kill(child.pid, SIGKILL);
  }
  return Reap(child.pid);
}

}  // namespace hull::itest::internal
