#include "shim/backend/vm/qemu_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "base/unique_fd.h"

namespace hull::shim::vm {
namespace {

struct SeccompRelease {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

// QemuDeniedCalls but `allowed`, and clone with a namespace flag.
Result<std::vector<sock_filter>> Build(std::string_view allowed = {}) {
  std::unique_ptr<void, SeccompRelease> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return InternalError("seccomp_init failed");
  for (const char* name : QemuDeniedCalls()) {
    if (name == allowed) continue;
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc != 0) return ErrnoError(-rc, "seccomp rule for", name);
  }
  for (const int flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS,
                         CLONE_NEWIPC, CLONE_NEWCGROUP}) {
    const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                    SCMP_A0(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(flag),
                                            static_cast<scmp_datum_t>(flag)));
    if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone");
  }
  const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return ErrnoError(-rc, "seccomp rule for", "clone3");
  // libseccomp writes the program to a descriptor: a pipe holds it (a few
  // hundred bytes), and a confined server may make one.
  HULL_ASSIGN_OR_RETURN(Pipe pipe, MakePipe());
  const int exported = seccomp_export_bpf(ctx.get(), pipe.write.get());
  if (exported != 0) return ErrnoError(-exported, "seccomp_export_bpf");
  pipe.write.reset();
  std::string bytes;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe.read.get(), buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", "the exported seccomp filter");
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
    return InternalError("seccomp_export_bpf: not a whole program");
  }
  std::vector<sock_filter> program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return program;
}

}  // namespace

const std::vector<const char*>& QemuDeniedCalls() {
  static const std::vector<const char*> kDenied = {
      // other processes
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
      // namespaces
      "unshare", "setns",
      // kernel interfaces a VMM never needs
      "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup",
      "io_uring_enter", "io_uring_register", "name_to_handle_at", "open_by_handle_at",
      "lookup_dcookie", "iopl", "ioperm", "personality", "vhangup", "acct", "quotactl", "syslog",
      // mounts (QEMU has no capability for them; refused before the kernel looks)
      "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
      "fsmount", "fspick", "mount_setattr",
      // modules, kexec, swap, reboot
      "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "swapon",
      "swapoff", "reboot"};
  return kDenied;
}

Result<std::vector<sock_filter>> QemuJailFilter() {
  static const Result<std::vector<sock_filter>> kFilter = Build();
  return kFilter;
}

Result<std::vector<sock_filter>> ShareHelperFilter() {
  static const Result<std::vector<sock_filter>> kFilter = Build("chroot");
  return kFilter;
}

}  // namespace hull::shim::vm
