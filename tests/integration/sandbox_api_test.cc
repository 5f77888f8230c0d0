// The Sandbox API end to end: containerd 2.1.5's CRI plugin with a runtime
// handler that sets `sandboxer = "shim"`, so containerd creates the pod
// through hull's containerd.runtime.sandbox.v1.Sandbox service
// (docs/sandbox-api.md), driven by the project's CRI client. containerd 2.x
// comes from the harness (Containerd2Dir: $HULL_CONTAINERD2_DIR or the
// tarball in ../shared/containerd-2/); skips with one line without it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/cri/cri_client.h"
#include "tests/integration/harness/containerd2.h"
#include "tests/integration/harness/harness.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kBusybox = "docker.io/hull/busybox:latest";

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SandboxApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    std::string why;
    const std::string containerd2 = Containerd2Dir(&why);
    if (containerd2.empty()) GTEST_SKIP() << why;

    cgroup_parent_ = "/hull-sbapi-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const std::string table = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.";
    const std::string handlers = table +
                                 "hull-shim]\n  runtime_type = \"io.containerd.hull.v2\"\n" +
                                 "  sandboxer = \"shim\"\n";
    std::string error;
    containerd_ = PrivateContainerd::Start(
        {.enable_cri = true, .runtime_handlers_toml = handlers, .containerd_dir = containerd2},
        &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("k8s.io", &error)) << error;
    cri_ = std::make_unique<CriClient>(containerd_->address());
    ASSERT_TRUE(WaitUntil(
        [&] {
          CriReply r = cri_->Call("ImageStatus", {{"image", {{"image", kBusybox}}}});
          return r.ok && r.body.contains("image") && !r.body["image"].is_null() &&
                 !r.body["image"].value("id", "").empty();
        },
        30s))
        << "CRI never saw " << kBusybox;
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
    for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
                             "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      ::rmdir((std::string(root) + cgroup_parent_).c_str());
    }
  }

  json PodConfig(const std::string& name) const {
    return {
        {"metadata", {{"name", name}, {"uid", name + "-uid"}, {"namespace", "hull-test"}}},
        {"hostname", name},
        {"log_directory", containerd_->dir() + "/pods/" + name},
        {"linux",
         {{"cgroup_parent", cgroup_parent_},
          {"security_context",
           {{"namespace_options", {{"network", "POD"}, {"pid", "CONTAINER"}, {"ipc", "POD"}}}}},
          {"resources",
           {{"cpu_period", 100000},
            {"cpu_quota", 150000},
            {"cpu_shares", 1536},
            {"memory_limit_in_bytes", 256 << 20}}}}},
    };
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

  std::string cgroup_parent_;
  std::unique_ptr<PrivateContainerd> containerd_;
  std::unique_ptr<CriClient> cri_;
};

TEST_F(SandboxApiTest, ShimSandboxerRunsAPodWithTwoContainers) {
  const json pod_config = PodConfig("sbapi");
  CriReply run =
      cri_->Call("RunPodSandbox", {{"config", pod_config}, {"runtime_handler", "hull-shim"}});
  ASSERT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail(200);
  const std::string pod = run.body.value("pod_sandbox_id", "");
  ASSERT_FALSE(pod.empty());

  std::cerr << "sandbox bundle: " << Bundle(pod) << "\n";
  // The sandbox bundle has no config.json: hull sized the pod from the
  // PodSandboxConfig itself (docs/sizing.md (c)).
  EXPECT_FALSE(fs::exists(Bundle(pod) + "/config.json"));
  const json size = json::parse(ReadText(Bundle(pod) + "/hull-pod-size.json"), nullptr, false);
  ASSERT_TRUE(size.is_object()) << "no hull-pod-size.json in the sandbox bundle";
  EXPECT_EQ(size.value("source", ""), "PodSandboxConfig");
  EXPECT_EQ(size.value("vcpus", 0u), 2u);
  EXPECT_EQ(size.value("memory_mib", 0u), 320u);

  CriReply status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.body["status"].value("state", ""), "SANDBOX_READY") << status.body.dump();
  std::vector<pid_t> shims = HullShims();
  ASSERT_EQ(shims.size(), 1u);
  std::vector<pid_t> pauses = HullProcesses(/*pause=*/true);
  ASSERT_EQ(pauses.size(), 1u);

  const std::string c1 = StartContainer(pod, pod_config, "one");
  const std::string c2 = StartContainer(pod, pod_config, "two");
  ASSERT_FALSE(c1.empty());
  ASSERT_FALSE(c2.empty());
  EXPECT_EQ(HullShims(), shims) << "the containers must reach the sandbox's server";
  // They run in the pause process's network, IPC and UTS namespaces.
  CommandResult tasks = containerd_->Ctr({"tasks", "ls"}, "k8s.io");
  for (const std::string& id : {c1, c2}) {
    std::istringstream lines(tasks.out);
    std::string line;
    pid_t pid = -1;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string task;
      pid_t p = -1;
      if (fields >> task >> p && task == id) pid = p;
    }
    ASSERT_GT(pid, 0) << id << " not in\n" << tasks.out;
    for (const char* ns : {"net", "ipc", "uts"}) {
      auto link = [ns](pid_t p) {
        return fs::read_symlink("/proc/" + std::to_string(p) + "/ns/" + ns).string();
      };
      EXPECT_EQ(link(pid), link(pauses[0])) << id << " " << ns;
    }
  }

  CriReply exec = cri_->Call("ExecSync", {{"container_id", c1},
                                          {"cmd", {"sh", "-c", "echo hello; hostname; exit 3"}},
                                          {"timeout", 30}});
  ASSERT_TRUE(exec.ok) << exec.error;
  EXPECT_EQ(DecodeBase64(exec.body.value("stdout", "")), "hello\nsbapi\n");
  EXPECT_EQ(exec.body.value("exit_code", -1), 3);

  CriReply stats = cri_->Call("ContainerStats", {{"container_id", c2}});
  ASSERT_TRUE(stats.ok) << stats.error;
  EXPECT_EQ(stats.body["stats"]["attributes"].value("id", ""), c2);

  const std::string bundle = Bundle(pod);
  const std::string socket = ReadText(bundle + "/address");
  CriReply stop = cri_->Call("StopPodSandbox", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail(200);
  status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.body["status"].value("state", ""), "SANDBOX_NOTREADY");
  CriReply remove = cri_->Call("RemovePodSandbox", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(remove.ok) << remove.error << "\n" << containerd_->LogTail(200);

  EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 20s))
      << "hull shim still running after RemovePodSandbox\n"
      << containerd_->LogTail(200);
  EXPECT_TRUE(ProcessesMatching(pod).empty()) << "a process still names the pod " << pod;
  EXPECT_TRUE(HullProcesses(/*pause=*/true).empty()) << "a pause process is left";
  EXPECT_EQ(MountsUnder(containerd_->dir()), std::vector<std::string>{});
  if (socket.rfind("unix://", 0) == 0) {
    EXPECT_FALSE(fs::exists(socket.substr(7))) << socket;
  }
  EXPECT_FALSE(fs::exists(bundle));
}

}  // namespace
}  // namespace hull::itest
