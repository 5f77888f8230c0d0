// CRI parity (issue 23): the runc handler and the gVisor one held to one
// standard, in one pod each, on containerd 1.6.20 and 2.x. The fixture is
// cri_fixture.h; see docs/testing.md.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "tests/integration/cri_fixture.h"

namespace hull::itest {
namespace {

// One standard for the runc and gVisor handlers (issue 23), in one pod:
// - a Localhost seccomp profile that refuses mkdir is enforced (runsc loads
//   a spec's seccomp only with --oci-seccomp);
// - ExecSync with a 1 s timeout returns containerd's timeout error and the
//   process it started is gone (runsc: killing the host-side `runsc exec`
//   left the process in the sandbox holding the exec's output, and the call
//   never returned);
// - the container sees the pod's IP on its interface (runsc: the shipped
//   network = "host");
// - StopContainer with a grace period ends a container that ignores SIGTERM
//   with SIGKILL after it (137).
class CriParityTest : public CriPodTest {};

TEST_P(CriParityTest, SeccompExecTimeoutAndStopGraceAsForRunc) {
  const json pod_config = PodConfig("parity", GetParam().host_network);
  const std::string pod = RunPod(pod_config, GetParam().handler);
  ASSERT_FALSE(pod.empty());
  const std::string profile = config_dir_ + "/no-mkdir.json";
  std::ofstream(profile)
      << json{{"defaultAction", "SCMP_ACT_ALLOW"},
              {"architectures", {"SCMP_ARCH_X86_64"}},
              {"syscalls", {{{"names", {"mkdir", "mkdirat"}}, {"action", "SCMP_ACT_ERRNO"}}}}}
             .dump();
  json config = BusyboxContainerConfig("parity", kBusybox);
  // SIGTERM ignored (inherited through exec), whether or not the sleep is
  // PID 1: the container shares the pod's PID namespace (CRI's default for
  // a container without namespace_options).
  config["command"] = {"sh", "-c",
                       "mkdir /tmp/made; echo $? >/tmp/rc; trap '' TERM; exec sleep 3600"};
  config["linux"]["security_context"]["seccomp"] = {{"profile_type", "Localhost"},
                                                    {"localhost_ref", profile}};
  CriReply run = cri_->RunContainer(pod, pod_config, config);
  ASSERT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail();
  const std::string id = run.body.value("container_id", "");
  auto exec = [&](const std::vector<std::string>& cmd, int timeout_s) {
    return cri_->Call("ExecSync", {{"container_id", id}, {"cmd", cmd}, {"timeout", timeout_s}},
                      std::chrono::seconds(90));
  };

  CriReply rc;
  ASSERT_TRUE(WaitUntil(
      [&] {
        rc = exec({"cat", "/tmp/rc"}, 30);
        return rc.ok && rc.body.value("exit_code", -1) == 0;
      },
      30s))
      << rc.error;
  EXPECT_NE(DecodeBase64(rc.body.value("stdout", "")), "0\n") << "mkdir was allowed";
  EXPECT_FALSE(fs::exists(Bundle(id) + "/rootfs/tmp/made"));

  // The pod network: the container's interfaces carry the pod's IP (runsc
  // with network = "none" had only loopback).
  CriReply pod_status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(pod_status.ok) << pod_status.error;
  const std::string pod_ip = pod_status.body["status"]["network"].value("ip", "");
  ASSERT_FALSE(pod_ip.empty()) << pod_status.body.dump();
  CriReply addresses = exec({"ip", "-4", "addr"}, 30);
  ASSERT_TRUE(addresses.ok) << addresses.error;
  EXPECT_NE(DecodeBase64(addresses.body.value("stdout", "")).find(pod_ip + "/"), std::string::npos)
      << pod_ip << " not in:\n"
      << DecodeBase64(addresses.body.value("stdout", ""));

  CriReply timed_out = exec({"sleep", "61"}, 1);
  ASSERT_FALSE(timed_out.ok);
  EXPECT_NE(timed_out.error.find("timeout 1s exceeded"), std::string::npos) << timed_out.error;
  std::string ps;
  EXPECT_TRUE(WaitUntil(
      [&] {
        CriReply r = exec({"ps"}, 30);
        ps = r.ok ? DecodeBase64(r.body.value("stdout", "")) : r.error;
        return r.ok && ps.find("sleep 61") == std::string::npos;
      },
      30s))
      << ps;

  CriReply stop = cri_->Call("StopContainer", {{"container_id", id}, {"timeout", 3}});
  ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail();
  CriReply status = cri_->Call("ContainerStatus", {{"container_id", id}});
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.body["status"].value("state", ""), "CONTAINER_EXITED");
  EXPECT_EQ(status.body["status"].value("exit_code", 0), 137);
  RemovePodAndCheckNothingLeft(pod);
}

// The pod's namespaces, held to what CriVmPodTest's
// PodNamespacesSysctlsAndSharedPidAsForRunc asks of hull-vm: the pod's
// kernel.* sysctls reach its containers (through the pod's IPC namespace),
// shareProcessNamespace makes the pause process PID 1 of a container that
// shares the pod's PID namespace, a container with pid=CONTAINER is its own
// PID 1 with the pod's IPC and UTS namespaces, and a shared-PID container
// whose init left workers stops.
TEST_P(CriParityTest, PodSysctlsAndSharedPidNamespace) {
  const bool runsc = std::string_view(GetParam().handler) == "hull-runsc";
  json pod_config = PodConfig("podns", GetParam().host_network);
  pod_config["linux"]["sysctls"] = {{"kernel.shm_rmid_forced", "1"}, {"kernel.msgmax", "10000"}};
  pod_config["linux"]["security_context"]["namespace_options"]["pid"] = "POD";
  if (runsc) {
    // gVisor's kernel takes no sysctls from the spec (it has no
    // shm_rmid_forced, and a fixed msgmax): the pod is refused, naming the
    // first, and nothing of it is left.
    CriReply refused =
        cri_->Call("RunPodSandbox", {{"config", pod_config}, {"runtime_handler", "hull-runsc"}});
    ASSERT_FALSE(refused.ok);
    EXPECT_NE(refused.error.find("sysctl kernel.msgmax cannot be set in a gVisor sandbox"),
              std::string::npos)
        << refused.error;
    EXPECT_TRUE(WaitUntil([&] { return HullShims().empty(); }, 20s));
    EXPECT_EQ(EntriesIn(RunscRoot() + "/k8s.io"), std::vector<std::string>{});
    EXPECT_EQ(MountsUnder(containerd_->dir()), std::vector<std::string>{});
    pod_config["linux"].erase("sysctls");
    pod_config["metadata"]["attempt"] = 1;
  }
  const std::string pod = RunPod(pod_config, GetParam().handler);
  ASSERT_FALSE(pod.empty());
  std::string error;
  const PodNamespaceViews views =
      RunPodNamespaceContainers(*cri_, pod, pod_config, kBusybox, &error);
  ASSERT_EQ(error, "") << containerd_->LogTail();
  const std::string& shared = views.shared;
  const std::vector<std::string>& in_shared = views.in_shared;
  const std::vector<std::string>& in_own = views.in_own;
  for (const auto* lines : {&in_shared, &in_own}) {
    if (runsc) break;
    EXPECT_EQ((*lines)[0], "1") << "kernel.shm_rmid_forced";
    EXPECT_EQ((*lines)[1], "10000") << "kernel.msgmax";
  }
  // The pause image's process (tools/mkimage: /pause, or its busybox
  // stand-in when no static libc is there).
  EXPECT_TRUE(in_shared[2] == "/pause " || in_shared[2].starts_with("/bin/sh -c trap"))
      << in_shared[2];
  EXPECT_EQ(in_own[2], "sleep 3600 ");
  // gVisor's /proc/<pid>/ns has no ipc or uts links (one of each per
  // sandbox).
  if (!runsc) {
    EXPECT_NE(in_own[3], "") << "an IPC namespace link";
    EXPECT_NE(in_own[4], "") << "a UTS namespace link";
    EXPECT_EQ(in_own[3], in_shared[3]) << "one IPC namespace";
    EXPECT_EQ(in_own[4], in_shared[4]) << "one UTS namespace";
  }
  EXPECT_NE(in_own[5], in_shared[5]) << "the own PID namespace";
  EXPECT_NE(in_own[5], "");

  CriReply stop = cri_->Call("StopContainer", {{"container_id", shared}, {"timeout", 2}});
  ASSERT_TRUE(stop.ok) << stop.error << "\n" << containerd_->LogTail();
  CriReply status = cri_->Call("ContainerStatus", {{"container_id", shared}});
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.body["status"].value("state", ""), "CONTAINER_EXITED");
  RemovePodAndCheckNothingLeft(pod);
}

// Mount propagation through CRI (issue 23, item 6), on a volume whose host
// directory is a shared mount: with HostToContainer, a tmpfs mounted on the
// host below the volume after the container started is seen in it, files and
// all (runc: the container's copy of the mount is a slave of the host's;
// runsc: the gofer serves the host's files as the host sees them). With
// Bidirectional, runc's privileged container mounts a tmpfs in the volume and
// the host sees it; runsc refuses it when CRI starts it (its sentry's mounts
// never reach the host, and runsc says so: "rshared" is not supported), the
// pod keeps running, and nothing of the refused container is left. CRI
// takes a volume's propagation only from a privileged pod.
TEST_P(CriParityTest, MountPropagationAsTheSandboxAllows) {
  const bool runsc = std::string_view(GetParam().handler) == "hull-runsc";
  const std::string volume = config_dir_ + "/volume";
  fs::create_directories(volume + "/from-host");
  fs::create_directories(volume + "/from-container");
  SharedMount shared(volume);
  ASSERT_TRUE(shared.ok()) << shared.error();
  json pod_config = PodConfig("propagation", GetParam().host_network);
  pod_config["linux"]["security_context"]["privileged"] = true;  // for the Bidirectional one
  const std::string pod = RunPod(pod_config, GetParam().handler);
  ASSERT_FALSE(pod.empty());
  auto with_volume = [&](const std::string& name, const char* propagation) {
    json config = BusyboxContainerConfig(name, kBusybox);
    config["mounts"] = {
        {{"container_path", "/volume"}, {"host_path", volume}, {"propagation", propagation}}};
    return config;
  };
  auto exec = [&](const std::string& id, const std::vector<std::string>& cmd) {
    return cri_->Call("ExecSync", {{"container_id", id}, {"cmd", cmd}, {"timeout", 30}},
                      std::chrono::seconds(90));
  };

  CriReply run =
      cri_->RunContainer(pod, pod_config, with_volume("slave", "PROPAGATION_HOST_TO_CONTAINER"));
  ASSERT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail();
  const std::string slave = run.body.value("container_id", "");
  const std::string later = volume + "/from-host";
  ASSERT_EQ(::mount("hull-test", later.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  std::ofstream(later + "/file") << "mounted on the host\n";
  CriReply seen = exec(slave, {"cat", "/volume/from-host/file"});
  ASSERT_TRUE(seen.ok) << seen.error;
  EXPECT_EQ(DecodeBase64(seen.body.value("stdout", "")), "mounted on the host\n")
      << DecodeBase64(seen.body.value("stderr", ""));

  json bidirectional = with_volume("shared", "PROPAGATION_BIDIRECTIONAL");
  bidirectional["linux"]["security_context"]["privileged"] = true;
  if (runsc) {
    // CRI's CreateContainer only records the container; the task, and
    // runsc's refusal, come with StartContainer.
    CriReply refused = cri_->RunContainer(pod, pod_config, bidirectional);
    ASSERT_FALSE(refused.ok) << "runsc took a Bidirectional volume";
    EXPECT_EQ(refused.error.rfind("INVALID_ARGUMENT:", 0), 0u) << refused.error;
    EXPECT_NE(refused.error.find("cannot propagate mounts back to the host: volume /volume asks "
                                 "for rshared"),
              std::string::npos)
        << refused.error;
    CriReply listed = cri_->Call("ListContainers", {{"filter", {{"pod_sandbox_id", pod}}}});
    ASSERT_TRUE(listed.ok) << listed.error;
    for (const json& c : listed.body.value("containers", json::array())) {
      if (c["metadata"].value("name", "") != "shared") continue;
      EXPECT_NE(c.value("state", ""), "CONTAINER_RUNNING") << c.dump();
      CriReply removed = cri_->Call("RemoveContainer", {{"container_id", c.value("id", "")}});
      EXPECT_TRUE(removed.ok) << removed.error;
    }
    CriReply still = exec(slave, {"true"});
    EXPECT_TRUE(still.ok && still.body.value("exit_code", -1) == 0) << still.error;
  } else {
    run = cri_->RunContainer(pod, pod_config, bidirectional);
    ASSERT_TRUE(run.ok) << run.error << "\n" << containerd_->LogTail();
    CriReply made = exec(run.body.value("container_id", ""),
                         {"sh", "-c",
                          "mount -t tmpfs -o size=1m hull-test /volume/from-container && "
                          "echo mounted in the container >/volume/from-container/file"});
    ASSERT_TRUE(made.ok) << made.error;
    EXPECT_EQ(made.body.value("exit_code", -1), 0) << DecodeBase64(made.body.value("stderr", ""));
    EXPECT_EQ(MountsUnder(volume + "/from-container"),
              std::vector<std::string>{volume + "/from-container"});
    EXPECT_EQ(ReadText(volume + "/from-container/file"), "mounted in the container\n");
  }
  RemovePodAndCheckNothingLeft(pod);
}

INSTANTIATE_TEST_SUITE_P(Handlers, CriParityTest,
                         ::testing::Values(PodCase{"PodNetwork", "hull", false},
                                           PodCase{"C2PodNetwork", "hull", false, true},
                                           PodCase{"RunscPodNetwork", "hull-runsc", false},
                                           PodCase{"C2RunscPodNetwork", "hull-runsc", false, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hull::itest
