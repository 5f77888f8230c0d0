#include "runtime/oci_cli/run_blocking.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "base/spawn.h"
#include "base/unique_fd.h"

namespace hull::runtime::oci_cli {
namespace {

constexpr size_t kMaxCaptured = 4 << 20;

int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// The wait status of `pid`, one of `spawner`'s children, from its exits
// channel; -1 past `deadline` or when the spawner is gone.
int WaitForSpawned(SpawnerClient& spawner, pid_t pid,
                   std::chrono::steady_clock::time_point deadline) {
  while (true) {
    std::vector<SpawnerExit> exits;
    if (!spawner.ReadExits(exits).ok()) return -1;
    for (const SpawnerExit& exit : exits) {
      if (exit.pid == pid) return exit.wait_status;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd pfd{.fd = spawner.exits_fd(), .events = POLLIN, .revents = 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return -1;
  }
}

}  // namespace

Result<CommandResult> RunBlocking(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout, SpawnerClient* spawner) {
  HULL_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  HULL_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  const SpawnOptions options{.argv = argv, .fds = {{1, out.write.get()}, {2, err.write.get()}}};
  HULL_ASSIGN_OR_RETURN(pid_t pid, spawner != nullptr ? spawner->Spawn(options) : Spawn(options));
  out.write.reset();
  err.write.reset();

  CommandResult result;
  UniqueFd* fds[2] = {&out.read, &err.read};
  std::string* sinks[2] = {&result.out, &result.err};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto wait = [&] {
    return spawner != nullptr ? WaitForSpawned(*spawner, pid, deadline) : WaitFor(pid);
  };
  while (out.read || err.read) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      wait();
      return DeadlineExceededError(argv[0] + " did not finish within " +
                                   std::to_string(timeout.count()) + " ms");
    }
    pollfd pfds[2];
    nfds_t n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!*fds[i]) continue;
      pfds[n] = pollfd{.fd = fds[i]->get(), .events = POLLIN, .revents = 0};
      which[n++] = i;
    }
    int ready = ::poll(pfds, n, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      Status status = ErrnoError("poll", "output of " + argv[0]);
      ::kill(pid, SIGKILL);
      wait();
      return status;
    }
    for (nfds_t k = 0; ready > 0 && k < n; ++k) {
      if (pfds[k].revents == 0) continue;
      char buf[16384];
      ssize_t got = ::read(pfds[k].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[which[k]]->reset();
        continue;
      }
      std::string& sink = *sinks[which[k]];
      sink.append(buf, std::min(static_cast<size_t>(got),
                                kMaxCaptured - std::min(kMaxCaptured, sink.size())));
    }
  }
  int status = wait();
  if (status < 0) {
    return spawner != nullptr ? DeadlineExceededError("no exit of " + argv[0] + " from the spawner")
                              : ErrnoError("waitpid", argv[0]);
  }
  result.exit_status = ExitStatusFromWait(status);
  return result;
}

}  // namespace hull::runtime::oci_cli
