// The vm backend through containerd 1.6.20 and ctr: a `hull-vm` runtime
// config (runtime = "vm") boots one QEMU micro-VM per pod under TCG with
// hull-agent inside (docs/vm.md). The guest image is built (or found cached)
// by tools/guest-image into <build>/guest-image, where the backend's
// defaults find it. One guest at a time (RESOURCE_LOCK hull_agent_vm as well
// as hull_containerd); skips, saying why, without root or QEMU.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/file_util.h"
#include "base/spawn.h"
#include "tests/integration/guest_image.h"
#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

// Boots take 1.3 s idle and 5-15 s on the loaded 2-core CI machine.
constexpr auto kVmTimeout = 180s;
constexpr char kRunRoot[] = "/run/hull/vm";

std::string HostRelease() {
  std::ifstream in("/proc/sys/kernel/osrelease");
  std::string release;
  std::getline(in, release);
  return release;
}

class VmBackendTest : public HullCtrTest {
 protected:
  void SetUp() override {
    std::string why;
    std::optional<std::map<std::string, std::string>> image = BuildGuestImage(&why);
    if (!image) GTEST_SKIP() << why;
    image_ = std::move(*image);
    HullCtrTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The `hull-vm` runtime config: the backend's defaults find the image.
    std::ofstream(config_) << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\n";
  }

  void TearDown() override {
    if (HasFailure() && containerd_) {
      for (const auto& entry : fs::directory_iterator(
               containerd_->state() + "/io.containerd.runtime.v2.task/default", ec_)) {
        std::cerr << "console of " << entry.path().filename() << ":\n"
                  << ReadFile(std::string(kRunRoot) + "/" + entry.path().filename().string() +
                              "/vm-console.log")
                         .value_or("(none)")
                  << "\n";
      }
    }
    HullCtrTest::TearDown();
  }

  // QEMU processes of this test's pods (their run directories).
  // Every test's pod is t<n>.
  std::vector<pid_t> Qemus() const {
    return ProcessesMatching("-name hull:" + std::string(kRunRoot) + "/t");
  }
  // This test's pods' run directories.
  std::vector<std::string> RunDirs() const {
    std::vector<std::string> dirs;
    for (const auto& entry : fs::directory_iterator(kRunRoot, ec_)) {
      std::string name = entry.path().filename();
      if (name.starts_with("t") || name.starts_with("pod")) dirs.push_back(entry.path());
    }
    return dirs;
  }

  std::string GuestRelease() { return image_["HULL_GUEST_KERNEL_RELEASE"]; }

  // A config.json (for `ctr run --config`) of a runtime-spec release newer
  // than hull knows. (A field newer than the guest's crun cannot be sent
  // this way: containerd 1.6's Go spec types drop the fields they lack.)
  std::string NewerSpec() const {
    nlohmann::json spec = {
        {"ociVersion", "1.4.0"},
        {"process", {{"args", {"true"}}, {"cwd", "/"}}},
        {"root", {{"path", "rootfs"}}},
        {"mounts", {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}}}},
        {"linux",
         {{"namespaces",
           {{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "mount"}}, {{"type", "network"}}}}}}};
    std::string path = containerd_->dir() + "/newer-spec.json";
    std::ofstream(path) << spec.dump();
    return path;
  }

  std::map<std::string, std::string> image_;
  mutable std::error_code ec_;
};

TEST_P(VmBackendTest, RunRmPrintsTheGuestKernel) {
  CommandResult r = Run({"--rm"}, "t1", {"sh", "-c", "echo hello; uname -r"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "hello\n" + GuestRelease() + "\n");
  EXPECT_NE(GuestRelease(), HostRelease());
  // The last delete powered the VM off and the shim is gone with it.
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
  EXPECT_TRUE(RunDirs().empty());
  // The guest powered itself off (DestroySandbox); QEMU was not killed.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return containerd_->LogTail(400).find(
                   "QEMU exited with status 0 (the guest powered off)") != std::string::npos;
      },
      10s))
      << containerd_->LogTail(60);
}

TEST_P(VmBackendTest, DetachedTaskServesExecTtyPsMetricsPauseResumeKill) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "RUNNING"));
  EXPECT_EQ(Qemus().size(), 1u);

  r = containerd_->Ctr({"task", "exec", "--exec-id", "e1", "t1", "sh", "-c",
                        "echo exec-out; echo exec-err >&2; exit 3"},
                       "default", 60s);
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, "exec-out\n");
  EXPECT_NE(r.err.find("exec-err"), std::string::npos) << r.err;

  // With a terminal (ctr needs one of its own: script(1)). The guest's pty
  // gets the host terminal's size through ResizePty -> TtyWinResize: the
  // process waits (bounded) until it reads 30 100.
  {
    std::string cmd = "stty rows 30 cols 100; ctr --address " + containerd_->address() +
                      " -n default task exec -t --exec-id e2 t1 sh -c "
                      "'[ -t 0 ] && [ -t 1 ] && echo on-a-terminal; i=0; "
                      "while [ \"$(stty size)\" != \"30 100\" ] && [ $i -lt 100 ]; do "
                      "sleep 0.1; i=$((i+1)); done; stty size; tty; exit 0'";
    r = RunCommand({"script", "-qec", cmd, "/dev/null"}, 90s);
    EXPECT_TRUE(r.ok()) << r.Describe();
    EXPECT_NE(r.out.find("on-a-terminal"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("30 100"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << r.out;
  }

  // ps lists guest pids.
  r = Ctr({"task", "ps", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find("PID"), std::string::npos) << r.out;

  r = Ctr({"task", "metrics", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find("memory"), std::string::npos) << r.out;

  r = Ctr({"task", "pause", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "PAUSED"));
  r = Ctr({"task", "resume", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "RUNNING"));

  r = Ctr({"task", "kill", "-s", "SIGKILL", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "STOPPED"));
  r = Ctr({"task", "rm", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  Ctr({"container", "rm", "t1"});
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
  EXPECT_TRUE(RunDirs().empty());
}

// The stdio the core opens for runc, pumped to and from the guest: stdin
// (CloseIO at its end reaches the guest's cat as EOF), a file log and a
// logging binary.
TEST_P(VmBackendTest, StdinFileAndBinaryLogsReachTheGuest) {
  std::string ctr = "ctr --address " + containerd_->address() + " -n default";
  std::string cmd = "(until " + ctr + " task ls | grep -q '^t2 .*RUNNING'; do sleep 0.2; done; " +
                    "printf 'line one\\nline two\\n') | " + ctr + " run --rm --fifo-dir " +
                    containerd_->dir() + "/fifo --runtime " + kHull + " --runtime-config-path " +
                    config_ + " " + kBusybox + " t2 cat";
  CommandResult r = RunCommand({"sh", "-c", cmd}, 180s);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "line one\nline two\n");

  std::string log = containerd_->dir() + "/logs/t1.log";
  r = Run({"--rm", "--log-uri", "file://" + log}, "t1",
          {"sh", "-c", "echo to-stdout; echo to-stderr >&2"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::string text = ReadFile(log).value_or("");
  EXPECT_NE(text.find("to-stdout\n"), std::string::npos) << text;
  EXPECT_NE(text.find("to-stderr\n"), std::string::npos) << text;

  std::string logger = containerd_->dir() + "/logger.sh";
  std::string out = containerd_->dir() + "/binary.log";
  std::ofstream(logger) << "#!/bin/sh\nexec 5>&-\n(cat <&3; cat <&4) > " << out << "\n";
  fs::permissions(logger, fs::perms::owner_all);
  r = Run({"--rm", "--log-uri", "binary://" + logger}, "t3", {"echo", "via-binary"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitUntil(
      [&] { return ReadFile(out).value_or("").find("via-binary") != std::string::npos; }, 10s));
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
}

// `ctr run --rootfs DIR` (issue 23): the spec's root.path is DIR and
// containerd passes no rootfs mounts; DIR itself reaches the guest, as it
// does for runc (it failed: the guest's crun found no /bin/sh).
TEST_P(VmBackendTest, RootPathWithoutRootfsMountsRunsInTheGuest) {
  const std::string rootfs = containerd_->dir() + "/plain-rootfs";
  for (const char* dir : {"/bin", "/proc", "/sys", "/dev", "/tmp", "/etc"}) {
    fs::create_directories(rootfs + dir);
  }
  fs::copy_file("/bin/busybox", rootfs + "/bin/busybox");
  fs::create_symlink("busybox", rootfs + "/bin/sh");
  CommandResult r =
      containerd_->Ctr({"run", "--rm", "--rootfs", "--runtime", kHull, "--runtime-config-path",
                        config_, rootfs, "t1", "/bin/sh", "-c", "echo hi from $(cat /proc/1/comm)"},
                       "default", kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "hi from sh\n");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
  EXPECT_TRUE(RunDirs().empty());
}

// 64 MiB asked for in a container limited to 32 MiB (the guest's cgroup
// v2): the agent reports the OOM kill, and TaskOOM comes before TaskExit.
TEST_P(VmBackendTest, OomKillInTheGuestIsPublishedBeforeTheExit) {
  ExpectOomKillPublishedBeforeExit(kVmTimeout);
}

// A pod of 1.5 CPU and 256 MiB (CRI's sandbox annotations): the formula
// (docs/sizing.md) gives ceil(0.25 + 1.5) = 2 vCPUs and 256 + 112 + ceil(3% of
// 256) = 376 MiB; the guest has exactly 2 CPUs and at most 376 MiB, and QEMU's command line
// has nothing to hotplug.
TEST_P(VmBackendTest, PodSizeIsTheGuestSize) {
  CommandResult r = Run({"-d", "--annotation", "io.kubernetes.cri.container-type=sandbox",
                         "--annotation", "io.kubernetes.cri.sandbox-id=pod1", "--annotation",
                         "io.kubernetes.cri.sandbox-cpu-period=100000", "--annotation",
                         "io.kubernetes.cri.sandbox-cpu-quota=150000", "--annotation",
                         "io.kubernetes.cri.sandbox-memory=268435456"},
                        "pod1", {"sleep", "1000"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  r = containerd_->Ctr(
      {"task", "exec", "--exec-id", "e1", "pod1", "sh", "-c", "nproc; grep MemTotal /proc/meminfo"},
      "default", 60s);
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::istringstream out(r.out);
  int nproc = 0;
  std::string label;
  uint64_t mem_kib = 0;
  out >> nproc >> label >> mem_kib;
  EXPECT_EQ(nproc, 2) << r.out;
  EXPECT_LE(mem_kib, 376u * 1024) << r.out;
  EXPECT_GT(mem_kib, 200u * 1024) << r.out;  // the kernel keeps 46-81 MiB

  std::vector<pid_t> qemus = QemusOf(std::string(kRunRoot) + "/pod1");
  ASSERT_EQ(qemus.size(), 1u);
  std::string cmdline = ReadFile("/proc/" + std::to_string(qemus[0]) + "/cmdline").value_or("");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  EXPECT_NE(cmdline.find(" -smp 2,maxcpus=2 "), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find(" -m 376 "), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find(" -nodefaults "), std::string::npos) << cmdline;
  for (const char* hotplug : {"slots=", "maxmem", "hotplug", "pc-dimm", "virtio-mem"}) {
    EXPECT_EQ(cmdline.find(hotplug), std::string::npos) << hotplug << " in " << cmdline;
  }
  // QEMU is the shim's child, so in its cgroup (the pod's, when hull made
  // one); on cgroup v1 it joins the pod cgroup, the parent of ctr's
  // cgroupsPath /default/pod1, where that exists (docs/vm.md, "Accounting").
  auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  const bool v1_pod_cgroup = !std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers") &&
                             std::filesystem::exists("/sys/fs/cgroup/memory/default");
  EXPECT_EQ(CgroupDir(qemus[0], "memory"),
            v1_pod_cgroup ? "/sys/fs/cgroup/memory/default" : CgroupDir(shims[0], "memory"));
  RemoveContainer("pod1");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
}

// QEMU runs jailed by default (docs/security.md, "QEMU's jail"): its own
// seccomp sandbox, NoNewPrivs, the capabilities of its 9p export and no
// other, and a mount namespace without the host's /etc, /home and /root.
// The container writes, chowns and sets a setuid mode in its root
// filesystem, which QEMU does on the host with those capabilities. (No
// device node or FIFO can be made through the 9p share, jailed or not:
// the guest gets ENXIO.)
TEST_P(VmBackendTest, QemuRunsJailedAndItsShareStillWorks) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::vector<pid_t> qemus = Qemus();
  ASSERT_EQ(qemus.size(), 1u);
  const std::string proc = "/proc/" + std::to_string(qemus[0]);
  const std::string status = ReadFile(proc + "/status").value_or("");
  auto field = [&](const std::string& name) {
    size_t at = status.find("\n" + name + ":");
    if (at == std::string::npos) return std::string("(none)");
    at = status.find_first_not_of(" \t", at + name.size() + 2);
    return status.substr(at, status.find('\n', at) - at);
  };
  // A user of its own ([vm] jail_id_base + its spawner's pid), the jail
  // group, no capability in any set.
  const uid_t uid = static_cast<uid_t>(std::stoul(field("Uid")));
  EXPECT_EQ(uid, 2'100'000'000u + static_cast<uid_t>(ParentPid(qemus[0]))) << status;
  EXPECT_EQ(field("Gid").substr(0, 10), "2100000000") << status;
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(field(set), "0000000000000000") << set << "\n" << status;
  }
  EXPECT_EQ(field("NoNewPrivs"), "1") << status;
  EXPECT_EQ(field("Seccomp"), "2") << status;
  // hull's filter, then QEMU's own -sandbox.
  EXPECT_GE(std::stoi(field("Seccomp_filters")), 2) << status;
  // The 9p export is its share helper's: root in a chroot of the pod's
  // share, with only its file capabilities, QEMU's sibling under the
  // spawner; QEMU holds no path of the share.
  std::vector<pid_t> helpers = ProcessesNamed("virtfs-proxy-he");
  ASSERT_EQ(helpers.size(), 1u);
  const std::string helper = "/proc/" + std::to_string(helpers[0]);
  EXPECT_EQ(fs::read_symlink(helper + "/root", ec_), fs::path(std::string(kRunRoot) + "/t1/share"));
  EXPECT_EQ(ParentPid(helpers[0]), ParentPid(qemus[0]));
  const std::string helper_status = ReadFile(helper + "/status").value_or("");
  EXPECT_NE(helper_status.find("CapBnd:\t0000000000000000"), std::string::npos) << helper_status;
  // hull's jail for it: NoNewPrivs, hull's filter (chroot allowed), a mount
  // namespace of its own.
  EXPECT_NE(helper_status.find("NoNewPrivs:\t1"), std::string::npos) << helper_status;
  EXPECT_NE(helper_status.find("Seccomp:\t2"), std::string::npos) << helper_status;
  EXPECT_NE(fs::read_symlink("/proc/self/ns/mnt", ec_), fs::read_symlink(helper + "/ns/mnt", ec_));
  EXPECT_EQ(ReadFile(proc + "/cmdline").value_or("").find("/share"), std::string::npos);
  // Its root, seen through its own mount namespace.
  EXPECT_NE(fs::read_symlink("/proc/self/ns/mnt", ec_), fs::read_symlink(proc + "/ns/mnt", ec_));
  EXPECT_TRUE(fs::exists("/etc/passwd"));
  EXPECT_FALSE(fs::exists(proc + "/root/etc/passwd", ec_));
  // A root of its own: /usr, the merged-/usr links, /dev, /proc and the
  // top directory of its guest assets (this build tree's), nothing else of
  // the host's: no /etc, /home, /root, /run, /tmp, /var.
  std::set<std::string> top;
  for (const auto& entry : fs::directory_iterator(proc + "/root", ec_)) {
    top.insert(entry.path().filename().string());
  }
  for (const char* gone : {"etc", "home", "root", "run", "tmp", "var", "boot", "srv"}) {
    EXPECT_FALSE(top.contains(gone)) << gone;
  }
  EXPECT_TRUE(top.contains("usr") && top.contains("dev") && top.contains("proc"));
  EXPECT_FALSE(fs::exists(proc + "/root/run/hull", ec_));
  EXPECT_FALSE(fs::exists(proc + "/root/dev/sda", ec_));

  r = containerd_->Ctr({"task", "exec", "--exec-id", "e1", "t1", "sh", "-c",
                        "echo hi > /tmp/f && chown 1234:5678 /tmp/f && chmod 4640 /tmp/f && "
                        "ls -ln /tmp/f | awk '{print $1, $3, $4}' && cat /tmp/f"},
                       "default", 60s);
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "-rwSr----- 1234 5678\nhi\n") << r.out;
  RemoveContainer("t1");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
  EXPECT_TRUE(RunDirs().empty());
}

// The shim killed outright: QEMU dies with it (parent-death signal), and
// containerd's cleanup (the `delete` action) leaves no run directory, share
// mount or socket.
TEST_P(VmBackendTest, ShimKillLeavesNoVmBehind) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  ASSERT_EQ(Qemus().size(), 1u);
  const std::string address = ReadFile(Bundle("t1") + "/address").value_or("");
  ASSERT_EQ(::kill(shims[0], SIGKILL), 0);
  EXPECT_TRUE(WaitUntil([&] { return Qemus().empty(); }, 30s));
  EXPECT_TRUE(WaitForStatus("t1", "STOPPED") || Task("t1").first == 0);
  Ctr({"task", "rm", "t1"});
  Ctr({"container", "rm", "t1"});
  EXPECT_TRUE(WaitUntil([&] { return RunDirs().empty(); }, 30s));
  std::string mounts = ReadFile("/proc/self/mountinfo").value_or("");
  EXPECT_EQ(mounts.find(std::string(kRunRoot) + "/t1"), std::string::npos);
  if (address.starts_with("unix://")) {
    EXPECT_TRUE(WaitUntil([&] { return ::access(address.substr(7).c_str(), F_OK) != 0; }, 30s))
        << address;
  }
}

// A test that fails with a VM pod running has its containerd torn down by
// the harness: containerd and the shim are killed (QEMU dies with the shim)
// and containerd never runs `delete`. The harness runs hull's `delete` in
// each bundle instead, so the pod's run directory and the bind mounts in its
// share go too, as containerd's cleanup would have done.
TEST_P(VmBackendTest, HarnessTeardownWithARunningVmLeavesNothing) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  ASSERT_EQ(Qemus().size(), 1u);
  ASSERT_EQ(RunDirs().size(), 1u);
  ASSERT_FALSE(MountsUnder(std::string(kRunRoot) + "/t1/").empty());
  containerd_.reset();
  EXPECT_TRUE(WaitUntil([&] { return Qemus().empty(); }, 30s));
  EXPECT_EQ(RunDirs(), std::vector<std::string>{});
  EXPECT_EQ(MountsUnder(std::string(kRunRoot) + "/t1/"), std::vector<std::string>{});
}

// A boot whose CPU stalls (the guest's console says so) is booted again,
// once. No real guest stalls on demand (CI saw it once in some thousand TCG
// boots), so the [vm] qemu here is a stand-in for the stalled attempts: it
// writes the kernel's RCU stall warning to the console QEMU would write and
// hangs; the attempts after those run the real QEMU.
TEST_P(VmBackendTest, StalledBootIsBootedAgainOnceThenFails) {
  const std::string dir = containerd_->dir();
  const std::string qemu = dir + "/stalling-qemu";
  auto write_stand_in = [&](int stalls) {
    fs::remove(dir + "/boots", ec_);
    std::ofstream(qemu) << "#!/bin/sh\n"
                        << "n=$(($(cat " << dir << "/boots 2>/dev/null || echo 0) + 1))\n"
                        << "echo $n > " << dir << "/boots\n"
                        << "[ $n -gt " << stalls << " ] && exec qemu-system-x86_64 \"$@\"\n"
                        << "for a; do case $a in file,id=console,path=*) "
                           "c=${a#file,id=console,path=};; esac; done\n"
                        << "echo '[   21.634581] rcu: INFO: rcu_preempt detected stalls on "
                           "CPUs/tasks:' > \"$c\"\n"
                        << "exec sleep 7919\n";
    fs::permissions(qemu, fs::perms::owner_all);
  };
  auto boots = [&] { return ReadFile(dir + "/boots").value_or("?\n"); };
  // QEMU as root (no share helper): the stand-in writes its console by
  // path, and lives in the test's private directory.
  std::ofstream(config_) << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\nqemu = \"" << qemu
                         << "\"\nshare_helper = \"\"\n";

  // One stalled boot: the second runs the pod.
  write_stand_in(1);
  CommandResult r = Run({"--rm"}, "t1", {"uname", "-r"}, kVmTimeout);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, GuestRelease() + "\n");
  EXPECT_EQ(boots(), "2\n");
  std::string log = ReadFile(containerd_->log_path()).value_or("");
  EXPECT_NE(log.find("stalled CPU before hull-agent answered"), std::string::npos);
  EXPECT_NE(log.find("cold boot again"), std::string::npos);
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));

  // Two: the pod fails, saying why, and nothing is left.
  write_stand_in(2);
  r = Run({"--rm"}, "t1", {"true"}, kVmTimeout);
  EXPECT_FALSE(r.ok()) << r.Describe();
  EXPECT_NE(r.err.find("cold boot 2 of the pod's VM stalled too"), std::string::npos)
      << r.Describe();
  EXPECT_NE(r.err.find("rcu_preempt detected stalls"), std::string::npos) << r.Describe();
  EXPECT_EQ(boots(), "2\n");
  Ctr({"container", "rm", "t1"});
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
  EXPECT_TRUE(ProcessesMatching("sleep 7919").empty());  // the stand-in
  EXPECT_TRUE(RunDirs().empty());
}

// What cannot boot is refused with a message that says why, and leaves no
// QEMU, run directory or shim behind.
TEST_P(VmBackendTest, BootFailuresSayWhyAndLeaveNothing) {
  struct Case {
    std::string config;
    std::vector<std::string> flags;
    std::vector<std::string> says;
    std::string spec;  // a config.json for `ctr run --config` (no image then)
  };
  const std::vector<Case> cases = {
      {"[vm]\nkernel = \"/nonexistent/vmlinux\"\n", {}, {"/nonexistent/vmlinux", "[vm] kernel"}},
      {"[vm]\nqemu = \"no-such-qemu\"\n", {}, {"QEMU binary \"no-such-qemu\""}},
      // Under TCG no guest answers within 300 ms.
      {"[vm]\nagent_timeout_ms = 300\n", {}, {"agent deadline of 300 ms", "console"}},
      // 64 CPUs: more than this host has.
      {"",
       {"--annotation", "io.kubernetes.cri.container-type=sandbox", "--annotation",
        "io.kubernetes.cri.sandbox-id=t1", "--annotation",
        "io.kubernetes.cri.sandbox-cpu-period=100000", "--annotation",
        "io.kubernetes.cri.sandbox-cpu-quota=6400000"},
       {"needs 65 vCPUs", "CPUs"}},
      // A spec the guest's crun would refuse: refused before boot.
      {"",
       {},
       {"does not know what 1.4.0 added", "crun in the pod's VM", "not booted"},
       NewerSpec()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config + (c.flags.empty() ? "" : c.flags.back()));
    std::ofstream(config_) << "runtime = \"vm\"\n" << c.config;
    std::vector<std::string> flags = {"--rm"};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    CommandResult r = c.spec.empty()
                          ? Run(flags, "t1", {"true"}, kVmTimeout)
                          : containerd_->Ctr({"run", "--runtime", kHull, "--runtime-config-path",
                                              config_, "--rm", "--config", c.spec, "t1"},
                                             "default", kVmTimeout);
    EXPECT_FALSE(r.ok()) << r.Describe();
    for (const std::string& says : c.says) {
      EXPECT_NE(r.err.find(says), std::string::npos) << says << "\n" << r.Describe();
    }
    Ctr({"container", "rm", "t1"});
    EXPECT_TRUE(WaitUntil([&] { return Shims().empty() && Qemus().empty(); }, 30s));
    EXPECT_TRUE(RunDirs().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Vm, VmBackendTest, ::testing::Values(std::string("vm")));

}  // namespace
}  // namespace hull::itest
