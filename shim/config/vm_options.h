// VmOptions: the `[vm]` table of hull's config, what the vm backend boots a
// pod's micro-VM with (docs/config.md, docs/vm.md). Plain data: read by
// shim/config, checked and resolved by qemu_command.h.
#pragma once

#include <cstdint>
#include <string>

namespace hull::shim {

struct VmOptions {
  // The QEMU binary: a path, or a name looked up in PATH.
  std::string qemu = "qemu-system-x86_64";
  // Guest assets; empty: found in the asset directories (qemu_command.h,
  // GuestAssetDirs): `vmlinux` (microvm) or `vmlinuz` (pc), `initramfs.cpio`.
  std::string kernel;
  std::string initramfs;
  std::string machine = "microvm";  // "microvm" or "pc"
  std::string accel = "tcg";        // "tcg" or "kvm"
  std::string share = "9p";         // "9p"; "virtiofs" is refused (not built)
  // How long the agent has to answer its first Hello after QEMU starts.
  uint32_t agent_timeout_ms = 60'000;
  // Extra kernel command line, appended to hull's.
  std::string kernel_args;
  // TCG's translation cache in MiB (QEMU's `tb-size`; its default is 1 GiB,
  // grown on demand, docs/vm.md "Host memory"); 0: QEMU's default. Not used
  // under KVM.
  uint32_t tcg_tb_size_mib = 32;
  // The same for a template clone, whose cache starts empty after its
  // restore whatever the template's was (the cache is no device state):
  // smaller, since it holds only what the pod runs after the restore and is
  // the largest share of an idle clone's host memory (docs/vm.md, "Host
  // memory"). 0: QEMU's default.
  uint32_t clone_tcg_tb_size_mib = 16;
  // Pods of one shape start as copy-on-write clones of a template VM
  // (docs/vm.md, "Template clones"). Clones share the template's pages with
  // each other: a side channel between pods (docs/security.md), so off unless
  // the operator turns it on.
  bool templates = false;
  // The template cache's bound: the RAM the templates of all shapes hold
  // on tmpfs, in MiB. The oldest used template goes first.
  uint32_t template_cache_mib = 1024;
  // RAM the VM boots with beyond the pod's size, for in-place resizes
  // (docs/vm.md, "Resize"): untouched guest pages cost the host nothing,
  // and the guest's cgroups hold the pod's containers to the pod's size
  // until a resize raises it. 0: the VM is the pod's size, and a resize can
  // only lower it.
  uint32_t memory_headroom_mib = 0;
  // QEMU runs jailed (docs/security.md, "QEMU's jail"): QEMU's own seccomp
  // sandbox, NoNewPrivs, only the capabilities its 9p export needs, and a
  // mount namespace without the host's /etc, /home and /root. false: for
  // debugging.
  bool jail = true;
  // With the jail, QEMU's 9p export is served by this helper (QEMU's
  // virtfs-proxy-helper, `-fsdev proxy`), which keeps the file capabilities
  // in a chroot of the share, so that QEMU itself runs as an unprivileged
  // user of its own with no capability (docs/security.md, "QEMU's jail").
  // Empty: QEMU serves the share itself, as root with 3 capabilities (a
  // QEMU without the proxy driver, which QEMU 8.1 deprecated).
  std::string share_helper = "/usr/lib/qemu/virtfs-proxy-helper";
  // The jailed QEMU's ids: uid `jail_id_base` + the pid of the process that
  // starts it (the pod's spawner, or its unconfined server), unique among the
  // node's live pods; gid `jail_id_base`, shared by every jailed QEMU (a
  // template's RAM file, which its clones open, is that group's).
  uint32_t jail_id_base = 2'100'000'000;
  friend bool operator==(const VmOptions&, const VmOptions&) = default;
};

}  // namespace hull::shim
