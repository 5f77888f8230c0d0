// The fixture of the CRI tests (cri_test.cc, cri_parity_test.cc): a private
// containerd 1.6.20 (or, for "C2" cases, 2.x) with its CRI plugin and hull's
// runtime handlers, the project's CRI client, and the harness's CNI bridge
// (127.201.0.0/24); CriPodTest runs a test once per handler and network
// (PodCase). See docs/testing.md.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/event_loop.h"
#include "cri/runtime/v1/api.pb.h"
#include "google/protobuf/empty.pb.h"
#include "oci/pause_spec.h"
#include "oci/sizing.h"
#include "tests/integration/cri/cri_client.h"
#include "tests/integration/cri/cri_pod.h"
#include "tests/integration/harness/harness.h"
#include "ttrpc/client.h"

namespace hull::itest {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

inline constexpr const char* kBusybox = "docker.io/hull/busybox:latest";

// A uint64 CRI field: proto3 JSON writes 64-bit integers as strings.
inline uint64_t U64(const json& v) {
  if (v.is_string()) return std::stoull(v.get<std::string>());
  if (v.is_number()) return v.get<uint64_t>();
  return 0;
}

class CriTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) {
      // In the cgroup v2 guest (ctest cri_vm) a skip would hide a broken setup.
      if (std::getenv("HULL_VM_TEST_REQUIRE") != nullptr) FAIL() << reason;
      GTEST_SKIP() << reason;
    }
    char config_dir[] = "/tmp/hull-cri-config-XXXXXX";
    ASSERT_NE(::mkdtemp(config_dir), nullptr);
    config_dir_ = config_dir;
    ContainerdOptions options{.enable_cri = true, .runtime_handlers_toml = HandlersToml()};
    if (containerd2_) {
      std::string why_not;
      options.containerd_dir = Containerd2Dir(&why_not);
      if (options.containerd_dir.empty()) GTEST_SKIP() << why_not;
    }
    std::string error;
    containerd_ = PrivateContainerd::Start(options, &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("k8s.io", &error)) << error;
    OpenForRunsc({containerd_->dir(), containerd_->dir() + "/tmp", config_dir_});
    cri_ = std::make_unique<CriClient>(containerd_->address());
    ASSERT_TRUE(WaitForCriImage(*cri_, kBusybox)) << "CRI never saw " << kBusybox;
    cgroup_parent_ = TestCgroupParent(
        "hull-cri", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  void TearDown() override {
    // containerd first: after a failed test its teardown ends the pod's
    // containers, and only then is their cgroup parent empty.
    containerd_.reset();
    if (!cgroup_parent_.empty()) RemoveCgroupParent(cgroup_parent_);
    if (!config_dir_.empty()) fs::remove_all(config_dir_);
  }

  // Runtime handlers besides the harness's "hull", each with a hull config
  // file named by its runtimeoptions ConfigPath (docs/config.md):
  // - "hull-pod" sizes the pod cgroup and accounts the shim to it;
  // - "hull-crun" runs the pod's containers with crun;
  // - "hull-runsc" runs the pod in one gVisor sandbox, with runsc's state
  //   under the test's directory, and the shipped network = "host" (the
  //   sandbox in the pod's namespace, sockets through the host kernel):
  //   Debian's runsc (2022) decides it is in the host's network namespace
  //   when /proc/sys/net/core/rmem_default exists, which on kernels that made
  //   that sysctl per namespace (this host's 6.x) is true in the pod's
  //   namespace too, so "sandbox" fails with "cannot run with network enabled
  //   in root network namespace" (docs/backends.md).
  std::string HandlersToml() {
    auto handler = [&](const std::string& name, const std::string& config,
                       const std::string& runtime_keys = "") {
      const std::string path = config_dir_ + "/" + name + ".toml";
      std::ofstream(path) << config;
      const std::string table =
          "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." + name;
      return table + "]\n  runtime_type = \"io.containerd.hull.v2\"\n" + runtime_keys + table +
             ".options]\n  ConfigPath = \"" + path + "\"\n";
    };
    const std::string runsc_config =
        "runtime = \"runsc\"\nroot = \"" + RunscRoot() + "\"\n[runsc_config]\nnetwork = \"host\"\n";
    std::string toml =
        handler("hull-pod", "[sizing]\npod_cgroup_limits = true\nshim_in_pod_cgroup = true\n") +
        handler("hull-runsc", runsc_config) + handler("hull-crun", "runtime = \"crun\"\n");
    // The harness moves these tables to plugins."io.containerd.cri.v1.runtime"
    // on containerd 2.x. The "shim" sandboxer (hull's Sandbox API) is
    // sandbox_api_test's: its pause is hull's own process, not a task.
    return toml;
  }
  std::string RunscRoot() const { return config_dir_ + "/runsc"; }

  json PodConfig(const std::string& name, bool host_network) const {
    return PodSandboxConfigJson(name, cgroup_parent_, containerd_->dir() + "/pods/" + name,
                                host_network);
  }

  std::string RunPod(const json& config, const std::string& handler = "hull") {
    CriReply r = cri_->Call("RunPodSandbox", {{"config", config}, {"runtime_handler", handler}});
    EXPECT_TRUE(r.ok) << r.error << "\n" << containerd_->LogTail();
    return r.ok ? r.body.value("pod_sandbox_id", "") : "";
  }

  std::string StartContainer(const std::string& pod, const json& pod_config,
                             const std::string& name) {
    CriReply run = cri_->RunContainer(pod, pod_config, BusyboxContainerConfig(name, kBusybox));
    EXPECT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail();
    return run.ok ? run.body.value("container_id", "") : "";
  }

  // containerd's v2 runtime bundle of a task in namespace k8s.io.
  std::string Bundle(const std::string& id) const {
    return containerd_->state() + "/io.containerd.runtime.v2.task/k8s.io/" + id;
  }

  // hull shim processes serving this containerd (not a confined server's
  // spawner, which has the same command line: docs/security.md).
  std::vector<pid_t> HullShims() const { return HullServers(containerd_->address()); }

  // The host pid of a task's init, from `ctr task ls`.
  pid_t TaskPid(const std::string& id) {
    CommandResult r = containerd_->Ctr({"tasks", "ls"}, "k8s.io");
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string task;
      pid_t pid = -1;
      if (fields >> task >> pid && task == id) return pid;
    }
    return -1;
  }

  // Stops and removes the pod, then checks that nothing of it is left.
  // With `hull_removes_parent`, hull created the pod's cgroup_parent and must
  // have removed it itself by the time its shim is gone.
  void RemovePodAndCheckNothingLeft(const std::string& pod, bool hull_removes_parent = false) {
    // The pod shim's socket, as `start` wrote it into the pause bundle
    // ("unix:///run/containerd/s/<hash>").
    std::string socket = ReadText(Bundle(pod) + "/address");
    ASSERT_EQ(socket.rfind("unix://", 0), 0u) << socket;
    socket = socket.substr(7);
    CriReply stop = cri_->Call("StopPodSandbox", {{"pod_sandbox_id", pod}});
    ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail();
    CriReply remove = cri_->Call("RemovePodSandbox", {{"pod_sandbox_id", pod}});
    ASSERT_TRUE(remove.ok) << remove.error << "\n" << containerd_->LogTail();

    EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 20s))
        << "hull shim still running after RemovePodSandbox";
    // A confined server's spawner ends just after its server (on the
    // channel's EOF): wait for it, then nothing may name the pod.
    EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(pod).empty(); }, 10s))
        << "a process still names the pod " << pod << DescribeProcesses(ProcessesMatching(pod));
    EXPECT_EQ(MountsUnder(containerd_->dir()), std::vector<std::string>{});
    EXPECT_FALSE(fs::exists(socket)) << socket;
    EXPECT_FALSE(fs::exists(Bundle(pod)));
    std::vector<std::string> cgroups = CgroupsUnder(cgroup_parent_);
    EXPECT_TRUE(cgroups.empty()) << "left: " << cgroups.front();
    if (hull_removes_parent) {
      for (const std::string& root : CgroupHierarchies()) {
        EXPECT_FALSE(fs::exists(root + cgroup_parent_)) << "hull created it and must remove it";
      }
    }
    EXPECT_TRUE(RemoveCgroupParent(cgroup_parent_));
  }

  // Set before SetUp: run containerd 2.x (Containerd2Dir()) instead of
  // Debian's 1.6.20.
  bool containerd2_ = false;
  std::string config_dir_;
  std::unique_ptr<PrivateContainerd> containerd_;
  std::unique_ptr<CriClient> cri_;
  std::string cgroup_parent_;
};

// The pod containerd's CRI plugin runs through a hull runtime handler: "hull"
// (runc) on the pod network or the host's, and "hull-runsc" (one gVisor
// sandbox per pod) on the pod network (runsc refuses the host's network
// namespace here).
// On containerd 2.x ("C2" cases) with the default sandboxer (podsandbox:
// CRI runs the pause container as a task).
struct PodCase {
  const char* name;
  const char* handler;
  bool host_network;
  bool containerd2 = false;
};

// For test names and messages (gtest would print the struct's bytes).
inline void PrintTo(const PodCase& c, std::ostream* os) {
  *os << c.name;
}

class CriPodTest : public CriTest, public ::testing::WithParamInterface<PodCase> {
 protected:
  void SetUp() override {
    containerd2_ = GetParam().containerd2;
    CriTest::SetUp();
  }
};

}  // namespace hull::itest
