#include "shim/backend/vm/qemu_command.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/file_util.h"
#include "runtime/oci_cli/spec_version.h"
#include "shim/backend/vm/qemu_filter.h"

namespace hull::shim::vm {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool IsReadableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Whether a user who is neither the owner nor in the group (a jailed QEMU)
// can reach `path`: every directory on the way to it, and to where its
// symlinks lead, searchable by others, and the file itself `bit` for
// others (S_IROTH, S_IXOTH).
bool OthersReach(const std::string& path, mode_t bit) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return false;
  struct stat st;
  if (::stat(real.c_str(), &st) != 0 || (st.st_mode & bit) == 0) return false;
  for (std::filesystem::path p : {std::filesystem::path(path).lexically_normal(), real}) {
    for (p = p.parent_path(); !p.empty(); p = p.parent_path()) {
      if (::stat(p.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
      if (p == p.root_path()) break;
    }
  }
  return true;
}

Result<std::string> FindQemu(const std::string& qemu) {
  if (qemu.empty()) return InvalidArgumentError("[vm] qemu is empty");
  if (qemu.find('/') != std::string::npos) {
    if (IsExecutableFile(qemu)) return qemu;
    return NotFoundError("QEMU binary " + qemu + " does not exist or is not executable");
  }
  const char* env = ::getenv("PATH");
  std::string_view path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + qemu;
    if (IsExecutableFile(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return NotFoundError("QEMU binary \"" + qemu +
                       "\" not found in PATH (apt-get install qemu-system-x86, or set [vm] qemu)");
}

// `configured` if set (it must exist), else `name` in the first asset
// directory that has it.
Result<std::string> FindAsset(std::string_view what, std::string_view key,
                              const std::string& configured, const std::string& name,
                              const std::vector<std::string>& dirs) {
  if (!configured.empty()) {
    if (IsReadableFile(configured)) return configured;
    return NotFoundError("guest " + std::string(what) + " " + configured + " ([vm] " +
                         std::string(key) + ") does not exist or is not readable");
  }
  std::string looked;
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + name;
    if (IsReadableFile(candidate)) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate;
  }
  return NotFoundError("no guest " + std::string(what) + " (looked for " + looked +
                       "; build it with tools/guest-image, or set [vm] " + std::string(key) + ")");
}

}  // namespace

std::vector<std::string> GuestAssetDirs(const std::string& self_exe) {
  std::vector<std::string> dirs = {"/usr/lib/hull/guest"};
  if (!self_exe.empty()) {
    std::string bin = Dirname(self_exe);
    // An installation under another prefix (cmake --install, hull-node's
    // /opt/hull): <prefix>/bin and <prefix>/lib/hull/guest.
    dirs.push_back(bin + "/../lib/hull/guest");
    dirs.push_back(bin + "/../guest-image");
    dirs.push_back(bin + "/../../guest-image");
  }
  return dirs;
}

Result<GuestAssets> ResolveGuestAssets(const VmOptions& options,
                                       const std::vector<std::string>& asset_dirs) {
  if (options.share == "virtiofs") {
    return UnimplementedError(
        "[vm] share = \"virtiofs\" is not built: Debian 12's only virtiofsd is QEMU's "
        "deprecated one (docs/vm.md); use share = \"9p\"");
  }
  GuestAssets assets;
  HULL_ASSIGN_OR_RETURN(assets.qemu, FindQemu(options.qemu));
  const char* kernel_name = options.machine == "pc" ? "vmlinuz" : "vmlinux";
  HULL_ASSIGN_OR_RETURN(assets.kernel,
                        FindAsset("kernel", "kernel", options.kernel, kernel_name, asset_dirs));
  HULL_ASSIGN_OR_RETURN(assets.initramfs, FindAsset("initramfs", "initramfs", options.initramfs,
                                                    "initramfs.cpio", asset_dirs));
  if (options.jail && !options.share_helper.empty()) {
    if (options.share_helper[0] != '/' || ::access(options.share_helper.c_str(), X_OK) != 0) {
      return NotFoundError("[vm] share_helper " + options.share_helper +
                           " is not an executable path (QEMU's virtfs-proxy-helper, Debian's "
                           "qemu-system-common; share_helper = \"\" has QEMU serve the share "
                           "itself, as root)");
    }
    assets.share_helper = options.share_helper;
    // QEMU runs as a user of its own: what it opens by path must be open to
    // any user (the package's files are).
    struct Reached {
      const char* what;
      const char* key;
      const std::string& path;
      mode_t bit;
    };
    for (const Reached& file :
         {Reached{"QEMU binary", "qemu", assets.qemu, S_IXOTH},
          Reached{"guest kernel", "kernel", assets.kernel, S_IROTH},
          Reached{"guest initramfs", "initramfs", assets.initramfs, S_IROTH}}) {
      if (!OthersReach(file.path, file.bit)) {
        return FailedPreconditionError(
            std::string(file.what) + " " + file.path + " ([vm] " + file.key +
            ") is not open to QEMU's jail user: it must be world-" +
            (file.bit == S_IXOTH ? "executable" : "readable") +
            " in world-searchable directories (or set [vm] share_helper = \"\": QEMU as root)");
      }
    }
  }
  return assets;
}

Result<HostCapacity> ReadHostCapacity() {
  HostCapacity host;
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus <= 0) return ErrnoError("sysconf", "_SC_NPROCESSORS_ONLN");
  host.cpus = static_cast<uint32_t>(cpus);
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      host.memory_mib = std::stoull(line.substr(9)) / 1024;
      return host;
    }
  }
  return InternalError("/proc/meminfo: no MemTotal");
}

Status CheckFits(uint32_t vcpus, uint64_t memory_mib, const HostCapacity& host) {
  if (vcpus > host.cpus) {
    return FailedPreconditionError("the pod's VM needs " + std::to_string(vcpus) +
                                   " vCPUs and this host has " + std::to_string(host.cpus) +
                                   " CPUs");
  }
  if (memory_mib > host.memory_mib) {
    return FailedPreconditionError("the pod's VM needs " + std::to_string(memory_mib) +
                                   " MiB of memory and this host has " +
                                   std::to_string(host.memory_mib) + " MiB");
  }
  return Status::Ok();
}

Status CheckGuestSpec(const oci::Spec& spec) {
  nlohmann::json json = nlohmann::json::parse(spec.json().dump(), nullptr, false);
  Result<std::string> fit =
      runtime::oci_cli::FitSpecVersion(json, kGuestOciVersionMax, "crun in the pod's VM");
  if (!fit) return fit.error().WithContext("the pod's VM was not booted");
  return Status::Ok();
}

std::vector<std::string> QemuArgv(const GuestAssets& assets, const VmOptions& options,
                                  uint32_t vcpus, uint64_t memory_mib, const VmPaths& paths,
                                  const std::string& tsc_khz, const std::optional<GuestNic>& nic,
                                  const GuestRam& ram) {
  const bool microvm = options.machine != "pc";
  const bool kvm = options.accel == "kvm";
  // transparent_hugepage=never: with THP on (guests of 1 GiB and more here),
  // khugepaged raises min_free_kbytes to 44 MiB and the page reserves keep
  // some 75 MiB more of a 1 GiB guest from its workload (docs/sizing.md,
  // "Measured"). kernel_args, appended last, can turn it back on.
  std::string append =
      "console=ttyS0 quiet panic=-1 mitigations=off cryptomgr.notests transparent_hugepage=never";
  if (microvm && !kvm) {
    append += " tsc=reliable no_timer_check";
    if (!tsc_khz.empty()) append += " tsc_early_khz=" + tsc_khz;
  }
  if (!options.kernel_args.empty()) append += " " + options.kernel_args;
  const std::string bus = microvm ? "-device" : "-pci";
  std::string accel = "kvm";
  if (!kvm) {
    accel = "tcg,thread=multi";
    if (options.tcg_tb_size_mib > 0) accel += ",tb-size=" + std::to_string(options.tcg_tb_size_mib);
  }
  const std::string size = std::to_string(memory_mib) + "M";
  const std::string backend = ram.file.empty() ? "memory-backend-memfd,id=ram0,size=" + size
                                               : "memory-backend-file,id=ram0,size=" + size +
                                                     ",mem-path=" + ram.file +
                                                     ",share=" + (ram.share ? "on" : "off");
  // One option and its value a line.
  // clang-format off
  std::vector<std::string> argv = {
      assets.qemu,
      "-M", microvm ? "microvm" : "pc",
      "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
      "-accel", accel,
      "-cpu", kvm ? "host" : "max",
      // maxcpus = the boot count and no memory slots: nothing to hotplug.
      "-smp", std::to_string(vcpus) + ",maxcpus=" + std::to_string(vcpus),
      "-m", std::to_string(memory_mib),
      "-object", backend,
      "-machine", "memory-backend=ram0",
      "-kernel", assets.kernel, "-initrd", assets.initramfs, "-append", append,
      "-name", "hull:" + std::filesystem::path(paths.agent_socket).parent_path().string(),
  };
  if (paths.console_fd >= 0) {
    const std::string fd = std::to_string(paths.console_fd);
    argv.insert(argv.end(), {"-add-fd", "fd=" + fd + ",set=" + fd,
                             "-chardev", "file,id=console,path=/dev/fdset/" + fd});
  } else {
    argv.insert(argv.end(), {"-chardev", "file,id=console,path=" + paths.console_log});
  }
  argv.insert(argv.end(), {
      "-serial", "chardev:console",
      "-device", "virtio-serial" + bus + ",id=vser",
      "-chardev", paths.agent_fd >= 0
                      ? "socket,id=agent,fd=" + std::to_string(paths.agent_fd) + ",server=on,wait=off"
                      : "socket,id=agent,path=" + paths.agent_socket + ",server=on,wait=off",
      "-device", "virtserialport,bus=vser.0,chardev=agent,name=" + std::string(kAgentPortName),
      "-fsdev", paths.share_fd >= 0
                    ? "proxy,id=pod,sock_fd=" + std::to_string(paths.share_fd)
                    : "local,id=pod,path=" + paths.share_dir + ",security_model=none,multidevs=remap",
      "-device", "virtio-9p" + bus + ",fsdev=pod,mount_tag=" + std::string(kShareTag),
  });
  // clang-format on
  if (nic) {
    argv.insert(argv.end(), {"-netdev",
                             nic->fd >= 0 ? "tap,id=net0,fd=" + std::to_string(nic->fd)
                                          : std::string("hubport,id=net0,hubid=0"),
                             "-device", "virtio-net" + bus + ",netdev=net0,mac=" + nic->mac});
  }
  // Free page reporting: the guest's virtio_balloon driver reports free
  // blocks of its RAM (2 MiB and up) and QEMU discards them, so memory a
  // workload used and freed goes back to the host. Only for memfd RAM (a cold
  // boot): QEMU 7.2 discards a file-backed block by punching a hole in the
  // file, even where the mapping is private, so in a clone it would cut
  // pages out of the template's RAM file that every clone maps.
  if (ram.file.empty()) {
    argv.insert(argv.end(), {"-device", "virtio-balloon" + bus + ",free-page-reporting=on"});
  }
  if (ram.qmp_fd >= 0) {
    argv.insert(
        argv.end(),
        {"-chardev", "socket,id=qmp,fd=" + std::to_string(ram.qmp_fd) + ",server=on,wait=off",
         "-mon", "chardev=qmp,mode=control"});
  } else if (!ram.qmp_socket.empty()) {
    argv.insert(argv.end(), {"-qmp", "unix:" + ram.qmp_socket + ",server=on,wait=off"});
  }
  // QEMU 7.2 takes x-ignore-shared only over QMP, so the stream is named
  // there too.
  if (ram.incoming) argv.insert(argv.end(), {"-incoming", "defer"});
  if (options.jail) argv.insert(argv.end(), {"-sandbox", std::string(kQemuSandboxOptions)});
  if (microvm) {
    argv.insert(argv.begin() + 3, {"-global", "virtio-mmio.force-legacy=false"});
  }
  return argv;
}

std::optional<SpawnJail> QemuJail(const VmOptions& options, const std::vector<std::string>& needed,
                                  pid_t starter) {
  if (!options.jail) return std::nullopt;
  SpawnJail jail;
  // hull's filter under QEMU's own -sandbox (qemu_filter.h). It builds on
  // every supported host; were it not to, the spawner's rule (made the same
  // way) has none either, and QEMU keeps its own sandbox.
  if (Result<std::vector<sock_filter>> filter = QemuJailFilter(); filter) {
    jail.seccomp = std::move(*filter);
  }
  if (!options.share_helper.empty()) {
    // The helper does the 9p export's file work: QEMU opens only what it is
    // handed and its guest assets (world-readable), so it needs no
    // capability and no uid 0.
    jail.uid = options.jail_id_base + static_cast<uid_t>(starter);
    jail.gid = options.jail_id_base;
    struct stat kvm;
    if (options.accel == "kvm" && ::stat("/dev/kvm", &kvm) == 0 && kvm.st_gid != 0) {
      jail.groups.push_back(kvm.st_gid);
    }
  } else {
    // What the 9p export needs, and no more than a confined server has: on
    // cgroup v1 the server moves QEMU into the pod cgroup, and cpuset's
    // attach check refuses a target whose permitted set is not a subset of the
    // mover's (unless it has CAP_SYS_NICE). CAP_DAC_OVERRIDE covers what
    // CAP_DAC_READ_SEARCH would; without CAP_FSETID a write to a setuid file
    // through the share clears the bit, as for an unprivileged writer.
    for (int cap : {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER}) {
      jail.capabilities |= uint64_t{1} << cap;
    }
  }
  for (const char* dir : {"/etc", "/home", "/root"}) {
    const std::filesystem::path hidden(dir);
    bool holds = false;
    for (const std::string& path : needed) {
      // Where it really is: an asset reached through a symlink into /home
      // keeps /home.
      std::error_code real_ec;
      std::filesystem::path p = std::filesystem::canonical(path, real_ec);
      if (real_ec) p = std::filesystem::path(path).lexically_normal();
      auto [end, unused] = std::mismatch(hidden.begin(), hidden.end(), p.begin(), p.end());
      if (end == hidden.end()) holds = true;
    }
    std::error_code ec;
    if (!holds && std::filesystem::is_directory(hidden, ec)) jail.hide.push_back(dir);
  }
  return jail;
}

std::optional<SpawnJail> ShareHelperJail(const VmOptions& options) {
  if (!options.jail || options.share_helper.empty()) return std::nullopt;
  SpawnJail jail;
  // The helper keeps CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID, SETUID and
  // MKNOD for the guest's file work, and needs SYS_CHROOT for its chroot and
  // SETPCAP to empty its own bounding set after it.
  for (int cap : {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETGID, CAP_SETUID,
                  CAP_MKNOD, CAP_SYS_CHROOT, CAP_SETPCAP}) {
    jail.capabilities |= uint64_t{1} << cap;
  }
  if (Result<std::vector<sock_filter>> filter = ShareHelperFilter(); filter) {
    jail.seccomp = std::move(*filter);
  }
  return jail;
}

void RootQemuJail(SpawnJail& jail, const std::string& dir, const GuestAssets& assets,
                  const VmOptions& options, const std::string& ram_file) {
  jail.root = dir;
  jail.hide.clear();
  jail.binds = {{.path = "/usr"}};
  jail.links.clear();
  for (const char* name : {"/bin", "/lib", "/lib64", "/sbin"}) {
    char target[256];
    const ssize_t n = ::readlink(name, target, sizeof target);
    std::error_code ec;
    if (n > 0 && static_cast<size_t>(n) < sizeof target) {
      jail.links.emplace_back(name, std::string(target, static_cast<size_t>(n)));
    } else if (std::filesystem::is_directory(name, ec)) {
      jail.binds.push_back({.path = name});
    }
  }
  // What /usr does not already hold.
  for (const std::string& file : {assets.qemu, assets.kernel, assets.initramfs}) {
    if (!file.starts_with("/usr/")) jail.binds.push_back({.path = file});
  }
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}) {
    jail.binds.push_back({.path = device, .writable = true});
  }
  if (options.accel == "kvm") jail.binds.push_back({.path = "/dev/kvm", .writable = true});
  if (!ram_file.empty()) jail.binds.push_back({.path = ram_file, .writable = true});
}

std::vector<std::string> ShareHelperArgv(const GuestAssets& assets, const std::string& share_dir) {
  return {assets.share_helper, "-n", "-f", std::to_string(kShareHelperFd), "-p", share_dir};
}

std::string HostTscKhz() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) return "";
    char* end = nullptr;
    double mhz = std::strtod(line.c_str() + colon + 1, &end);
    if (mhz <= 0) return "";
    return std::to_string(static_cast<long>(mhz * 1000));
  }
  return "";
}

bool ConsoleReportsStall(std::string_view console) {
  // "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "rcu: INFO:
  // rcu_sched self-detected stall on CPU", "watchdog: BUG: soft lockup".
  return console.find("detected stall") != std::string_view::npos ||
         console.find("BUG: soft lockup") != std::string_view::npos;
}

bool ConsoleStallWatch::Stalled(const std::string& console_log) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_read_) return false;
  next_read_ = now + interval_;
  if (!read_once_) {
    read_once_ = true;
    last_growth_ = now;  // silence counts from the first look
  }
  Result<std::string> console = ReadFile(console_log);
  if (!console) return false;
  if (ConsoleReportsStall(*console)) {
    reason_ = "the guest's console reports a stalled CPU";
    return true;
  }
  if (console->size() != last_size_) {
    last_size_ = console->size();
    last_growth_ = now;
    return false;
  }
  if (console->find("hull-agent [") != std::string::npos || now - last_growth_ < silence_) {
    return false;
  }
  reason_ = "the guest's console has been silent for " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(silence_).count()) +
            " s and hull-agent has not started";
  return true;
}

std::string LastLines(std::string_view text, size_t n) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  size_t pos = text.size();
  for (size_t lines = 0; lines < n && pos > 0; ++lines) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string_view::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  if (pos > 0) ++pos;  // after the newline
  return std::string(text.substr(pos));
}

}  // namespace hull::shim::vm
