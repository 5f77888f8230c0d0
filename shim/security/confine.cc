#include "shim/security/confine.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <memory>
#include <string>

namespace hull::shim {
namespace {

// What the server does itself, with the capability it takes (docs/security.md
// has the full table; rootfs mounts are its spawner's, so no CAP_SYS_ADMIN):
// signal container processes whose uid is not its own, e.g.
// in a user namespace (CAP_KILL); hand stdio pipes to io_uid/io_gid
// (CAP_CHOWN); write bundle, cgroup and state files it does not own
// (CAP_DAC_OVERRIDE, CAP_FOWNER).
constexpr cap_value_t kKept[] = {CAP_KILL, CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER};

// The syscalls the confined server may make (x86-64 names; a name this
// architecture lacks is skipped). Everything else fails with EPERM. Measured,
// not guessed: tools/seccomp-calls records every syscall of a confined
// server while the confined suites run (docs/security.md, "The seccomp
// allow-list", has the counts and each group's reason); the few the suites
// do not reach are in the last groups, each found in hull's own code.
constexpr const char* kAllowedSyscalls[] = {
    // the event loop: epoll, timers, signals, eventfd wakeups
    "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "poll", "ppoll", "timerfd_create",
    "timerfd_settime", "timerfd_gettime", "signalfd4", "eventfd2", "rt_sigprocmask", "rt_sigreturn",
    "restart_syscall",
    // descriptors and I/O: ttrpc, stdio copying, FIFOs, pipes, files
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "fcntl", "ioctl",
    "pipe", "pipe2", "dup", "dup2", "dup3",
    // std::filesystem::copy_file (the pause binary into a Sandbox API pod's
    // runsc bundle)
    "sendfile", "copy_file_range",
    // sockets: the ttrpc listener and connections, containerd's events
    // socket, the spawner's channels, console sockets
    "socket", "socketpair", "bind", "listen", "accept4", "connect", "shutdown", "getsockname",
    "getsockopt", "setsockopt", "sendmsg", "recvmsg", "sendto", "recvfrom",
    // files: bundle, state, cgroup and /proc files (read, written, made and
    // removed under the capabilities above)
    "openat", "access", "faccessat", "faccessat2", "newfstatat", "fstat", "stat", "lstat", "statfs",
    "fstatfs", "getdents64", "readlink", "readlinkat", "getcwd", "mkdir", "mkdirat", "rmdir",
    "unlink", "unlinkat", "rename", "renameat", "renameat2", "chmod", "fchmod", "fchmodat",
    "fchown", "fchownat", "utimensat", "flock",
    // OOM events (cgroup v1 memory.oom_control, v2 memory.events)
    "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    // processes: signals to container processes (Kill), reaping what it
    // still parents, limits read at start
    "kill", "wait4", "prlimit64", "getpid", "gettid", "tgkill",
    // identity reads (never changes)
    "getuid", "geteuid", "getgid", "getegid", "uname",
    // memory (no mprotect: nothing the server maps becomes executable
    // later; glibc's realloc and free work without mremap and madvise)
    "brk", "mmap", "munmap", "futex",
    // time (normally the vDSO), short waits
    "clock_gettime", "gettimeofday", "clock_nanosleep", "nanosleep", "sched_yield",
    // entropy (std::random_device, hash seeds)
    "getrandom",
    // ending
    "exit", "exit_group"};

constexpr const char kConfinedName[] = "hull-confined";

struct CapFree {
  void operator()(cap_t caps) const { cap_free(caps); }
};
struct SeccompRelease {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

Status DropCapabilities() {
  // The bounding set first (it needs CAP_SETPCAP, which is dropped next).
  for (cap_value_t cap = 0; cap <= static_cast<cap_value_t>(cap_max_bits()) - 1; ++cap) {
    if (std::find(std::begin(kKept), std::end(kKept), cap) != std::end(kKept)) continue;
    if (CAP_IS_SUPPORTED(cap) && cap_drop_bound(cap) != 0) {
      return ErrnoError("drop from the bounding set capability", std::to_string(cap));
    }
  }
  std::unique_ptr<_cap_struct, CapFree> caps(cap_init());
  if (!caps) return ErrnoError("cap_init");
  const int n = static_cast<int>(std::size(kKept));
  if (cap_set_flag(caps.get(), CAP_PERMITTED, n, kKept, CAP_SET) != 0 ||
      cap_set_flag(caps.get(), CAP_EFFECTIVE, n, kKept, CAP_SET) != 0) {
    return ErrnoError("cap_set_flag");
  }
  if (cap_set_proc(caps.get()) != 0) return ErrnoError("cap_set_proc");
  if (cap_reset_ambient() != 0) return ErrnoError("cap_reset_ambient");
  return Status::Ok();
}

Status InstallSeccomp(bool log_unlisted) {
  // Measuring (tools/seccomp-calls --log): what is not listed is let
  // through, and the kernel logs it.
  std::unique_ptr<void, SeccompRelease> ctx(
      seccomp_init(log_unlisted ? SCMP_ACT_LOG : SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) return InternalError("seccomp_init failed");
  for (const char* name : kAllowedSyscalls) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0);
    if (rc != 0) return ErrnoError(-rc, "seccomp rule for", name);
  }
  // clone: threads only, never a process (x86-64 and arm64 take the flags
  // first). clone3 passes its flags in memory a filter cannot read: ENOSYS
  // sends glibc back to clone.
  int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone");
  rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone3");
  // From here on the server is `hull-confined` in ps and /proc/<pid>/comm
  // (and its threads, which inherit it), so what it calls once confined
  // can be told from what it called before (tools/seccomp-calls).
  if (::prctl(PR_SET_NAME, kConfinedName) != 0) return ErrnoError("prctl", "PR_SET_NAME");
  rc = seccomp_load(ctx.get());
  if (rc != 0) return ErrnoError(-rc, "seccomp_load");
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ConfinedCapabilityNames() {
  std::vector<std::string> names;
  for (cap_value_t cap : kKept) {
    char* name = cap_to_name(cap);
    names.emplace_back(name != nullptr ? name : std::to_string(cap));
    cap_free(name);
  }
  return names;
}

Status ConfineServer(bool log_unlisted) {
  HULL_RETURN_IF_ERROR_CTX(DropCapabilities(), "confine: capabilities");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoError("confine: prctl", "PR_SET_NO_NEW_PRIVS");
  }
  HULL_RETURN_IF_ERROR_CTX(InstallSeccomp(log_unlisted), "confine: seccomp");
  return Status::Ok();
}

}  // namespace hull::shim
