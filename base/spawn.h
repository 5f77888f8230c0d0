// Spawn: starts a child process with exactly the descriptors it is given.
// Everything the child needs is prepared before fork(); between fork() and
// exec() the child only makes async-signal-safe calls. The child gets a clean
// signal mask and default dispositions (hull blocks signals it reads through
// signalfd, and children must not inherit that).
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace hull {

// Confinement the child takes on before exec (docs/security.md, "QEMU's
// jail"). Needs CAP_SYS_ADMIN and CAP_SETPCAP in the caller.
struct SpawnJail {
  // The child gets a mount namespace of its own in which every mount is a
  // slave of the caller's (a mount made later under a shared mount of the
  // caller's still reaches the child), and each of these directories is
  // covered by an empty read-only tmpfs.
  std::vector<std::string> hide;
  // The only capabilities the child keeps (bit n: capability n): its
  // bounding, permitted, effective and inheritable sets are cut to these,
  // and it gets NoNewPrivs.
  uint64_t capabilities = 0;
  // Non-zero: the child becomes this user (real, effective, saved and
  // filesystem ids), with `gid` and only the supplementary `groups`, after
  // its mounts and before exec. It then keeps no capability at all, so
  // `capabilities` must be 0.
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // A seccomp filter (classic BPF) the child loads last, after NoNewPrivs
  // and before exec; empty: none.
  std::vector<sock_filter> seccomp;
  // Non-empty: an existing directory that becomes the child's `/`. A tmpfs
  // is mounted on it (in the child's mount namespace only), `binds` and
  // `links` are made in it at their own paths, `/proc` is mounted with
  // hidepid=invisible (the child sees only its own user's processes), the
  // tmpfs is made read-only and the child pivots into it; `hide` is moot.
  std::string root;
  struct Bind {
    std::string path;  // a file, directory or device node of the host
    bool writable = false;
    friend bool operator==(const Bind&, const Bind&) = default;
  };
  std::vector<Bind> binds;
  std::vector<std::pair<std::string, std::string>> links;  // path, symlink target
};

// Whether two filters are the same program, instruction by instruction.
bool SameFilter(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b);

struct SpawnOptions {
  // argv[0] is the program: a path, or a name looked up in PATH.
  std::vector<std::string> argv;
  // The whole environment; unset means inherit hull's.
  std::optional<std::vector<std::string>> env;
  // Working directory; empty means hull's.
  std::string cwd;
  // {child fd, parent fd}: parent fd is dup2'd to child fd. Descriptors 0-2
  // not listed here are /dev/null. Nothing else is inherited.
  std::vector<std::pair<int, int>> fds;
  bool new_process_group = false;  // setpgid(0, 0)
  bool new_session = false;        // setsid()
  // Signal the child gets when hull dies (PR_SET_PDEATHSIG), e.g. SIGKILL for
  // runtime CLI calls.
  int parent_death_signal = 0;
  std::optional<SpawnJail> jail;
};

// Forks and execs. Returns the pid, or the exec error (reported through a
// CLOEXEC pipe, so "exec runc: No such file or directory" is a synchronous
// NotFound, not an exit code 127).
Result<pid_t> Spawn(const SpawnOptions& options);

// The exit status containerd expects: the exit code, or 128 + signal.
int ExitStatusFromWait(int wait_status);

// A spawned child owned by a blocking caller (a one-shot action, not the
// loop, which has the Reaper): killed (SIGKILL) and reaped when dropped,
// unless released to live on.
class OwnedChild {
 public:
  explicit OwnedChild(pid_t pid) : pid_(pid) {}
  ~OwnedChild();
  OwnedChild(const OwnedChild&) = delete;
  OwnedChild& operator=(const OwnedChild&) = delete;
  pid_t pid() const { return pid_; }
  void Release() { pid_ = -1; }

 private:
  pid_t pid_;
};

}  // namespace hull
