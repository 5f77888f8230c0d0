// CriVmPodTest: VM pods through CRI, the fixture of cri_vm_pod_test.cc (a
// pod's life in its VM) and cri_vm_template_test.cc (template clones). The
// CRI plugin of containerd 1.6.20 and of 2.x (sandboxer podsandbox: the
// pause container is a task; the Sandbox API's "shim" sandboxer is in
// sandbox_api_test) with the runtime handler "hull-vm", a hull config with
// runtime = "vm" (docs/vm.md). Each pod is one QEMU micro-VM under TCG, sized
// at boot from linux.resources, holding the pause container and the pod's
// containers. One guest at a time (RESOURCE_LOCK hull_agent_vm and
// hull_containerd); skips, saying why, without root, QEMU, the guest image or
// containerd 2.x.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "tests/integration/cri/cri_client.h"
#include "tests/integration/cri/cri_pod.h"
#include "tests/integration/guest_image.h"
#include "tests/integration/harness/command.h"
#include "tests/integration/harness/containerd2.h"
#include "tests/integration/harness/harness.h"

namespace hull::itest {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

inline constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
inline constexpr char kVmRunRoot[] = "/run/hull/vm/";
inline constexpr char kTemplateRoot[] = "/run/hull/vm-templates";
// Boots take 1.3 s idle and 5-15 s on the loaded 2-core machine; each CRI
// call that reaches the guest waits for crun under TCG.
inline constexpr auto kCriTimeout = 180s;

// The entries of the vm backend's run root, sorted.
inline std::vector<std::string> VmRunDirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kVmRunRoot, ec)) {
    dirs.push_back(entry.path().filename());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

inline uint64_t U64(const json& v) {
  if (v.is_string()) return std::stoull(v.get<std::string>());
  if (v.is_number()) return v.get<uint64_t>();
  return 0;
}

// Which containerd runs the pods: Debian's 1.6.20, or the harness's 2.x (2.3.4 by default).
struct Containerd {
  const char* name;
  bool v2;
};

inline void PrintTo(const Containerd& c, std::ostream* os) {
  *os << c.name;
}

class CriVmPodTest : public ::testing::TestWithParam<Containerd> {
 protected:
  // Every test runs on containerd 2.x (what a Kubernetes 1.36 node runs).
  // On 1.6.20 the default run has only these: a sized pod with two
  // containers, the refusals (seconds each), and the template clones (two
  // pods of one shape; a damaged template). Each VM pod costs half a
  // minute and more under TCG, and the rest test the shim, not containerd.
  static bool InDefaultContainerd16Matrix() {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (const char* test :
         {"SizedVmPodRunsTwoContainersInOneGuest/", "HostNetworkPodIsRefused/",
          "HostPidAndHostIpcPodsAreRefused/", "TwoPodsOfOneShapeTheSecondAClone/",
          "ADamagedTemplateEndsInAColdBootThatWorks/"}) {
      if (name.rfind(test, 0) == 0) return true;
    }
    return false;
  }

  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    if (!GetParam().v2 && !FullMatrix() && !InDefaultContainerd16Matrix()) {
      GTEST_SKIP() << "containerd 1.6.20: tools/test --full (the default run has it on "
                   << Containerd2Version() << ")";
    }
    std::string why;
    std::string containerd_dir;
    if (GetParam().v2) {
      containerd_dir = Containerd2Dir(&why);
      if (containerd_dir.empty()) GTEST_SKIP() << why;
    }
    if (!BuildGuestImage(&why)) GTEST_SKIP() << why;
    char config_dir[] = "/tmp/hull-cri-vm-XXXXXX";
    ASSERT_NE(::mkdtemp(config_dir), nullptr);
    config_dir_ = config_dir;
    // The hull-vm handler: runtime = "vm", the image found by the defaults.
    const std::string config = config_dir_ + "/hull-vm.toml";
    // HULL_VM_TEMPLATES=1: every pod of the suite from template clones
    // (docs/testing.md); the clone tests turn them on for themselves.
    UseTemplates(std::getenv("HULL_VM_TEMPLATES") != nullptr);
    const std::string table = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.hull-vm";
    ContainerdOptions options{
        .enable_cri = true,
        .runtime_handlers_toml = table + "]\n  runtime_type = \"io.containerd.hull.v2\"\n" + table +
                                 ".options]\n  ConfigPath = \"" + config + "\"\n",
        .containerd_dir = containerd_dir};
    std::string error;
    containerd_ = PrivateContainerd::Start(options, &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("k8s.io", &error)) << error;
    cri_ = std::make_unique<CriClient>(containerd_->address());
    ASSERT_TRUE(WaitForCriImage(*cri_, kBusybox)) << "CRI never saw " << kBusybox;
    cgroup_parent_ = TestCgroupParent(
        "hull-cri-vm", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  void TearDown() override {
    if (HasFailure() && containerd_) {
      for (const auto& entry : fs::directory_iterator(
               containerd_->state() + "/io.containerd.runtime.v2.task/k8s.io", ec_)) {
        std::string console =
            std::string("/run/hull/vm/") + entry.path().filename().string() + "/vm-console.log";
        if (fs::exists(console)) {
          std::cerr << "console of " << entry.path().filename() << ":\n"
                    << ReadText(console) << "\n";
        }
      }
      std::cerr << containerd_->LogTail(80) << "\n";
    }
    containerd_.reset();
    if (templates_mounted_) ::umount2(kTemplateRoot, MNT_DETACH);
    if (!cgroup_parent_.empty()) RemoveCgroupParent(cgroup_parent_);
    if (!config_dir_.empty()) fs::remove_all(config_dir_);
  }

  // The hull-vm handler's config: each pod's shim reads it at its start.
  void UseTemplates(bool on) {
    if (on) MountTemplateTmpfs();
    std::ofstream(config_dir_ + "/hull-vm.toml")
        << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\ntemplates = "
        << (on ? "true" : "false") << "\n";
  }

  // The shim refuses a template cache that is not on tmpfs (docs/vm.md,
  // "Template clones"); where /run is not tmpfs (a container's root, as on
  // the CI machine) the test gives the cache a tmpfs of its own for its run.
  void MountTemplateTmpfs() {
    fs::create_directories(kTemplateRoot, ec_);
    struct statfs st {};
    if (::statfs(kTemplateRoot, &st) == 0 && st.f_type == TMPFS_MAGIC) return;
    ASSERT_EQ(::mount("tmpfs", kTemplateRoot, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "mode=0700,size=2g"),
              0)
        << "mount a tmpfs on " << kTemplateRoot << ": " << std::strerror(errno);
    templates_mounted_ = true;
  }

  // How the pod's VM started ("cold", "clone", "template+clone"), from the
  // record the shim keeps in the pause bundle.
  std::string BootOf(const std::string& pod) const {
    json record = json::parse(ReadText(Bundle(pod) + "/hull-vm.json"), nullptr, false);
    return record.is_object() ? record.value("boot", "") : "";
  }

  json PodConfig(const std::string& name) const {
    return PodSandboxConfigJson(name, cgroup_parent_, containerd_->dir() + "/pods/" + name);
  }

  std::string RunPod(const json& config) {
    CriReply r = cri_->Call("RunPodSandbox", {{"config", config}, {"runtime_handler", "hull-vm"}},
                            kCriTimeout);
    EXPECT_TRUE(r.ok) << r.error << "\n" << containerd_->LogTail();
    return r.ok ? r.body.value("pod_sandbox_id", "") : "";
  }

  // A container that writes a line to each stream, does some CPU work and
  // sleeps; `linux`: its CRI LinuxContainerConfig (resources).
  std::string StartContainer(const std::string& pod, const json& pod_config,
                             const std::string& name, const json& linux = json::object()) {
    json config = {{"metadata", {{"name", name}}},
                   {"image", {{"image", kBusybox}}},
                   {"command",
                    {"sh", "-c",
                     "echo " + name + "-out; echo " + name +
                         "-err >&2; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; "
                         "exec sleep 3600"}},
                   {"log_path", name + ".log"},
                   {"linux", linux}};
    CriReply created = cri_->Call(
        "CreateContainer",
        {{"pod_sandbox_id", pod}, {"config", config}, {"sandbox_config", pod_config}}, kCriTimeout);
    EXPECT_TRUE(created.ok) << created.error << "\n" << containerd_->LogTail();
    if (!created.ok) return "";
    const std::string id = created.body.value("container_id", "");
    CriReply started = cri_->Call("StartContainer", {{"container_id", id}}, kCriTimeout);
    EXPECT_TRUE(started.ok) << started.error << "\n" << containerd_->LogTail();
    return started.ok ? id : "";
  }

  CriReply Exec(const std::string& container, const std::vector<std::string>& cmd) {
    return cri_->Call("ExecSync", {{"container_id", container}, {"cmd", cmd}, {"timeout", 120}},
                      kCriTimeout);
  }

  // The kubelet's in-place resize of `container` of `pod`: CPU quota (of a
  // 100 ms period) and memory limit; UpdatePodSandboxResources first on
  // containerd 2.x (1.6 has none).
  CriReply Resize(const std::string& pod, const std::string& container, int64_t memory,
                  int64_t quota) {
    const json resources = {
        {"cpu_period", 100000}, {"cpu_quota", quota}, {"memory_limit_in_bytes", memory}};
    if (GetParam().v2) {
      CriReply sandbox = cri_->Call("UpdatePodSandboxResources",
                                    {{"pod_sandbox_id", pod}, {"resources", resources}});
      EXPECT_TRUE(sandbox.ok) << sandbox.error;
    }
    return cri_->Call("UpdateContainerResources",
                      {{"container_id", container}, {"linux", resources}}, kCriTimeout);
  }

  std::string Bundle(const std::string& id) const {
    return containerd_->state() + "/io.containerd.runtime.v2.task/k8s.io/" + id;
  }

  // The pod shim's socket, as `start` wrote it into the pause bundle
  // ("unix:///run/containerd/s/<hash>"); "" when there is none.
  std::string ShimSocket(const std::string& pod) const {
    std::string address = ReadText(Bundle(pod) + "/address");
    return address.rfind("unix://", 0) == 0 ? address.substr(7) : "";
  }

  // The pods' hull servers (not their spawners).
  std::vector<pid_t> HullShims() const { return HullServers(containerd_->address()); }

  // The QEMU processes of `pod` (their command line names its run directory).
  std::vector<pid_t> Qemus(const std::string& pod) const { return QemusOf(kVmRunRoot + pod); }

  // The container's state in ContainerStatus ("CONTAINER_EXITED", ...) and
  // its exit code.
  std::pair<std::string, int> ContainerState(const std::string& id) {
    CriReply r = cri_->Call("ContainerStatus", {{"container_id", id}});
    if (!r.ok) return {"(" + r.error + ")", -1};
    return {r.body["status"].value("state", ""), r.body["status"].value("exit_code", 0)};
  }

  // Stop and Remove the pod, then: no shim, no QEMU, no process naming the
  // pod, no mount, no shim socket, no run directory, no bundle, no cgroup.
  // `socket` is the pod shim's (ShimSocket, read while the pod ran).
  void RemovePodAndCheckNothingLeft(const std::string& pod, const std::string& socket) {
    ASSERT_FALSE(socket.empty());
    CriReply stop = cri_->Call("StopPodSandbox", {{"pod_sandbox_id", pod}}, kCriTimeout);
    ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail();
    CriReply remove = cri_->Call("RemovePodSandbox", {{"pod_sandbox_id", pod}}, kCriTimeout);
    ASSERT_TRUE(remove.ok) << remove.error << "\n" << containerd_->LogTail();
    EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 60s))
        << "hull shim still running after RemovePodSandbox";
    EXPECT_TRUE(Qemus(pod).empty());
    // A confined server's spawner ends just after its server (on the
    // channel's EOF): wait for it, then nothing may name the pod.
    EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(pod).empty(); }, 10s))
        << "a process still names the pod " << pod << DescribeProcesses(ProcessesMatching(pod));
    EXPECT_EQ(MountsUnder(containerd_->dir()), std::vector<std::string>{});
    EXPECT_EQ(MountsUnder(kVmRunRoot + pod), std::vector<std::string>{});
    EXPECT_FALSE(fs::exists(kVmRunRoot + pod));
    EXPECT_FALSE(fs::exists(socket)) << socket;
    EXPECT_FALSE(fs::exists(Bundle(pod)));
    std::vector<std::string> cgroups = CgroupsUnder(cgroup_parent_);
    EXPECT_TRUE(cgroups.empty()) << "left: " << cgroups.front();
    EXPECT_TRUE(RemoveCgroupParent(cgroup_parent_));
  }

  std::string config_dir_;
  std::unique_ptr<PrivateContainerd> containerd_;
  std::unique_ptr<CriClient> cri_;
  std::string cgroup_parent_;
  mutable std::error_code ec_;
  bool templates_mounted_ = false;  // MountTemplateTmpfs mounted one
};

}  // namespace hull::itest
