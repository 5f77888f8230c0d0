// Child-process plumbing shared by Run, BackgroundCommand and PrivateContainerd:
// an owning fd, fork+exec into a new process group with piped or redirected
// stdio, and exit-status decoding. Test-only code, so it stands alone instead
// of using hull's base/ (the harness must build before hull does).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace hull::itest::internal {

// Owns one descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct SpawnOptions {
  std::vector<std::string> argv;
  // "KEY=VALUE" entries that replace or extend the inherited environment.
  std::vector<std::string> extra_env;
  bool pipe_stdin = false;
  // When valid, the child's stdout and stderr both go here; else to pipes.
  int output_fd = -1;
};

// A started child. It leads its own process group (pgid == pid), so a signal
// to -pid reaches everything it forked that did not move away.
struct Child {
  pid_t pid = -1;
  Fd pidfd;  // readable once the child has exited
  Fd stdin_w, stdout_r, stderr_r;
};

// fork+execvp. On failure (including exec failure, reported through a
// close-on-exec pipe) returns false and says why in *error.
bool Spawn(const SpawnOptions& options, Child* child, std::string* error);

// Waits up to `timeout` for the pidfd to become readable. Does not reap.
bool WaitPidfd(int pidfd, std::chrono::milliseconds timeout);

// Reaps `pid` (blocking) and decodes its status: the exit code, or 128+signal.
int Reap(pid_t pid);

// SIGTERM to the group, up to `grace` for it to exit, then SIGKILL; reaps.
// Returns the decoded status.
int TerminateAndReap(const Child& child, std::chrono::milliseconds grace);

}  // namespace hull::itest::internal
