// The pure part of booting a pod's micro-VM: which guest assets to use, the
// host capacity check, and QEMU's command line from the pod's size and the
// `[vm]` options. No process is started here (vm_backend.cc does that);
// unit-tested in tests/unit/backend/qemu_command_test.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/spawn.h"
#include "base/status.h"
#include "oci/spec.h"
#include "shim/config/vm_options.h"

namespace hull::shim::vm {

// The agent's port name and the per-pod share's 9p mount tag.
inline constexpr std::string_view kAgentPortName = "hull.agent";
inline constexpr std::string_view kShareTag = "hullpod";
// Where the guest mounts the per-pod share.
inline constexpr std::string_view kGuestSharePath = "/run/hull/pod";

struct GuestAssets {
  std::string qemu;  // an executable path
  std::string kernel;
  std::string initramfs;
  // [vm] share_helper, an executable path, when QEMU runs jailed with a
  // user of its own; empty: QEMU serves the share itself.
  std::string share_helper;
};

// Where the assets are looked for when `[vm]` names none, in order: the
// package's /usr/lib/hull/guest, `<bin>/../lib/hull/guest` (an install under
// another prefix, such as hull-node's /opt/hull), then the guest image
// tools/guest-image builds next to a build tree's binary
// (`<bin>/../guest-image` and `<bin>/../../guest-image`), `<bin>` being the
// directory of `self_exe`.
std::vector<std::string> GuestAssetDirs(const std::string& self_exe);

// Checks the options (virtiofs is Unimplemented) and finds QEMU (a path or a
// name in PATH), the kernel, the initramfs and, for a jail, the share
// helper: NotFound naming each one missing and where it was looked for.
Result<GuestAssets> ResolveGuestAssets(const VmOptions& options,
                                       const std::vector<std::string>& asset_dirs);

struct HostCapacity {
  uint32_t cpus = 0;        // online CPUs
  uint64_t memory_mib = 0;  // MemTotal
};
Result<HostCapacity> ReadHostCapacity();
// FailedPrecondition with the numbers when the host cannot give the VM
// `vcpus` or `memory_mib`.
Status CheckFits(uint32_t vcpus, uint64_t memory_mib, const HostCapacity& host);

// QEMU's own seccomp filter when [vm] jail is on: no obsolete calls, no
// set*id, no fork or exec (templates migrate to and from descriptors hull
// opens), no scheduler or affinity changes.
inline constexpr std::string_view kQemuSandboxOptions =
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";

// The runtime-spec version the guest image's runtime takes: tools/guest-image
// packs Debian 12's crun 1.8.1, whose banner says "spec: 1.1.0-rc.1". The
// agent's crun checks each spec against what it reports itself; the host
// uses this to refuse a pod before booting its VM, and `-info` prints it.
inline constexpr std::string_view kGuestOciVersionMax = "1.1.0-rc.1";

// The pod's spec as the guest's crun would take it (runtime::oci_cli's
// FitSpecVersion against kGuestOciVersionMax): Ok when it runs as is or
// down-levelled, FailedPrecondition naming the field or the version hull
// does not know otherwise. Checked before the VM boots, so that a pod its
// guest would refuse costs no boot (docs/vm.md, "Refused before boot").
Status CheckGuestSpec(const oci::Spec& spec);

// What the per-pod run directory holds.
struct VmPaths {
  std::string agent_socket;  // QEMU's chardev socket for the agent port
  std::string console_log;   // the guest's serial console
  std::string share_dir;     // exported to the guest as kShareTag
  // A QEMU with a user of its own opens none of them: it gets descriptors
  // (their numbers in QEMU, or -1 for the path): the agent socket, already
  // listening; the console log, open for writing; the share helper's end of
  // a socket pair (`-fsdev proxy`).
  int agent_fd = -1;
  int console_fd = -1;
  int share_fd = -1;
};

// The descriptor numbers a QEMU with a user of its own gets (3 is the tap,
// 4 a clone's incoming state).
inline constexpr int kShareFd = 5;
inline constexpr int kAgentFd = 6;
inline constexpr int kQmpFd = 7;
inline constexpr int kConsoleFd = 8;
// The share helper's socket, in the helper.
inline constexpr int kShareHelperFd = 3;

// The guest's NIC: a tap device QEMU gets as descriptor `fd` (its number in
// QEMU), and the guest NIC's MAC (the pod's eth0's). A template VM's NIC has
// no tap (`fd` < 0: an unconnected hub port): its clones get theirs.
struct GuestNic {
  int fd = 3;
  std::string mac;
};

// Where the guest's RAM lives (docs/vm.md, "Host memory"). By default a
// memfd: shmem, which host THP leaves alone (anonymous RAM is faulted in
// 2 MiB granules). A template's RAM is a file on tmpfs that QEMU writes
// (`share`); a clone maps that file copy-on-write (not `share`) and waits
// (`incoming`) for the template's device state, which hull hands it over
// QMP (`qmp_socket`, also how hull stops a template and saves its state).
struct GuestRam {
  std::string file;
  bool share = false;
  bool incoming = false;
  std::string qmp_socket;
  int qmp_fd = -1;  // the QMP socket, already listening, as a descriptor
};

// QEMU's argv: -nodefaults -no-user-config, -smp and -m fixed at boot (no
// hotplug slots, no hotpluggable device), the serial console into
// `console_log`, the virtio-serial agent port on a socket and the one 9p
// share, and with `nic` a virtio-net device on that tap. `-name` is
// `hull:<the agent socket's directory>` (CleanUpAfterShim finds a QEMU by
// it). `tsc_khz` (microvm
// under TCG needs it, docs/vm.md) may be empty. A template and its clones
// get the same argv but for `paths`, the NIC's backend and `ram`.
std::vector<std::string> QemuArgv(const GuestAssets& assets, const VmOptions& options,
                                  uint32_t vcpus, uint64_t memory_mib, const VmPaths& paths,
                                  const std::string& tsc_khz,
                                  const std::optional<GuestNic>& nic = std::nullopt,
                                  const GuestRam& ram = {});

// The jail of a QEMU of `options` (docs/security.md, "QEMU's jail"), or
// none with `[vm] jail = false`: the capabilities QEMU's 9p export needs
// as root (chown, DAC override and read search, fowner, fsetid) and
// nothing else, NoNewPrivs, and a mount namespace in which /etc, /home and
// /root are empty, but for a directory that holds one of `needed` (the
// paths QEMU opens: its binary, the guest assets, the run directory, the
// bundle), which stays. QemuArgv adds QEMU's own seccomp sandbox.
// Every jail carries hull's seccomp filter (QemuJailFilter), loaded before
// QEMU's own. With a share helper (`[vm] share_helper`), QEMU needs no capability: it
// runs as uid `[vm] jail_id_base` + `starter` (the pid of the process that
// spawns it), gid `jail_id_base`, with /dev/kvm's group for `accel = "kvm"`.
std::optional<SpawnJail> QemuJail(const VmOptions& options, const std::vector<std::string>& needed,
                                  pid_t starter = 0);

// The share helper's jail, with QemuJail's (`[vm] jail`, and a helper
// configured): root with only the capabilities it keeps for the guest's file
// work plus what its chroot and its own capability drop need, NoNewPrivs,
// and hull's filter with chroot allowed (ShareHelperFilter); a mount
// namespace of its own (a slave of the host's, so that the pod share's later
// binds reach it).
std::optional<SpawnJail> ShareHelperJail(const VmOptions& options);

// Gives a jail with a user of its own (QemuJail with a share helper) a root
// of its own (docs/security.md, "QEMU's jail"): `dir`, an empty directory of
// hull's, holding only /usr (read-only), the merged-/usr links (/bin, /lib,
// /lib64, /sbin as the host has them), QEMU's binary when it is not in
// /usr, the guest kernel and initramfs (read-only, at their own paths), the
// devices QEMU opens (null, zero, random, urandom; kvm with `accel =
// "kvm"`), `ram_file` when set (a template's RAM: writable, QEMU 7.2 opens
// it read-write) and a /proc where it sees only itself. Nothing else of the
// host: no /etc, /home, /root, /run, /tmp, /var.
void RootQemuJail(SpawnJail& jail, const std::string& dir, const GuestAssets& assets,
                  const VmOptions& options, const std::string& ram_file);

// The share helper's argv: serving `share_dir` on descriptor
// kShareHelperFd, in the foreground. It chroots into the share and keeps
// only the capabilities of its file operations.
std::vector<std::string> ShareHelperArgv(const GuestAssets& assets, const std::string& share_dir);

// The host's TSC rate in kHz from /proc/cpuinfo ("cpu MHz"), or "".
std::string HostTscKhz();

// The last `n` lines of `text` (the console log's tail for messages).
std::string LastLines(std::string_view text, size_t n);

// Whether a guest's console reports a CPU stuck (an RCU stall, a soft
// lockup). Under multi-threaded TCG on a loaded host a boot has stalled so,
// rarely, and then never completed (docs/vm.md, "Stalled boots").
bool ConsoleReportsStall(std::string_view console);

// Whether a boot has stalled, from its console log file, read whole at most
// once per `interval` (the boot asks on each agent-connect retry, every 20 ms
// until QEMU makes its socket); between reads it answers false. Stalled: the
// console reports a stall (ConsoleReportsStall), or it has not grown for
// `silence` while hull-agent has written nothing to it (a guest whose CPUs
// stopped before the kernel's stall detector could speak: CI saw one stop
// 0.63 s into the kernel's boot and stay silent). reason() says which.
class ConsoleStallWatch {
 public:
  explicit ConsoleStallWatch(std::chrono::milliseconds interval = std::chrono::seconds(1),
                             std::chrono::milliseconds silence = std::chrono::seconds(60))
      : interval_(interval), silence_(silence) {}
  bool Stalled(const std::string& console_log);
  // Why Stalled() last said true ("" before).
  const std::string& reason() const { return reason_; }

 private:
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds silence_;
  std::chrono::steady_clock::time_point next_read_{};
  std::chrono::steady_clock::time_point last_growth_{};
  size_t last_size_ = 0;
  bool read_once_ = false;
  std::string reason_;
};

}  // namespace hull::shim::vm
