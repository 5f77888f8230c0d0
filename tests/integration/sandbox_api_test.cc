// The Sandbox API end to end: containerd 2.x's (2.3.4 by default) CRI plugin with a runtime
// handler that sets `sandboxer = "shim"`, so containerd creates the pod
// through hull's containerd.runtime.sandbox.v1.Sandbox service
// (docs/sandbox-api.md), driven by the project's CRI client. containerd 2.x
// comes from the harness (Containerd2Dir: $HULL_CONTAINERD2_DIR or the
// tarball in ../shared/containerd-2/); skips with one line without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/cri/cri_client.h"
#include "tests/integration/cri/cri_pod.h"
#include "tests/integration/guest_image.h"
#include "tests/integration/harness/containerd2.h"
#include "tests/integration/harness/harness.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
constexpr char kVmRunRoot[] = "/run/hull/vm/";

// A uint64 CRI field: proto3 JSON writes 64-bit integers as strings.
uint64_t U64(const json& v) {
  if (v.is_string()) return std::stoull(v.get<std::string>());
  if (v.is_number()) return v.get<uint64_t>();
  return 0;
}

// The three runtime handlers with sandboxer = "shim": "hull-shim" runs the
// pod with runc and hull's pause process, "hull-runsc-shim" in one gVisor
// sandbox that hull creates at CreateSandbox, "hull-vm-shim" in one QEMU
// micro-VM that hull boots at CreateSandbox at the pod's size
// (docs/sandbox-api.md, docs/vm.md).
struct ShimCase {
  const char* name;
  const char* handler;
  bool runsc = false;
  bool vm = false;
};

void PrintTo(const ShimCase& c, std::ostream* os) {
  *os << c.name;
}

class SandboxApiTest : public ::testing::TestWithParam<ShimCase> {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    std::string why;
    const std::string containerd2 = Containerd2Dir(&why);
    if (containerd2.empty()) GTEST_SKIP() << why;
    if (vm() && !BuildGuestImage(&why)) GTEST_SKIP() << why;

    char config_dir[] = "/tmp/hull-sbapi-config-XXXXXX";
    ASSERT_NE(::mkdtemp(config_dir), nullptr);
    config_dir_ = config_dir;
    cgroup_parent_ = TestCgroupParent(
        "hull-sbapi", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::string error;
    containerd_ = PrivateContainerd::Start({.enable_cri = true,
                                            .runtime_handlers_toml = HandlersToml(),
                                            .containerd_dir = containerd2},
                                           &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("k8s.io", &error)) << error;
    OpenForRunsc({containerd_->dir(), containerd_->dir() + "/tmp", config_dir_});
    cri_ = std::make_unique<CriClient>(containerd_->address());
    ASSERT_TRUE(WaitForCriImage(*cri_, kBusybox)) << "CRI never saw " << kBusybox;
  }

  void TearDown() override {
    // The harness removes the sockets of task bundles; a sandbox bundle
    // lives elsewhere (io.containerd.sandbox.controller.v1.shim), so a test
    // that failed with the server alive would leave its socket behind.
    std::vector<std::string> sockets;
    std::error_code ec;
    if (containerd_) {
      for (const auto& entry : fs::recursive_directory_iterator(
               containerd_->state() + "/io.containerd.sandbox.controller.v1.shim", ec)) {
        if (entry.path().filename() != "address") continue;
        const std::string address = ReadText(entry.path());
        if (address.rfind("unix://", 0) == 0) sockets.push_back(address.substr(7));
      }
    }
    containerd_.reset();  // kills what is left
    for (const std::string& socket : sockets) ::unlink(socket.c_str());
    // Containers containerd killed at its teardown leave their cgroups
    // below the pod's parent: the deepest first, then the parent.
    if (!cgroup_parent_.empty()) {
      std::vector<std::string> left = CgroupsUnder(cgroup_parent_);
      std::sort(left.begin(), left.end(),
                [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
      for (const std::string& dir : left) ::rmdir(dir.c_str());
      RemoveCgroupParent(cgroup_parent_);
    }
    if (!config_dir_.empty()) fs::remove_all(config_dir_, ec);
  }

  // Both handlers set sandboxer = "shim" (the harness moves the tables to
  // plugins."io.containerd.cri.v1.runtime" on containerd 2.x). The runsc one
  // needs a hull config of its own (runtime = "runsc" and, as cri_test's
  // "hull-runsc", network = "none": Debian's runsc refuses the pod's network
  // namespace on this kernel, docs/backends.md). It cannot come through the
  // handler's options: for a pod with a shim sandboxer, containerd 2.1.5
  // decodes a container's runtime options as runc Options (to add the
  // sandbox's task API address) and fails on runtimeoptions' ConfigPath. So
  // the handler's runtime_type is a path (containerd accepts one) to a
  // wrapper that names the config file in HULL_CONFIG (docs/sandbox-api.md).
  std::string HandlersToml() const {
    const std::string table = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.";
    const std::string runsc_config = config_dir_ + "/runsc.toml";
    std::ofstream(runsc_config) << "runtime = \"runsc\"\nroot = \"" << RunscRoot()
                                << "\"\n[runsc_config]\nnetwork = \"none\"\n";
    const std::string wrapper = Wrapper("runsc", runsc_config);
    // The VM: the guest image in the build tree, found by the defaults. Its
    // server runs confined (docs/security.md, "VM pods confined"): its
    // spawner wires the network namespace CreateSandbox names, mounts the
    // share and starts QEMU.
    const std::string vm_config = config_dir_ + "/vm.toml";
    std::ofstream(vm_config)
        << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\n[security]\nconfine = true\n";
    const std::string vm_wrapper = Wrapper("vm", vm_config);
    // "hull-runc-type": hull installed under the runc runtime type (podsandbox
    // sandboxer), the only way CRI 2.1.5 introspects its features.
    return table + "hull-runc-type]\n  runtime_type = \"io.containerd.runc.v2\"\n" +
           "  runtime_path = \"" + HullShimDir() + "/containerd-shim-hull-v2\"\n" + table +
           "hull-shim]\n  runtime_type = \"io.containerd.hull.v2\"\n" + "  sandboxer = \"shim\"\n" +
           table + "hull-runsc-shim]\n  runtime_type = \"" + wrapper +
           "\"\n  sandboxer = \"shim\"\n" + table + "hull-vm-shim]\n  runtime_type = \"" +
           vm_wrapper + "\"\n  sandboxer = \"shim\"\n";
  }
  // containerd-shim-hull-<name>: hull with HULL_CONFIG=`config`.
  std::string Wrapper(const std::string& name, const std::string& config) const {
    const std::string wrapper = config_dir_ + "/containerd-shim-hull-" + name;
    std::ofstream(wrapper) << "#!/bin/sh\nHULL_CONFIG=" << config << " exec " << HullShimDir()
                           << "/containerd-shim-hull-v2 \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    return wrapper;
  }
  std::string RunscRoot() const { return config_dir_ + "/runsc"; }
  bool runsc() const { return GetParam().runsc; }
  bool vm() const { return GetParam().vm; }
  // A VM's boot and every call into the guest are slow under TCG.
  std::chrono::seconds CallTimeout() const { return vm() ? 180s : 120s; }
  int ExecTimeout() const { return vm() ? 120 : 30; }

  json PodConfig(const std::string& name) const {
    return PodSandboxConfigJson(name, cgroup_parent_, containerd_->dir() + "/pods/" + name);
  }

  std::string RunPod(const json& pod_config) {
    CriReply run = cri_->Call("RunPodSandbox",
                              {{"config", pod_config}, {"runtime_handler", GetParam().handler}},
                              CallTimeout());
    EXPECT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail(200);
    return run.ok ? run.body.value("pod_sandbox_id", "") : "";
  }

  std::string StartContainer(const std::string& pod, const json& pod_config,
                             const std::string& name) {
    CriReply run = cri_->RunContainer(pod, pod_config, BusyboxContainerConfig(name, kBusybox));
    EXPECT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail();
    return run.ok ? run.body.value("container_id", "") : "";
  }

  // The shim bundle of `id`: containerd 2.x keeps sandbox bundles apart from
  // task bundles, so look for the directory with the shim's address file.
  std::string Bundle(const std::string& id) const {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(containerd_->state(), ec)) {
      if (entry.is_directory() && entry.path().filename() == id &&
          fs::exists(entry.path() / "address")) {
        return entry.path();
      }
    }
    return containerd_->state() + "/io.containerd.runtime.v2.task/k8s.io/" + id;
  }

  // hull's processes for this containerd: its servers, or (`pause`) the
  // pause processes they cloned, which keep the server's command line and
  // differ in their name (comm). A confined server's spawner
  // (docs/security.md) is neither.
  std::vector<pid_t> HullProcesses(bool pause) const {
    std::vector<pid_t> found;
    for (pid_t pid : ProcessesMatching(containerd_->address())) {
      const std::string proc = "/proc/" + std::to_string(pid);
      if (ReadText(proc + "/cmdline").find("containerd-shim-hull-v2") == std::string::npos) {
        continue;
      }
      const std::string comm = ReadText(proc + "/comm");
      if (comm == "hull-spawner\n") continue;
      if ((comm == "hull-pause\n") == pause) found.push_back(pid);
    }
    return found;
  }
  std::vector<pid_t> HullShims() const { return HullProcesses(false); }

  // The gVisor sandbox processes of `pod`.
  std::vector<pid_t> RunscSandboxes(const std::string& pod) const {
    std::vector<pid_t> found;
    for (pid_t p : ProcessesMatching("runsc-sandbox")) {
      if (Cmdline(p).find(pod) != std::string::npos) found.push_back(p);
    }
    return found;
  }
  // The QEMU processes of `pod` (their command line names its run directory).
  std::vector<pid_t> Qemus(const std::string& pod) const { return QemusOf(kVmRunRoot + pod); }
  CriReply Exec(const std::string& container, const std::string& script) const {
    return cri_->Call(
        "ExecSync",
        {{"container_id", container}, {"cmd", {"sh", "-c", script}}, {"timeout", ExecTimeout()}},
        CallTimeout());
  }
  CommandResult RunscList() const {
    return RunCommand({"runsc", "--root", RunscRoot() + "/k8s.io", "list"});
  }

  // The host pid of a task's init, from `ctr task ls`.
  pid_t TaskPid(const std::string& id) const {
    CommandResult tasks = containerd_->Ctr({"tasks", "ls"}, "k8s.io");
    std::istringstream lines(tasks.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string task;
      pid_t p = -1;
      if (fields >> task >> p && task == id) return p;
    }
    return -1;
  }

  // What holds the pod: hull's pause process (runc), or the gVisor sandbox
  // that hull created with hull-pause as its PID 1 (runsc), the shim's child
  // either way. `containers` are the app containers that must be in it.
  void ExpectOneSandbox(const std::string& pod, pid_t shim,
                        const std::vector<std::string>& containers) {
    std::vector<pid_t> pauses = HullProcesses(/*pause=*/true);
    if (vm()) {
      // QEMU is the sandbox, booted at CreateSandbox at the pod's size;
      // the containers run in its guest.
      EXPECT_TRUE(pauses.empty()) << "a VM pod needs no hull pause process";
      std::vector<pid_t> qemus = Qemus(pod);
      ASSERT_EQ(qemus.size(), 1u);
      // The child of the confined server's spawner.
      const pid_t spawner = ParentPid(qemus[0]);
      EXPECT_EQ(ParentPid(spawner), shim);
      EXPECT_EQ(ReadText("/proc/" + std::to_string(spawner) + "/comm"), "hull-spawner\n");
      const std::string cmdline = Cmdline(qemus[0]);
      EXPECT_NE(cmdline.find("-smp 2,maxcpus=2 -m 376 "), std::string::npos) << cmdline;
      const std::string host_boot = ReadText("/proc/sys/kernel/random/boot_id");
      std::string guest_boot;
      for (const std::string& id : containers) {
        CriReply boot = Exec(id, "cat /proc/sys/kernel/random/boot_id; nproc");
        ASSERT_TRUE(boot.ok) << boot.error;
        const std::string out = DecodeBase64(boot.body.value("stdout", ""));
        EXPECT_NE(out.rfind(host_boot, 0), 0u) << id << " runs on the host";
        EXPECT_TRUE(guest_boot.empty() || out == guest_boot) << id << " is in another guest";
        EXPECT_TRUE(out.ends_with("\n2\n")) << out;
        guest_boot = out;
      }
      return;
    }
    if (runsc()) {
      EXPECT_TRUE(pauses.empty()) << "a runsc pod needs no hull pause process";
      std::vector<pid_t> sandboxes = RunscSandboxes(pod);
      ASSERT_EQ(sandboxes.size(), 1u);
      EXPECT_EQ(ParentShim(sandboxes[0]), shim);
      CommandResult list = RunscList();
      ASSERT_TRUE(list.ok()) << list.Describe();
      EXPECT_NE(list.out.find(pod), std::string::npos) << list.out;
      for (const std::string& id : containers) {
        EXPECT_NE(list.out.find(id), std::string::npos) << id << " not in\n" << list.out;
      }
      return;
    }
    ASSERT_EQ(pauses.size(), 1u);
    EXPECT_EQ(ParentShim(pauses[0]), shim);
    // The containers run in the pause process's network, IPC and UTS
    // namespaces.
    for (const std::string& id : containers) {
      pid_t pid = TaskPid(id);
      ASSERT_GT(pid, 0) << id;
      for (const char* ns : {"net", "ipc", "uts"}) {
        auto link = [ns](pid_t p) {
          return fs::read_symlink("/proc/" + std::to_string(p) + "/ns/" + ns).string();
        };
        EXPECT_EQ(link(pid), link(pauses[0])) << id << " " << ns;
      }
    }
  }

  // StopPodSandbox, RemovePodSandbox, and nothing of the pod left: no
  // server, pause process, gVisor sandbox, runsc state, mount, socket,
  // bundle or cgroup.
  void RemovePodAndCheckNothingLeft(const std::string& pod) {
    const std::string bundle = Bundle(pod);
    const std::string socket = ReadText(bundle + "/address");
    CriReply stop = cri_->Call("StopPodSandbox", {{"pod_sandbox_id", pod}}, CallTimeout());
    ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail(200);
    CriReply status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
    ASSERT_TRUE(status.ok) << status.error;
    EXPECT_EQ(status.body["status"].value("state", ""), "SANDBOX_NOTREADY");
    CriReply remove = cri_->Call("RemovePodSandbox", {{"pod_sandbox_id", pod}}, CallTimeout());
    ASSERT_TRUE(remove.ok) << remove.error << "\n" << containerd_->LogTail(200);

    EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 20s))
        << "hull shim still running after RemovePodSandbox\n"
        << containerd_->LogTail(200);
    // A confined server's spawner ends just after its server (on the
    // channel's EOF): wait for it, then nothing may name the pod.
    EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(pod).empty(); }, 10s))
        << "a process still names the pod " << pod << DescribeProcesses(ProcessesMatching(pod));
    EXPECT_TRUE(HullProcesses(/*pause=*/true).empty()) << "a pause process is left";
    EXPECT_TRUE(RunscSandboxes(pod).empty()) << "a gVisor sandbox is left";
    EXPECT_TRUE(Qemus(pod).empty()) << "a QEMU is left";
    EXPECT_FALSE(fs::exists(kVmRunRoot + pod)) << "the VM's run directory is left";
    EXPECT_EQ(MountsUnder(kVmRunRoot + pod), std::vector<std::string>{});
    EXPECT_EQ(MountsUnder(containerd_->dir()), std::vector<std::string>{});
    EXPECT_EQ(MountsUnder(config_dir_), std::vector<std::string>{});
    if (socket.rfind("unix://", 0) == 0) {
      EXPECT_FALSE(fs::exists(socket.substr(7))) << socket;
    }
    EXPECT_FALSE(fs::exists(bundle));
    std::vector<std::string> cgroups = CgroupsUnder(cgroup_parent_);
    EXPECT_TRUE(cgroups.empty()) << "cgroup left: " << cgroups.front();
    if (runsc()) {
      CommandResult list = RunscList();
      EXPECT_EQ(list.out.find(pod), std::string::npos) << list.out;
      EXPECT_EQ(EntriesIn(RunscRoot() + "/k8s.io"), std::vector<std::string>{})
          << "runsc state left in " << RunscRoot() << "/k8s.io";
    }
  }

  std::string config_dir_;
  std::string cgroup_parent_;
  std::unique_ptr<PrivateContainerd> containerd_;
  std::unique_ptr<CriClient> cri_;
};

TEST_P(SandboxApiTest, ShimSandboxerRunsAPodWithTwoContainers) {
  const json pod_config = PodConfig("sbapi");
  const std::string pod = RunPod(pod_config);
  ASSERT_FALSE(pod.empty());

  std::cerr << "sandbox bundle: " << Bundle(pod) << "\n";
  // The sandbox bundle has no config.json: hull sized the pod from the
  // PodSandboxConfig itself (docs/sizing.md (c)).
  EXPECT_FALSE(fs::exists(Bundle(pod) + "/config.json"));
  const json size = json::parse(ReadText(Bundle(pod) + "/hull-pod-size.json"), nullptr, false);
  ASSERT_TRUE(size.is_object()) << "no hull-pod-size.json in the sandbox bundle";
  EXPECT_EQ(size.value("source", ""), "PodSandboxConfig");
  EXPECT_EQ(size.value("vcpus", 0u), 2u);
  EXPECT_EQ(size.value("memory_mib", 0u), 376u);

  CriReply status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.body["status"].value("state", ""), "SANDBOX_READY") << status.body.dump();
  std::vector<pid_t> shims = HullShims();
  ASSERT_EQ(shims.size(), 1u);
  ExpectOneSandbox(pod, shims[0], {});

  const std::string c1 = StartContainer(pod, pod_config, "one");
  const std::string c2 = StartContainer(pod, pod_config, "two");
  ASSERT_FALSE(c1.empty());
  ASSERT_FALSE(c2.empty());
  EXPECT_EQ(HullShims(), shims) << "the containers must reach the sandbox's server";
  ExpectOneSandbox(pod, shims[0], {c1, c2});

  CriReply exec = Exec(c1, "echo hello; hostname; echo oops >&2; exit 3");
  ASSERT_TRUE(exec.ok) << exec.error;
  EXPECT_EQ(DecodeBase64(exec.body.value("stderr", "")), "oops\n");
  EXPECT_EQ(DecodeBase64(exec.body.value("stdout", "")), "hello\nsbapi\n");
  EXPECT_EQ(exec.body.value("exit_code", -1), 3);

  CriReply stats = cri_->Call("ContainerStats", {{"container_id", c2}});
  ASSERT_TRUE(stats.ok) << stats.error;
  const json& s = stats.body["stats"];
  EXPECT_EQ(s["attributes"].value("id", ""), c2);
  EXPECT_GT(U64(s["cpu"]["usage_core_nano_seconds"]["value"]), 0u) << s.dump();
  EXPECT_GT(U64(s["memory"]["working_set_bytes"]["value"]), 0u) << s.dump();

  // In-place resize through the shim sandboxer, in the kubelet's sequence
  // (UpdatePodSandboxResources, then UpdateContainerResources): down to 128
  // MiB and up to 256 MiB, read back where the container sees its limit
  // (runc: its cgroup; vm: its cgroup in the guest, at /sys/fs/cgroup in its
  // cgroup namespace). runsc: accepted, the sandbox being held by the pod's
  // cgroup (docs/backends.md, "runsc"). vm: 512 MiB, beyond the VM, is
  // refused naming both sizes, and the limit stays.
  auto resize = [&](int64_t memory) {
    const json resources = {
        {"cpu_period", 100000}, {"cpu_quota", 100000}, {"memory_limit_in_bytes", memory}};
    CriReply sandbox = cri_->Call("UpdatePodSandboxResources",
                                  {{"pod_sandbox_id", pod}, {"resources", resources}});
    EXPECT_TRUE(sandbox.ok) << sandbox.error;
    return cri_->Call("UpdateContainerResources", {{"container_id", c1}, {"linux", resources}},
                      CallTimeout());
  };
  auto seen_limit = [&] {
    CriReply r = Exec(c1,
                      "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                      "cat /sys/fs/cgroup/memory/memory.limit_in_bytes");
    EXPECT_TRUE(r.ok) << r.error;
    return DecodeBase64(r.body.value("stdout", ""));
  };
  for (const int64_t memory : {128ll << 20, 256ll << 20}) {
    CriReply update = resize(memory);
    ASSERT_TRUE(update.ok) << update.error << "\n" << containerd_->LogTail();
    if (!runsc()) {
      EXPECT_EQ(seen_limit(), std::to_string(memory) + "\n");
    }
  }
  if (vm()) {
    CriReply beyond = resize(512ll << 20);
    ASSERT_FALSE(beyond.ok);
    EXPECT_NE(beyond.error.find("a memory limit of 512 MiB does not fit the pod's VM, booted with "
                                "376 MiB of RAM of which 256 MiB are for the pod's containers"),
              std::string::npos)
        << beyond.error;
    EXPECT_EQ(seen_limit(), std::to_string(256 << 20) + "\n");
  }

  RemovePodAndCheckNothingLeft(pod);
  if (vm()) {
    // StopSandbox powered the guest off; QEMU was not killed.
    EXPECT_NE(
        containerd_->LogTail(100000).find("QEMU exited with status 0 (the guest powered off)"),
        std::string::npos)
        << containerd_->LogTail(100);
  }
}

// containerd restarts while the pod runs: it reconnects to the same server
// (the sandbox bundle's address), whose sandbox lives on in memory; the pod
// is still ready with its container, and Stop/Remove still clean up.
TEST_P(SandboxApiTest, PodSurvivesAContainerdRestart) {
  const json pod_config = PodConfig("sbrestart");
  const std::string pod = RunPod(pod_config);
  ASSERT_FALSE(pod.empty());
  const std::string c1 = StartContainer(pod, pod_config, "one");
  ASSERT_FALSE(c1.empty());
  std::vector<pid_t> shims = HullShims();
  ASSERT_EQ(shims.size(), 1u);

  EXPECT_EQ(RestartAndWaitForReadyPod(*containerd_, *cri_, pod, 30s), "");
  EXPECT_EQ(HullShims(), shims) << "the server must outlive containerd's restart";
  ExpectOneSandbox(pod, shims[0], {c1});

  CriReply list = cri_->Call("ListContainers", {{"filter", {{"pod_sandbox_id", pod}}}});
  ASSERT_TRUE(list.ok) << list.error;
  ASSERT_EQ(list.body.value("containers", json::array()).size(), 1u) << list.body.dump();
  EXPECT_EQ(list.body["containers"][0].value("id", ""), c1);
  EXPECT_EQ(list.body["containers"][0].value("state", ""), "CONTAINER_RUNNING");
  CriReply exec = Exec(c1, "hostname");
  ASSERT_TRUE(exec.ok) << exec.error;
  EXPECT_EQ(DecodeBase64(exec.body.value("stdout", "")), "sbrestart\n");
  // An exit after the restart reaches the new containerd.
  CriReply stop =
      cri_->Call("StopContainer", {{"container_id", c1}, {"timeout", 0}}, CallTimeout());
  ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail(100);
  CriReply stopped = cri_->Call("ContainerStatus", {{"container_id", c1}});
  ASSERT_TRUE(stopped.ok) << stopped.error;
  EXPECT_EQ(stopped.body["status"].value("state", ""), "CONTAINER_EXITED");
  EXPECT_EQ(stopped.body["status"].value("exit_code", 0), 137);

  RemovePodAndCheckNothingLeft(pod);
}

// The server ends (SIGTERM) while its pod runs, before ShutdownSandbox: what
// holds the pod goes with it (runc: the pause process dies with its parent;
// runsc: the server kills the gVisor sandbox and force-deletes it and its
// containers in runsc). What containerd then does with the pod's containers
// is containerd's (the harness's teardown ends them).
TEST_P(SandboxApiTest, AServerThatEndsTakesItsSandboxAlong) {
  const json pod_config = PodConfig("sbterm");
  const std::string pod = RunPod(pod_config);
  ASSERT_FALSE(pod.empty());
  const std::string c1 = StartContainer(pod, pod_config, "one");
  ASSERT_FALSE(c1.empty());
  std::vector<pid_t> shims = HullShims();
  ASSERT_EQ(shims.size(), 1u);
  const std::string bundle = Bundle(pod);
  ASSERT_EQ(::kill(shims[0], SIGTERM), 0);
  EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 20s)) << "the server did not end";
  EXPECT_TRUE(HullProcesses(/*pause=*/true).empty()) << "a pause process outlived its server";
  EXPECT_TRUE(RunscSandboxes(pod).empty()) << "a gVisor sandbox outlived its server\n"
                                           << containerd_->LogTail(100);
  EXPECT_TRUE(Qemus(pod).empty()) << "a QEMU outlived its server";
  EXPECT_FALSE(fs::exists(kVmRunRoot + pod)) << "the VM's run directory is left";
  EXPECT_FALSE(fs::exists(bundle + "/hull-sandbox"));
  if (runsc()) {
    CommandResult list = RunscList();
    EXPECT_EQ(list.out.find(pod), std::string::npos) << list.out;
    EXPECT_EQ(list.out.find(c1), std::string::npos) << list.out;
  }
}

// What CRI's Status says a runtime handler can do, from its `-info`
// (docs/start-delete.md, "-info"). containerd 2.1.5's CRI asks only a handler
// whose runtime_type is io.containerd.runc.v2, and logs why it skipped the
// others: a hull handler of its own type (or a path) reports no features
// (no recursive read-only mounts, no user namespaces), while hull under the
// runc type (runtime_path) reports what its `-info` says. containerd 2.3
// asks every handler: each backend's features must then be true, runc's
// "rro" (runc 1.1.5 lists it, and this host's kernel (6.x) has
// mount_setattr), no recursive read-only mounts for runsc and vm (their
// features list no "rro"), and user namespaces for none (no backend lists
// id-mapped mounts: runc 1.1.5 and crun 1.8.1 here, the guest's crun).
TEST_P(SandboxApiTest, CriIntrospectsEveryHandlerTruthfully) {
  const std::string handler = GetParam().handler;
  const bool asks_every_handler = !Containerd2Version().starts_with("2.1");
  if (!asks_every_handler) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          return containerd_->LogTail(100000).find("failed to introspect features of runtime \\\"" +
                                                   handler + "\\\"") != std::string::npos;
        },
        10s))
        << "no introspection line for " << handler << " in containerd's log";
  }
  CriReply status = cri_->Call("Status", {{"verbose", false}});
  ASSERT_TRUE(status.ok) << status.error;
  json ours, runc_type;
  for (const json& h : status.body.value("runtime_handlers", json::array())) {
    if (h.value("name", "") == handler) ours = h;
    if (h.value("name", "") == "hull-runc-type") runc_type = h;
  }
  ASSERT_TRUE(ours.is_object()) << status.body.dump();
  if (asks_every_handler) {
    const json features = ours.value("features", json::object());
    EXPECT_EQ(features.value("recursive_read_only_mounts", false), !runsc() && !vm())
        << ours.dump();
    EXPECT_FALSE(features.value("user_namespaces", false)) << ours.dump();
  } else {
    EXPECT_FALSE(ours.contains("features")) << ours.dump();
  }
  ASSERT_TRUE(runc_type.is_object()) << status.body.dump();
  EXPECT_TRUE(runc_type.contains("features") &&
              runc_type["features"].value("recursive_read_only_mounts", false))
      << runc_type.dump();
  if (runc_type.contains("features")) {
    EXPECT_FALSE(runc_type["features"].value("user_namespaces", false)) << runc_type.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Handlers, SandboxApiTest,
                         ::testing::Values(ShimCase{"Runc", "hull-shim"},
                                           ShimCase{"Runsc", "hull-runsc-shim", true},
                                           ShimCase{"Vm", "hull-vm-shim", false, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hull::itest
