// The vm backend's pure logic (shim/backend/vm/qemu_command.h,
// pod_share.h's spec rewrite): QEMU's command line from the pod's size and
// [vm], the guest assets and their errors, the host capacity check. The
// backend itself is tested against real QEMU and hull-agent in
// tests/integration/vm_backend_test.cc.
#include "shim/backend/vm/qemu_command.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/spawn.h"
#include "base/unique_fd.h"
#include "shim/backend/vm/pod_network.h"
#include "shim/backend/vm/pod_share.h"
#include "shim/backend/vm/qemu_filter.h"

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;

const VmPaths kPaths{.agent_socket = "/run/hull/vm/p/agent.sock",
                     .console_log = "/b/vm-console.log",
                     .share_dir = "/run/hull/vm/p/share"};
const GuestAssets kAssets{.qemu = "/usr/bin/qemu", .kernel = "/g/vmlinux", .initramfs = "/g/i"};

// The value after `option` (the first time it appears); "" if absent.
std::string After(const std::vector<std::string>& argv, const std::string& option) {
  auto it = std::find(argv.begin(), argv.end(), option);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

bool Has(const std::vector<std::string>& argv, const std::string& needle) {
  return std::any_of(argv.begin(), argv.end(),
                     [&](const std::string& a) { return a.find(needle) != std::string::npos; });
}

TEST(QemuArgvTest, MicrovmFromThePodSize) {
  auto argv = QemuArgv(kAssets, VmOptions{}, 2, 320, kPaths, "2400000");
  EXPECT_EQ(argv[0], "/usr/bin/qemu");
  EXPECT_EQ(After(argv, "-M"), "microvm");
  EXPECT_EQ(After(argv, "-smp"), "2,maxcpus=2");
  EXPECT_EQ(After(argv, "-m"), "320");
  // TCG's translation cache capped ([vm] tcg_tb_size_mib, 32 by default).
  EXPECT_EQ(After(argv, "-accel"), "tcg,thread=multi,tb-size=32");
  // RAM from a memfd: host THP leaves it alone.
  EXPECT_EQ(After(argv, "-object"), "memory-backend-memfd,id=ram0,size=320M");
  EXPECT_EQ(After(argv, "-machine"), "memory-backend=ram0");
  EXPECT_FALSE(Has(argv, "-incoming"));
  EXPECT_FALSE(Has(argv, "-qmp"));
  EXPECT_EQ(After(argv, "-kernel"), "/g/vmlinux");
  EXPECT_EQ(After(argv, "-initrd"), "/g/i");
  EXPECT_NE(After(argv, "-append").find("tsc_early_khz=2400000"), std::string::npos);
  EXPECT_TRUE(Has(argv, "-nodefaults"));
  EXPECT_TRUE(Has(argv, "-no-user-config"));
  EXPECT_TRUE(Has(argv, "virtio-serial-device"));
  EXPECT_TRUE(Has(argv, "path=/run/hull/vm/p/agent.sock,server=on,wait=off"));
  EXPECT_TRUE(Has(argv, "name=hull.agent"));
  EXPECT_TRUE(Has(argv, "local,id=pod,path=/run/hull/vm/p/share,"));
  EXPECT_TRUE(Has(argv, "virtio-9p-device,fsdev=pod,mount_tag=hullpod"));
  EXPECT_TRUE(Has(argv, "file,id=console,path=/b/vm-console.log"));
  for (const char* hotplug : {"slots", "maxmem", "hotplug", "dimm", "virtio-mem"}) {
    EXPECT_FALSE(Has(argv, hotplug)) << hotplug;
  }
}

TEST(QemuArgvTest, TheNicIsATapDescriptorWithEth0sMac) {
  EXPECT_FALSE(Has(QemuArgv(kAssets, VmOptions{}, 1, 256, kPaths, ""), "-netdev"));
  auto argv = QemuArgv(kAssets, VmOptions{}, 1, 256, kPaths, "",
                       GuestNic{.fd = 3, .mac = "0a:58:7f:c9:00:02"});
  EXPECT_EQ(After(argv, "-netdev"), "tap,id=net0,fd=3");
  EXPECT_TRUE(Has(argv, "virtio-net-device,netdev=net0,mac=0a:58:7f:c9:00:02"));
  auto pc = QemuArgv(kAssets, VmOptions{.machine = "pc"}, 1, 256, kPaths, "",
                     GuestNic{.fd = 3, .mac = "0a:58:7f:c9:00:02"});
  EXPECT_TRUE(Has(pc, "virtio-net-pci,netdev=net0,mac=0a:58:7f:c9:00:02"));
}

TEST(QemuArgvTest, PcAndKvm) {
  VmOptions options{.machine = "pc", .accel = "kvm", .kernel_args = "loglevel=7"};
  auto argv = QemuArgv(kAssets, options, 4, 1024, kPaths, "2400000");
  EXPECT_EQ(After(argv, "-M"), "pc");
  EXPECT_EQ(After(argv, "-accel"), "kvm");
  EXPECT_EQ(After(argv, "-cpu"), "host");
  EXPECT_TRUE(Has(argv, "virtio-serial-pci"));
  EXPECT_TRUE(Has(argv, "virtio-9p-pci"));
  EXPECT_FALSE(Has(argv, "virtio-mmio"));
  std::string append = After(argv, "-append");
  EXPECT_EQ(append.find("tsc_early_khz"), std::string::npos);  // only microvm under TCG
  EXPECT_NE(append.find(" loglevel=7"), std::string::npos);
  // The guest's THP page reserves cost a 1 GiB pod ~90 MiB (docs/sizing.md).
  EXPECT_NE(append.find(" transparent_hugepage=never"), std::string::npos);
}

// A cold boot (memfd RAM) reports free pages to QEMU; a template or a clone
// (RAM in the template's file, which QEMU 7.2 would punch holes into) does not.
TEST(QemuArgvTest, FreePageReportingOnlyForMemfdRam) {
  const std::string balloon = "virtio-balloon-device,free-page-reporting=on";
  EXPECT_TRUE(Has(QemuArgv(kAssets, VmOptions{}, 1, 256, kPaths, ""), balloon));
  EXPECT_TRUE(Has(QemuArgv(kAssets, VmOptions{.machine = "pc"}, 1, 256, kPaths, ""),
                  "virtio-balloon-pci,free-page-reporting=on"));
  for (const GuestRam& ram :
       {GuestRam{.file = "/t/ram", .share = true}, GuestRam{.file = "/t/ram", .incoming = true}}) {
    auto argv = QemuArgv(kAssets, VmOptions{}, 1, 256, kPaths, "", std::nullopt, ram);
    EXPECT_FALSE(std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
      return a.find("virtio-balloon") != std::string::npos;
    }));
  }
}

TEST(QemuArgvTest, TbSizeZeroIsQemusDefault) {
  auto argv = QemuArgv(kAssets, VmOptions{.tcg_tb_size_mib = 0}, 1, 256, kPaths, "");
  EXPECT_EQ(After(argv, "-accel"), "tcg,thread=multi");
}

// [vm] jail (on by default): QEMU's own seccomp sandbox in the argv, and
// the jail its spawn gets.
TEST(QemuArgvTest, JailedUnlessTurnedOff) {
  auto argv = QemuArgv(kAssets, VmOptions{}, 1, 256, kPaths, "");
  EXPECT_EQ(After(argv, "-sandbox"),
            "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
  EXPECT_FALSE(Has(QemuArgv(kAssets, VmOptions{.jail = false}, 1, 256, kPaths, ""), "-sandbox"));
  EXPECT_FALSE(QemuJail(VmOptions{.jail = false}, {}).has_value());

  // By default a share helper serves the share: QEMU is a user of its own
  // (the jail id base plus its starter's pid) with no capability.
  std::optional<SpawnJail> jail = QemuJail(VmOptions{}, {"/usr/bin/qemu", "/run/hull/vm/p"}, 4242);
  ASSERT_TRUE(jail.has_value());
  EXPECT_EQ(jail->capabilities, 0u);
  EXPECT_EQ(jail->uid, 2'100'004'242u);
  EXPECT_EQ(jail->gid, 2'100'000'000u);
  EXPECT_TRUE(jail->groups.empty());  // /dev/kvm's group only with accel = "kvm"
  EXPECT_EQ(jail->hide, (std::vector<std::string>{"/etc", "/home", "/root"}));
  jail = QemuJail(VmOptions{.jail_id_base = 1000}, {}, 7);
  ASSERT_TRUE(jail.has_value());
  EXPECT_EQ(jail->uid, 1007u);
  // Without one, QEMU stays root with what its own 9p export needs.
  jail = QemuJail(VmOptions{.share_helper = ""}, {"/usr/bin/qemu", "/run/hull/vm/p"}, 4242);
  ASSERT_TRUE(jail.has_value());
  EXPECT_EQ(jail->capabilities, 0x0bu);  // chown, dac_override, fowner
  EXPECT_EQ(jail->uid, 0u);
  // A directory that holds a path QEMU opens stays (a checkout in /home).
  jail = QemuJail(VmOptions{}, {"/home/me/hull/build/guest-image/vmlinux", "/root2/x"});
  ASSERT_TRUE(jail.has_value());
  EXPECT_EQ(jail->hide, (std::vector<std::string>{"/etc", "/root"}));
  // Where the path really is: an asset reached through a symlink into /etc
  // keeps /etc.
  char dir[] = "/tmp/hull-qemu-jail-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string link = std::string(dir) + "/kernel";
  ASSERT_EQ(::symlink("/etc/hostname", link.c_str()), 0);
  jail = QemuJail(VmOptions{}, {link});
  ::unlink(link.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(jail.has_value());
  EXPECT_EQ(jail->hide, (std::vector<std::string>{"/home", "/root"}));
}

// hull's own filter under QEMU's sandbox (qemu_filter.h): every jail has it,
// the same program each time (the spawner compares), and a child under it
// can still exec and run but cannot make a user namespace or trace.
TEST(QemuJailFilterTest, DeniesNamespacesAndTracingAndLetsTheRestRun) {
  Result<std::vector<sock_filter>> filter = QemuJailFilter();
  ASSERT_TRUE(filter) << filter.error().ToString();
  EXPECT_GT(filter->size(), QemuDeniedCalls().size());
  EXPECT_TRUE(SameFilter(*filter, *QemuJailFilter()));
  for (const VmOptions& options : {VmOptions{}, VmOptions{.share_helper = ""}}) {
    std::optional<SpawnJail> jail = QemuJail(options, {});
    ASSERT_TRUE(jail.has_value());
    EXPECT_TRUE(SameFilter(jail->seccomp, *filter));
  }
  if (::geteuid() != 0) GTEST_SKIP() << "a user namespace refused for a reason of its own";
  auto run = [&](std::vector<std::string> argv) {
    Result<Pipe> out = MakePipe();
    EXPECT_TRUE(out.has_value());
    Result<pid_t> pid = Spawn(SpawnOptions{.argv = std::move(argv),
                                           .fds = {{1, out->write.get()}, {2, out->write.get()}},
                                           .jail = SpawnJail{.seccomp = *filter}});
    EXPECT_TRUE(pid.has_value()) << pid.error().ToString();
    out->write.reset();
    std::string text;
    char buf[512];
    for (ssize_t n; (n = ::read(out->read.get(), buf, sizeof buf)) > 0;) text.append(buf, n);
    int status = 0;
    if (pid) ::waitpid(*pid, &status, 0);
    return std::make_pair(ExitStatusFromWait(status), text);
  };
  auto [code, out] = run({"/bin/sh", "-c", "grep -E '^Seccomp:' /proc/self/status"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "Seccomp:\t2\n");
  // Unconfined, root makes a user namespace; under the filter, nobody does.
  std::tie(code, out) = run({"unshare", "--user", "true"});
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("Operation not permitted"), std::string::npos) << out;
  std::tie(code, out) = run({"unshare", "--mount", "--net", "true"});
  EXPECT_NE(code, 0) << out;
}

// A QEMU with a user of its own opens none of the pod's files: it gets the
// share helper's socket, the agent and QMP sockets and the console as
// descriptors; the run directory is still named (-name) for `delete`.
TEST(QemuArgvTest, AQemuWithAUserOfItsOwnGetsDescriptors) {
  VmPaths paths = kPaths;
  paths.agent_fd = kAgentFd;
  paths.console_fd = kConsoleFd;
  paths.share_fd = kShareFd;
  auto argv = QemuArgv(kAssets, VmOptions{}, 1, 256, paths, "", std::nullopt,
                       GuestRam{.file = "/t/ram",
                                .incoming = true,
                                .qmp_socket = "/run/hull/vm/p/qmp.sock",
                                .qmp_fd = kQmpFd});
  EXPECT_EQ(After(argv, "-fsdev"), "proxy,id=pod,sock_fd=5");
  EXPECT_EQ(After(argv, "-add-fd"), "fd=8,set=8");
  EXPECT_TRUE(Has(argv, "file,id=console,path=/dev/fdset/8"));
  EXPECT_TRUE(Has(argv, "socket,id=agent,fd=6,server=on,wait=off"));
  EXPECT_TRUE(Has(argv, "socket,id=qmp,fd=7,server=on,wait=off"));
  EXPECT_EQ(After(argv, "-mon"), "chardev=qmp,mode=control");
  EXPECT_FALSE(Has(argv, "-qmp"));
  EXPECT_EQ(After(argv, "-name"), "hull:/run/hull/vm/p");
  for (const std::string& arg : argv) {
    EXPECT_EQ(arg.find("agent.sock"), std::string::npos) << arg;
    EXPECT_EQ(arg.find("/share"), std::string::npos) << arg;
  }
  EXPECT_EQ(ShareHelperArgv(GuestAssets{.share_helper = "/usr/lib/qemu/virtfs-proxy-helper"},
                            "/run/hull/vm/p/share"),
            (std::vector<std::string>{"/usr/lib/qemu/virtfs-proxy-helper", "-n", "-f", "3", "-p",
                                      "/run/hull/vm/p/share"}));
}

// A template and its clone differ only in the RAM backend's share, the
// incoming state and their paths: the machine must be the same.
TEST(QemuArgvTest, TemplateAndClone) {
  GuestNic template_nic{.fd = -1, .mac = "02:68:75:6c:6c:01"};
  auto tmpl = QemuArgv(kAssets, VmOptions{}, 1, 376, kPaths, "2400000", template_nic,
                       GuestRam{.file = "/t/ram", .share = true, .qmp_socket = "/t/qmp.sock"});
  EXPECT_EQ(After(tmpl, "-object"),
            "memory-backend-file,id=ram0,size=376M,mem-path=/t/ram,share=on");
  EXPECT_EQ(After(tmpl, "-qmp"), "unix:/t/qmp.sock,server=on,wait=off");
  EXPECT_EQ(After(tmpl, "-netdev"), "hubport,id=net0,hubid=0");
  EXPECT_FALSE(Has(tmpl, "-incoming"));

  GuestNic pod_nic{.fd = 3, .mac = "02:68:75:6c:6c:01"};
  auto clone = QemuArgv(kAssets, VmOptions{}, 1, 376, kPaths, "2400000", pod_nic,
                        GuestRam{.file = "/t/ram", .incoming = true, .qmp_socket = "/p/qmp.sock"});
  EXPECT_EQ(After(clone, "-object"),
            "memory-backend-file,id=ram0,size=376M,mem-path=/t/ram,share=off");
  EXPECT_EQ(After(clone, "-incoming"), "defer");
  EXPECT_EQ(After(clone, "-netdev"), "tap,id=net0,fd=3");
  // Everything else is the same, option by option.
  auto strip = [](std::vector<std::string> argv) {
    for (const char* option : {"-object", "-qmp", "-netdev", "-incoming"}) {
      auto it = std::find(argv.begin(), argv.end(), option);
      if (it != argv.end()) argv.erase(it, it + 2);
    }
    return argv;
  };
  EXPECT_EQ(strip(tmpl), strip(clone));
}

class AssetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hull-qemu-command.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const std::string& name) { std::ofstream(dir_ + "/" + name) << "x"; }
  std::string dir_;
};

TEST_F(AssetsTest, EachMissingAssetIsNamed) {
  VmOptions options{.qemu = "/bin/true"};
  auto assets = ResolveGuestAssets(options, {dir_});
  ASSERT_FALSE(assets);
  EXPECT_EQ(assets.error().code(), Code::kNotFound);
  EXPECT_NE(assets.error().message().find("no guest kernel"), std::string::npos);
  EXPECT_NE(assets.error().message().find(dir_ + "/vmlinux"), std::string::npos);

  Touch("vmlinux");
  assets = ResolveGuestAssets(options, {"/nonexistent", dir_});
  ASSERT_FALSE(assets);
  EXPECT_NE(assets.error().message().find("no guest initramfs"), std::string::npos);

  Touch("initramfs.cpio");
  assets = ResolveGuestAssets(options, {"/nonexistent", dir_});
  ASSERT_TRUE(assets) << assets.error().ToString();
  EXPECT_EQ(assets->kernel, dir_ + "/vmlinux");

  options.qemu = "no-such-qemu-binary";
  assets = ResolveGuestAssets(options, {dir_});
  ASSERT_FALSE(assets);
  EXPECT_NE(assets.error().message().find("QEMU binary \"no-such-qemu-binary\""),
            std::string::npos);

  options = VmOptions{.qemu = "/bin/true", .kernel = dir_ + "/missing"};
  assets = ResolveGuestAssets(options, {dir_});
  ASSERT_FALSE(assets);
  EXPECT_NE(assets.error().message().find("([vm] kernel)"), std::string::npos);

  options = VmOptions{.qemu = "/bin/true", .share = "virtiofs"};
  EXPECT_EQ(ResolveGuestAssets(options, {dir_}).error().code(), Code::kUnimplemented);
}

// A jailed QEMU with a share helper is a user of its own: assets it could
// not open are refused before boot, naming the key; without the helper
// (QEMU as root) they pass.
TEST_F(AssetsTest, AssetsAJailedQemuCannotOpenAreNamed) {
  Touch("vmlinux");
  Touch("initramfs.cpio");
  const std::string helper = "/bin/true";
  VmOptions options{.qemu = "/bin/true", .share_helper = helper};
  auto assets = ResolveGuestAssets(options, {dir_});
  ASSERT_TRUE(assets) << assets.error().ToString();
  EXPECT_EQ(assets->share_helper, helper);

  fs::permissions(dir_ + "/vmlinux", fs::perms::owner_read | fs::perms::owner_write);
  assets = ResolveGuestAssets(options, {dir_});
  ASSERT_FALSE(assets);
  EXPECT_EQ(assets.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(assets.error().message().find("([vm] kernel) is not open to QEMU's jail user"),
            std::string::npos)
      << assets.error().ToString();
  fs::permissions(dir_ + "/vmlinux", fs::perms::others_read, fs::perm_options::add);
  // A directory on the way that others cannot search.
  fs::create_directories(dir_ + "/private");
  fs::permissions(dir_ + "/private", fs::perms::owner_all);
  std::ofstream(dir_ + "/private/initramfs.cpio") << "x";
  options.initramfs = dir_ + "/private/initramfs.cpio";
  assets = ResolveGuestAssets(options, {dir_});
  ASSERT_FALSE(assets);
  EXPECT_NE(assets.error().message().find("([vm] initramfs)"), std::string::npos);
  // Through a symlink into it, too.
  fs::create_symlink(dir_ + "/private/initramfs.cpio", dir_ + "/link.cpio");
  options.initramfs = dir_ + "/link.cpio";
  EXPECT_FALSE(ResolveGuestAssets(options, {dir_}));

  options.share_helper = "";
  assets = ResolveGuestAssets(options, {dir_});
  ASSERT_TRUE(assets) << assets.error().ToString();
  EXPECT_EQ(assets->share_helper, "");
  options = VmOptions{.qemu = "/bin/true", .share_helper = "relative/helper"};
  EXPECT_EQ(ResolveGuestAssets(options, {dir_}).error().code(), Code::kNotFound);
}

TEST(GuestAssetDirsTest, PackageThenBuildTree) {
  auto dirs = GuestAssetDirs("/w/build/release/bin/containerd-shim-hull-v2");
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], "/usr/lib/hull/guest");
  EXPECT_EQ(dirs[1], "/w/build/release/bin/../lib/hull/guest");
  EXPECT_EQ(dirs[2], "/w/build/release/bin/../guest-image");
  EXPECT_EQ(dirs[3], "/w/build/release/bin/../../guest-image");
}

TEST(CheckFitsTest, RefusesWithTheNumbers) {
  HostCapacity host{.cpus = 2, .memory_mib = 4096};
  EXPECT_TRUE(CheckFits(2, 4096, host).ok());
  Status s = CheckFits(3, 512, host);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("3 vCPUs"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("has 2 CPUs"), std::string::npos) << s.message();
  s = CheckFits(1, 8192, host);
  EXPECT_NE(s.message().find("8192 MiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("4096 MiB"), std::string::npos) << s.message();
}

TEST(LastLinesTest, TakesTheTail) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(LastLines("a\nb", 5), "a\nb");
  EXPECT_EQ(LastLines("", 3), "");
}

// The console lines of the stalled boot CI saw, and of the other forms.
TEST(ConsoleReportsStallTest, KnowsTheKernelsStallWarnings) {
  EXPECT_TRUE(ConsoleReportsStall(
      "[    0.455974] PCI: Fatal: No config space access function found\n"
      "[   21.634581] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n"
      "[   21.635434] rcu: \t0-...0: (0 ticks this GP) idle=03d4/1/0x4000000000000000\n"));
  EXPECT_TRUE(ConsoleReportsStall("[ 30.1] rcu: INFO: rcu_sched self-detected stall on CPU\n"));
  EXPECT_TRUE(ConsoleReportsStall("[ 26.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s!\n"));
  EXPECT_FALSE(ConsoleReportsStall(""));
  EXPECT_FALSE(
      ConsoleReportsStall("[    0.455974] PCI: Fatal: No config space access function found\n"
                          "[    1.2] random: crng init done\n"));
}

// The watch reads the console file, and at most once per interval: a
// stall written just after a read is seen at the first read after it.
TEST(ConsoleReportsStallTest, WatchReadsTheFileAtMostOncePerInterval) {
  char dir[] = "/tmp/hull-console-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/vm-console.log";
  ConsoleStallWatch missing(std::chrono::milliseconds(0));
  EXPECT_FALSE(missing.Stalled(log)) << "no console yet";
  std::ofstream(log) << "[    1.2] random: crng init done\n";
  ConsoleStallWatch watch(std::chrono::milliseconds(300));
  EXPECT_FALSE(watch.Stalled(log));
  std::ofstream(log, std::ios::app) << "[ 21.6] rcu: INFO: rcu_preempt detected stalls on CPUs\n";
  EXPECT_FALSE(watch.Stalled(log)) << "read again within the interval";
  ::usleep(350'000);
  EXPECT_TRUE(watch.Stalled(log));
  std::filesystem::remove_all(dir);
}

// A console that stops growing before hull-agent wrote to it is a stall
// once `silence` has passed; one the agent wrote to never is.
TEST(ConsoleReportsStallTest, ASilentConsoleWithoutTheAgentIsAStall) {
  char dir[] = "/tmp/hull-console-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/vm-console.log";
  std::ofstream(log) << "[    0.630920] PCI: Fatal: No config space access function found\n";
  // Each false answer below has 500 ms of margin against a late wake-up
  // (a loaded CI host under the sanitizers).
  ConsoleStallWatch watch(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_FALSE(watch.Stalled(log));
  ::usleep(700'000);
  std::ofstream(log, std::ios::app) << "[    1.1] more of the boot\n";
  EXPECT_FALSE(watch.Stalled(log)) << "it grew";
  ::usleep(500'000);
  // Silent for 1.2 s since the first look, but 0.5 s since it grew.
  EXPECT_FALSE(watch.Stalled(log)) << "silent for less than 1 s since it grew";
  ::usleep(700'000);
  EXPECT_TRUE(watch.Stalled(log));
  EXPECT_NE(watch.reason().find("silent for 1 s and hull-agent has not started"), std::string::npos)
      << watch.reason();

  std::ofstream(log, std::ios::app) << "hull-agent [1.52] guest ready (agent started at 1.31)\n";
  ConsoleStallWatch agent(std::chrono::milliseconds(0), std::chrono::milliseconds(100));
  EXPECT_FALSE(agent.Stalled(log));
  ::usleep(250'000);
  EXPECT_FALSE(agent.Stalled(log)) << "the agent spoke: a slow host, not a stall";
  std::ofstream(log, std::ios::app) << "[ 21.6] rcu: INFO: rcu_preempt detected stalls on CPUs\n";
  EXPECT_TRUE(agent.Stalled(log));
  EXPECT_EQ(agent.reason(), "the guest's console reports a stalled CPU");
  std::filesystem::remove_all(dir);
}

TEST(GuestSpecTest, RootAndBindSourcesPointIntoTheShare) {
  nlohmann::json spec = {
      {"root", {{"path", "/host/bundle/rootfs"}, {"readonly", true}}},
      {"mounts",
       {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/data"},
         {"type", "bind"},
         {"source", "/srv/data"},
         {"options", {"rbind", "rw"}}},
        {{"destination", "/etc/x"}, {"source", "/etc/hostx"}, {"options", {"bind", "ro"}}}}}};
  std::vector<std::string> binds;
  auto guest = GuestSpecJson(spec.dump(), "/run/hull/pod/c1", &binds);
  ASSERT_TRUE(guest) << guest.error().ToString();
  auto out = nlohmann::json::parse(*guest);
  EXPECT_EQ(out["root"]["path"], "rootfs");
  EXPECT_EQ(out["root"]["readonly"], true);
  EXPECT_EQ(out["mounts"][0]["source"], "proc");
  EXPECT_EQ(out["mounts"][1]["source"], "/run/hull/pod/c1/mounts/0");
  EXPECT_EQ(out["mounts"][2]["source"], "/run/hull/pod/c1/mounts/1");
  EXPECT_EQ(binds, (std::vector<std::string>{"/srv/data", "/etc/hostx"}));

  EXPECT_EQ(GuestSpecJson("[]", "/x", &binds).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(GuestSpecJson("{}", "/x", &binds).error().code(), Code::kInvalidArgument);
}

// A pod's containers join the namespaces of the pod's container inits
// (guest pids; CRI names the pause container's): those paths stay, any
// other goes (the Sandbox API's name QEMU's host pid, 4242 here).
TEST(GuestSpecTest, OnlyNamespacePathsOfThePodsInitsStay) {
  nlohmann::json spec = {{"root", {{"path", "rootfs"}}},
                         {"linux",
                          {{"namespaces",
                            {{{"type", "pid"}, {"path", "/proc/91/ns/pid"}},
                             {{"type", "ipc"}, {"path", "/proc/4242/ns/ipc"}},
                             {{"type", "uts"}, {"path", "/proc/91/ns/ipc"}},
                             {{"type", "mount"}},
                             {{"type", "network"}, {"path", "/var/run/netns/cni-1"}}}}}}};
  std::vector<std::string> binds;
  auto guest = GuestSpecJson(spec.dump(), "/run/hull/pod/c1", &binds, {91, 95});
  ASSERT_TRUE(guest) << guest.error().ToString();
  EXPECT_EQ(nlohmann::json::parse(*guest)["linux"]["namespaces"], nlohmann::json::parse(R"([
      {"type": "pid", "path": "/proc/91/ns/pid"}, {"type": "ipc"}, {"type": "uts"},
      {"type": "mount"}, {"type": "network"}])"));
  guest = GuestSpecJson(spec.dump(), "/run/hull/pod/c1", &binds);
  ASSERT_TRUE(guest) << guest.error().ToString();
  const nlohmann::json without = nlohmann::json::parse(*guest);
  for (const auto& ns : without["linux"]["namespaces"]) {
    EXPECT_FALSE(ns.contains("path")) << ns.dump();
  }
}

// 9p carries no mount events: a bind that asks for shared or slave
// propagation is refused, naming the volume; rprivate is fine.
TEST(GuestSpecTest, SharedOrSlavePropagationIsRefused) {
  for (const char* propagation : {"rshared", "rslave", "shared", "slave"}) {
    nlohmann::json spec = {{"root", {{"path", "rootfs"}}},
                           {"mounts",
                            {{{"destination", "/data"},
                              {"source", "/srv/data"},
                              {"options", {"rbind", propagation}}}}}};
    std::vector<std::string> binds;
    auto guest = GuestSpecJson(spec.dump(), "/run/hull/pod/c1", &binds);
    ASSERT_FALSE(guest) << propagation;
    EXPECT_EQ(guest.error().code(), Code::kInvalidArgument);
    EXPECT_NE(guest.error().message().find("/data"), std::string::npos) << guest.error().message();
    EXPECT_NE(guest.error().message().find(propagation), std::string::npos);
  }
  nlohmann::json spec = {
      {"root", {{"path", "rootfs"}}},
      {"mounts",
       {{{"destination", "/data"}, {"source", "/srv/data"}, {"options", {"rbind", "rprivate"}}}}}};
  std::vector<std::string> binds;
  EXPECT_TRUE(GuestSpecJson(spec.dump(), "/run/hull/pod/c1", &binds));
}

// The rootfs the guest gets: root.path under the bundle, or as given when
// absolute (`ctr run --rootfs DIR`, no rootfs mounts).
TEST(GuestSpecTest, HostRootfsIsTheSpecsRootPath) {
  EXPECT_EQ(HostRootfs("/b", R"({"root":{"path":"rootfs"}})").value_or(""), "/b/rootfs");
  EXPECT_EQ(HostRootfs("/b", R"({"root":{"path":"/srv/fs"}})").value_or(""), "/srv/fs");
  EXPECT_EQ(HostRootfs("/b", R"({"root":{}})").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(HostRootfs("/b", "[]").error().code(), Code::kInvalidArgument);
}

// A VM shares no namespace with the host: hostPID and hostIPC are refused,
// naming what was asked.
TEST(PodLimitsTest, HostPidAndIpcAreRefused) {
  auto spec_with = [](std::vector<std::string> types) {
    nlohmann::json namespaces = nlohmann::json::array();
    for (const std::string& t : types) namespaces.push_back({{"type", t}});
    return oci::Spec::Parse(
               nlohmann::json{{"ociVersion", "1.1.0"}, {"linux", {{"namespaces", namespaces}}}}
                   .dump())
        .value();
  };
  EXPECT_TRUE(RefuseHostNamespaces(spec_with({"pid", "ipc", "network", "mount"})).ok());
  Status pid = RefuseHostNamespaces(spec_with({"ipc", "network"}));
  EXPECT_EQ(pid.code(), Code::kInvalidArgument);
  EXPECT_NE(pid.message().find("hostPID"), std::string::npos) << pid.message();
  Status ipc = RefuseHostNamespaces(spec_with({"pid", "network"}));
  EXPECT_EQ(ipc.code(), Code::kInvalidArgument);
  EXPECT_NE(ipc.message().find("hostIPC"), std::string::npos) << ipc.message();
}

// A pod whose spec the guest's crun would refuse is refused before its VM
// boots (PrepareSandbox), with the field or the version named; a spec of a
// newer release that uses nothing newer goes (the guest down-levels it).
TEST(PodLimitsTest, ASpecTheGuestsCrunWouldRefuseIsRefusedBeforeBoot) {
  auto spec_of = [](nlohmann::json j) { return oci::Spec::Parse(j.dump()).value(); };
  nlohmann::json spec = {{"ociVersion", "1.3.0"},
                         {"process", {{"args", {"/pause"}}}},
                         {"linux", {{"namespaces", {{{"type", "pid"}}, {{"type", "ipc"}}}}}}};
  EXPECT_TRUE(CheckGuestSpec(spec_of(spec)).ok());
  spec["ociVersion"] = "1.1.0";
  EXPECT_TRUE(CheckGuestSpec(spec_of(spec)).ok());

  // ioPriority came in runtime-spec 1.1.0-rc.3, after what crun 1.8.1 knows.
  spec["ociVersion"] = "1.3.0";
  spec["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_RT"}, {"priority", 1}};
  Status newer = CheckGuestSpec(spec_of(spec));
  EXPECT_EQ(newer.code(), Code::kFailedPrecondition);
  EXPECT_NE(newer.message().find("/process/ioPriority"), std::string::npos) << newer.message();
  EXPECT_NE(newer.message().find(kGuestOciVersionMax), std::string::npos) << newer.message();
  EXPECT_NE(newer.message().find("not booted"), std::string::npos) << newer.message();

  nlohmann::json unknown = {{"ociVersion", "1.4.0"}, {"process", {{"args", {"/pause"}}}}};
  Status later = CheckGuestSpec(spec_of(unknown));
  EXPECT_EQ(later.code(), Code::kFailedPrecondition);
  EXPECT_NE(later.message().find("does not know what 1.4.0 added"), std::string::npos)
      << later.message();
}

}  // namespace
}  // namespace hull::shim::vm
