// GuestSpec, GuestProcess and CheckId on fixture JSON; the container state
// table.
#include "agent/guest_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/container_state.h"

namespace hull::agent {
namespace {

using nlohmann::json;

json HostSpec() {
  return json::parse(R"({
    "ociVersion": "1.1.0",
    "process": {"args": ["sh"], "apparmorProfile": "cri-containerd.apparmor.d",
                "selinuxLabel": "system_u:system_r:container_t:s0"},
    "root": {"path": "rootfs", "readonly": true},
    "hooks": {"createRuntime": [{"path": "/usr/bin/nvidia-hook"}]},
    "linux": {"cgroupsPath": "kubepods-pod1.slice:cri-containerd:c1",
              "mountLabel": "system_u:object_r:container_file_t:s0",
              "namespaces": [{"type": "pid"}, {"type": "network", "path": "/var/run/netns/cni-1"},
                             {"type": "ipc", "path": "/proc/42/ns/ipc"}, {"type": "mount"}],
              "sysctl": {"net.ipv4.ip_unprivileged_port_start": "0", "kernel.msgmax": "8192"},
              "resources": {"memory": {"limit": 1048576}}}
  })");
}

TEST(GuestSpecTest, RewritesWhatOnlyTheHostHas) {
  auto out = GuestSpec(HostSpec().dump(), "c1", "/run/hull/pod/c1");
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  json spec = json::parse(*out);
  EXPECT_EQ(spec["root"]["path"], "/run/hull/pod/c1/rootfs");
  EXPECT_EQ(spec["root"]["readonly"], true);
  EXPECT_EQ(spec["linux"]["cgroupsPath"], "/hull/c1");
  // No pod pid given: the ipc path is the host's, removed; a cgroup
  // namespace is added.
  EXPECT_EQ(spec["linux"]["namespaces"],
            json::parse(R"([{"type": "pid"}, {"type": "ipc"}, {"type": "mount"},
                            {"type": "cgroup"}])"));
  EXPECT_FALSE(spec.contains("hooks"));
  EXPECT_FALSE(spec["process"].contains("apparmorProfile"));
  EXPECT_FALSE(spec["process"].contains("selinuxLabel"));
  EXPECT_FALSE(spec["linux"].contains("mountLabel"));
  // The network's sysctls go with the network namespace; the others stay.
  EXPECT_EQ(spec["linux"]["sysctl"], json::parse(R"({"kernel.msgmax": "8192"})"));
  // The rest as it came.
  EXPECT_EQ(spec["linux"]["resources"]["memory"]["limit"], 1048576);
  EXPECT_EQ(spec["process"]["args"], json::array({"sh"}));
}

// CRI joins a pod's containers to the pause container's namespaces by its
// pid, which is a guest pid: a path naming an init the agent runs is kept,
// with the namespace type it names; a cgroup namespace already there stays
// the only one.
TEST(GuestSpecTest, NamespacesOfThePodsInitsAreJoined) {
  json host = HostSpec();
  host["linux"]["namespaces"] = json::parse(R"([
      {"type": "pid", "path": "/proc/42/ns/pid"}, {"type": "ipc", "path": "/proc/42/ns/ipc"},
      {"type": "uts", "path": "/proc/7/ns/uts"}, {"type": "mount", "path": "/proc/42/ns/ipc"},
      {"type": "cgroup"}])");
  auto out = GuestSpec(host.dump(), "c1", "/run/hull/pod/c1", {42});
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(json::parse(*out)["linux"]["namespaces"], json::parse(R"([
      {"type": "pid", "path": "/proc/42/ns/pid"}, {"type": "ipc", "path": "/proc/42/ns/ipc"},
      {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}])"));
}

TEST(GuestSpecTest, AnAbsoluteRootAndASpecWithoutLinux) {
  json spec = HostSpec();
  spec["root"]["path"] = "/run/hull/pod/shared-rootfs";
  spec.erase("linux");
  auto out = GuestSpec(spec.dump(), "c2", "/run/hull/pod/c2");
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  json guest = json::parse(*out);
  EXPECT_EQ(guest["root"]["path"], "/run/hull/pod/shared-rootfs");
  EXPECT_EQ(guest["linux"]["cgroupsPath"], "/hull/c2");
}

// A spec that already asks for a cgroup namespace keeps that one only.
TEST(GuestSpecTest, ACgroupNamespaceAskedForIsTheOnlyOne) {
  json host = HostSpec();
  host["linux"]["namespaces"] = json::parse(R"([{"type": "cgroup"}, {"type": "mount"}])");
  auto out = GuestSpec(host.dump(), "c1", "/run/hull/pod/c1");
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(json::parse(*out)["linux"]["namespaces"],
            json::parse(R"([{"type": "cgroup"}, {"type": "mount"}])"));
}

TEST(GuestSpecTest, MalformedSpecsAreInvalidArgument) {
  for (const char* bad :
       {"", "{", "[1]", R"({"root": {}})", R"({"root": {"path": ""}})", R"({"root": {"path": 7}})",
        R"({"root": {"path": "r"}, "linux": {"namespaces": [1]}})"}) {
    auto out = GuestSpec(bad, "c", "/b");
    ASSERT_FALSE(out.has_value()) << bad;
    EXPECT_EQ(out.error().code(), Code::kInvalidArgument) << bad;
  }
  // A relative root needs an absolute bundle.
  EXPECT_EQ(GuestSpec(HostSpec().dump(), "c", "relative").error().code(), Code::kInvalidArgument);
}

TEST(GuestSpecTest, ExecProcesses) {
  auto out = GuestProcess(HostSpec()["process"].dump());
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(json::parse(*out), json::parse(R"({"args": ["sh"]})"));
  for (const char* bad : {"", "[]", "{}", R"({"args": []})", R"({"args": "sh"})"}) {
    EXPECT_EQ(GuestProcess(bad).error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(GuestSpecTest, Ids) {
  for (const std::string& good :
       {std::string("c"), std::string("abc-DEF_0.9"), std::string(128, 'a')}) {
    EXPECT_TRUE(CheckId("id", good).ok()) << good;
  }
  for (const std::string& bad :
       {std::string(), std::string(".hidden"), std::string("../x"), std::string("a/b"),
        std::string("a b"), std::string(129, 'a'), std::string("x\n")}) {
    EXPECT_EQ(CheckId("id", bad).code(), Code::kInvalidArgument) << bad;
  }
}

TEST(ContainerStateTest, TransitionTable) {
  using S = ContainerState;
  using O = ContainerOp;
  EXPECT_TRUE(CheckOp("c", S::kCreated, O::kStart).ok());
  EXPECT_EQ(CheckOp("c", S::kRunning, O::kStart).code(), Code::kFailedPrecondition);
  EXPECT_EQ(CheckOp("c", S::kStarting, O::kStart).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckOp("c", S::kRunning, O::kExec).ok());
  EXPECT_EQ(CheckOp("c", S::kPaused, O::kExec).code(), Code::kFailedPrecondition);
  EXPECT_EQ(CheckOp("c", S::kCreated, O::kExec).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckOp("c", S::kRunning, O::kPause).ok());
  EXPECT_EQ(CheckOp("c", S::kPaused, O::kPause).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckOp("c", S::kPaused, O::kResume).ok());
  EXPECT_EQ(CheckOp("c", S::kRunning, O::kResume).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckOp("c", S::kCreated, O::kRemove).ok());
  EXPECT_TRUE(CheckOp("c", S::kStopped, O::kRemove).ok());
  for (S s : {S::kCreating, S::kStarting, S::kRunning, S::kPaused, S::kRemoving}) {
    EXPECT_EQ(CheckOp("c", s, O::kRemove).code(), Code::kFailedPrecondition) << StateName(s);
  }
  // containerd's Kill of a finished process: NotFound.
  EXPECT_EQ(CheckOp("c", S::kStopped, O::kSignal).code(), Code::kNotFound);
  EXPECT_TRUE(CheckOp("c", S::kPaused, O::kSignal).ok());
  EXPECT_EQ(CheckOp("c", S::kStopped, O::kStats).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckOp("c", S::kStopped, O::kList).ok());
}

}  // namespace
}  // namespace hull::agent
