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
// has the full table): mount and unmount the rootfs and the pod's /dev/shm
// (CAP_SYS_ADMIN); signal container processes whose uid is not its own, e.g.
// in a user namespace (CAP_KILL); hand stdio pipes to io_uid/io_gid
// (CAP_CHOWN); write bundle, cgroup and state files it does not own
// (CAP_DAC_OVERRIDE, CAP_FOWNER).
constexpr cap_value_t kKept[] = {CAP_SYS_ADMIN, CAP_KILL, CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER};

// Syscalls the confined server has no use for, each refused with EPERM.
// Everything that starts a program or a process goes through the spawner;
// the rest would let code that took over the server reach further than its
// capabilities (kernel modules, other processes' memory, namespaces, keys,
// the clock, the kernel's own attack surface: bpf, io_uring, userfaultfd).
constexpr const char* kDenied[] = {
    "execve", "execveat", "fork", "vfork",
    // namespaces and roots
    "setns", "unshare", "pivot_root", "chroot",
    // other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    // the kernel itself
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm", "uselib", "lookup_dcookie",
    "vhangup", "personality", "modify_ldt",
    // attack surface the server never touches
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "fanotify_init", "open_by_handle_at",
    "name_to_handle_at", "mknod", "mknodat",
    // the new mount API (hull calls mount(2) only)
    "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
    // time
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    // identity: the server never changes it, or its capabilities, again
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
    "setgroups", "capset"};

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

Status InstallSeccomp() {
  std::unique_ptr<void, SeccompRelease> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return InternalError("seccomp_init failed");
  for (const char* name : kDenied) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc != 0) return ErrnoError(-rc, "seccomp rule for", name);
  }
  // clone: threads only, never a process (x86-64 and arm64 take the flags
  // first). clone3 passes its flags in memory a filter cannot read: ENOSYS
  // sends glibc back to clone.
  int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone");
  rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone3");
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

Status ConfineServer() {
  HULL_RETURN_IF_ERROR_CTX(DropCapabilities(), "confine: capabilities");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoError("confine: prctl", "PR_SET_NO_NEW_PRIVS");
  }
  HULL_RETURN_IF_ERROR_CTX(InstallSeccomp(), "confine: seccomp");
  return Status::Ok();
}

}  // namespace hull::shim
