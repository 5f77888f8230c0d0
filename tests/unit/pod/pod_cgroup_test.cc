// The pod cgroup: which cgroup it is, what it gets from the size, creating
// and leaving it, against a temporary tree laid out like /sys/fs/cgroup.
#include "shim/pod/pod_cgroup.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> Pod(std::string_view path, bool systemd) {
  auto pod = PodCgroupPath(path, systemd);
  EXPECT_TRUE(pod.has_value()) << path << ": " << pod.error().ToString();
  return pod ? *pod : std::nullopt;
}

TEST(PodCgroupPathTest, CgroupfsParent) {
  EXPECT_EQ(Pod("/kubepods/burstable/pod1/abc", false), "/kubepods/burstable/pod1");
  EXPECT_EQ(Pod("kubepods/pod1/abc", false), "/kubepods/pod1");
  EXPECT_EQ(Pod("/pod1/abc/", false), "/pod1");
  EXPECT_EQ(Pod("/abc", false), std::nullopt);
  EXPECT_EQ(Pod("abc", false), std::nullopt);
  EXPECT_EQ(Pod("", false), std::nullopt);
  EXPECT_EQ(PodCgroupPath("/pod/../abc", false).error().code(), Code::kInvalidArgument);
}

TEST(PodCgroupPathTest, SystemdSlice) {
  EXPECT_EQ(Pod("kubepods-burstable-pod1.slice:cri-containerd:abc", true),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice");
  EXPECT_EQ(Pod("-.slice:cri-containerd:abc", true), std::nullopt);
  EXPECT_EQ(Pod(":cri-containerd:abc", true), std::nullopt);
  EXPECT_EQ(PodCgroupPath("pod.slice:abc", true).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(PodCgroupPath("a/b.slice:p:abc", true).error().code(), Code::kInvalidArgument);
}

TEST(PodCgroupResourcesTest, FromThePodSize) {
  oci::PodSize size;
  size.workload = {
      .cpu_period = 50000, .cpu_quota = 25000, .cpu_shares = 512, .memory_limit_bytes = 1 << 26};
  size.pod_cpu_millis = 750;  // with overhead
  size.pod_memory_bytes = 100 << 20;
  cgroups::Resources r = PodCgroupResources(size);
  ASSERT_TRUE(r.cpu_max.has_value());
  EXPECT_EQ(*r.cpu_max, (cgroups::CpuMax{.quota = 37500, .period = 50000}));
  EXPECT_EQ(r.cpu_weight, 20u);
  EXPECT_EQ(r.memory_max, uint64_t{100} << 20);
  EXPECT_FALSE(r.pids_max.has_value());

  // Nothing limited: nothing written. A tiny CPU share: the kernel's 1 ms.
  EXPECT_EQ(PodCgroupResources(oci::PodSize{}), cgroups::Resources{});
  oci::PodSize tiny;
  tiny.pod_cpu_millis = 1;
  EXPECT_EQ(PodCgroupResources(tiny).cpu_max, (cgroups::CpuMax{.quota = 1000, .period = 100000}));
}

class PodCgroupTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-podcg"};  // root_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
    Write("cgroup.controllers", "cpu memory pids\n");
    Write("cgroup.subtree_control", "");
    Write("cgroup.procs", "");
  }
  void Write(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::string Read(const fs::path& relative) {
    std::ifstream in(root_ / relative);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  fs::path root_;
};

TEST_F(PodCgroupTest, ExistingPodGetsLimitsAndIsNotOurs) {
  Write("kubepods/pod1/cgroup.controllers", "cpu memory\n");
  for (const char* f : {"cpu.max", "cpu.weight", "memory.max"})
    Write("kubepods/pod1/" + std::string(f), "");
  cgroups::Resources limits;
  limits.memory_max = 64 << 20;
  limits.cpu_max = cgroups::CpuMax{.quota = 50000, .period = 100000};
  auto placement = PreparePodCgroup("/kubepods/pod1", limits, root_);
  ASSERT_TRUE(placement.has_value()) << placement.error().ToString();
  EXPECT_FALSE(placement->created_pod);
  EXPECT_EQ(Read("kubepods/pod1/memory.max"), "67108864");
  EXPECT_EQ(Read("kubepods/pod1/cpu.max"), "50000 100000");
  // Leaving a pod cgroup hull did not create keeps it.
  EXPECT_TRUE(LeavePodCgroup(*placement, 1, root_).ok());
  EXPECT_TRUE(fs::is_directory(root_ / "kubepods/pod1"));
}

TEST_F(PodCgroupTest, MissingPodIsCreatedPlacedAndRemoved) {
  auto placement = PreparePodCgroup("/pod2", std::nullopt, root_);
  ASSERT_TRUE(placement.has_value()) << placement.error().ToString();
  EXPECT_TRUE(placement->created_pod);
  ASSERT_TRUE(fs::is_directory(root_ / "pod2"));
  placement->shim_leaf = "/pod2/hull-shim";
  placement->origin = "/";
  // A real cgroupfs makes cgroup.procs itself; here the test does.
  Write("pod2/hull-shim/cgroup.procs", "");
  ASSERT_TRUE(PlaceShim(*placement, 4242, root_).ok());
  EXPECT_EQ(Read("pod2/hull-shim/cgroup.procs"), "4242");
  fs::remove(root_ / "pod2/hull-shim/cgroup.procs");  // the kernel's file is not a dirent to rmdir
  Status left = LeavePodCgroup(*placement, 4242, root_);
  EXPECT_TRUE(left.ok()) << left.ToString();
  EXPECT_EQ(Read("cgroup.procs"), "4242");  // back to origin
  EXPECT_FALSE(fs::exists(root_ / "pod2"));
  // Leaving again: everything is gone already, which is fine.
  EXPECT_TRUE(RemovePlacementCgroups(*placement, root_).ok());
}

TEST_F(PodCgroupTest, CreateFailureRemovesWhatItCreated) {
  cgroups::Resources limits;
  limits.memory_max = 1 << 20;  // the new cgroup has no cgroup.controllers: no memory
  auto placement = PreparePodCgroup("/pod3", limits, root_);
  EXPECT_FALSE(placement.has_value());
  EXPECT_FALSE(fs::exists(root_ / "pod3"));
}

// `delete` after the server was SIGKILLed: its leaf is empty, and the pod
// cgroup hull created goes too.
TEST_F(PodCgroupTest, KilledServersLeftoversAreRemoved) {
  PodCgroupPlacement p{
      .pod = "/pod4", .created_pod = true, .shim_leaf = "/pod4/hull-shim", .origin = "/"};
  fs::create_directories(root_ / "pod4/hull-shim");
  Status removed = RemoveLeftPodCgroups(p, root_);
  EXPECT_TRUE(removed.ok()) << removed.ToString();
  EXPECT_FALSE(fs::exists(root_ / "pod4"));
  // Idempotent: `delete` runs again after every task deletion.
  EXPECT_TRUE(RemoveLeftPodCgroups(p, root_).ok());

  // A pod cgroup hull did not create keeps existing; only the leaf goes.
  p.created_pod = false;
  fs::create_directories(root_ / "pod4/hull-shim");
  EXPECT_TRUE(RemoveLeftPodCgroups(p, root_).ok());
  EXPECT_FALSE(fs::exists(root_ / "pod4/hull-shim"));
  EXPECT_TRUE(fs::is_directory(root_ / "pod4"));
}

// A server still alive in its leaf: nothing is moved, killed or removed.
TEST_F(PodCgroupTest, LiveServersLeafIsLeftToIt) {
  PodCgroupPlacement p{
      .pod = "/pod5", .created_pod = true, .shim_leaf = "/pod5/hull-shim", .origin = "/"};
  Write("pod5/hull-shim/cgroup.procs", "4242\n");
  Status removed = RemoveLeftPodCgroups(p, root_);
  EXPECT_EQ(removed.code(), Code::kFailedPrecondition) << removed.ToString();
  EXPECT_EQ(Read("pod5/hull-shim/cgroup.procs"), "4242\n");
  EXPECT_TRUE(fs::is_directory(root_ / "pod5"));
  EXPECT_EQ(Read("cgroup.procs"), "");  // nobody moved to the origin

  // Exited (cgroup.procs empty): the leaf can go; a real cgroupfs lets rmdir
  // remove a cgroup with its interface files, this tree needs them gone.
  Write("pod5/hull-shim/cgroup.procs", "");
  fs::remove(root_ / "pod5/hull-shim/cgroup.procs");
  EXPECT_TRUE(RemoveLeftPodCgroups(p, root_).ok());
  EXPECT_FALSE(fs::exists(root_ / "pod5"));
}

// The pod's other containers are still in the pod cgroup: it stays, the
// empty leaf goes.
TEST_F(PodCgroupTest, PodWithOtherContainersStays) {
  PodCgroupPlacement p{
      .pod = "/pod6", .created_pod = true, .shim_leaf = "/pod6/hull-shim", .origin = "/"};
  fs::create_directories(root_ / "pod6/hull-shim");
  fs::create_directories(root_ / "pod6/app1");
  Status removed = RemoveLeftPodCgroups(p, root_);
  EXPECT_EQ(removed.code(), Code::kFailedPrecondition) << removed.ToString();
  EXPECT_FALSE(fs::exists(root_ / "pod6/hull-shim"));
  EXPECT_TRUE(fs::is_directory(root_ / "pod6/app1"));
  // Once that container's cgroup is gone, the next `delete` removes the pod.
  fs::remove(root_ / "pod6/app1");
  EXPECT_TRUE(RemoveLeftPodCgroups(p, root_).ok());
  EXPECT_FALSE(fs::exists(root_ / "pod6"));
}

TEST_F(PodCgroupTest, RecordRoundTripAndValidation) {
  PodCgroupPlacement p{.pod = "/kubepods/pod1",
                       .created_pod = true,
                       .shim_leaf = "/kubepods/pod1/hull-shim",
                       .origin = "/system.slice/c"};
  ASSERT_TRUE(WritePodCgroupFile(root_.string(), p).ok());
  auto back = ReadPodCgroupFile((root_ / "hull-pod-cgroup.json").string());
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, p);
  EXPECT_EQ(ReadPodCgroupFile((root_ / "none.json").string()).error().code(), Code::kNotFound);
  for (const char* text : {
           "nope",
           R"({"pod":"/p","created_pod":"yes","shim_leaf":"","origin":""})",
           R"({"pod":"p","created_pod":true,"shim_leaf":"","origin":""})",
           R"({"pod":"/p","created_pod":true,"shim_leaf":"/elsewhere","origin":"/"})",
           R"({"pod":"/p","created_pod":true,"shim_leaf":"/p/hull-shim","origin":""})",
       }) {
    Write("bad.json", text);
    EXPECT_EQ(ReadPodCgroupFile((root_ / "bad.json").string()).error().code(),
              Code::kInvalidArgument)
        << text;
  }
}

}  // namespace
}  // namespace hull::shim
