// Rootfs mounts made by a real spawner (shim/mount/spawner_mounts.h), as a
// confined server has them made: as root, in a private mount namespace of
// the test process. The spawner mounts only the rootfs of a bundle beside
// the server's own; every other target is refused and nothing is mounted.

#include "shim/mount/spawner_mounts.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/mountinfo.h"
#include "tests/support/privileged.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

using hull::testing::MountsBelow;

google::protobuf::RepeatedPtrField<containerd::types::Mount> Tmpfs() {
  google::protobuf::RepeatedPtrField<containerd::types::Mount> rootfs;
  containerd::types::Mount* m = rootfs.Add();
  m->set_type("tmpfs");
  m->set_source("tmpfs");
  m->add_options("mode=0755");
  return rootfs;
}

class SpawnerMountsTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-spawner-mounts"};
  void SetUp() override {
    if (std::string why = hull::testing::EnterPrivateMountNamespace(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    ASSERT_TRUE(tmp_.ok());
    root_ = fs::canonical(tmp_.path());
    ASSERT_EQ(::mount("tmpfs", root_.c_str(), "tmpfs", 0, "mode=0755"), 0);
    bundles_ = root_ / "ns";
    fs::create_directories(bundles_ / "c1" / "rootfs");
    fs::create_directories(root_ / "elsewhere" / "rootfs");
    // The server's spawner: entry 0 (pause) is not needed here.
    std::vector<SpawnerEntry> entries(kUnmountSpawnerEntry + 1);
    std::vector<SpawnerEntry> mounts = MountSpawnerEntries({bundles_.string()});
    entries[kMountSpawnerEntry] = std::move(mounts[0]);
    entries[kUnmountSpawnerEntry] = std::move(mounts[1]);
    auto spawner = SpawnerClient::Start(std::move(entries));
    ASSERT_TRUE(spawner.has_value()) << spawner.error().ToString();
    spawner_ = std::move(*spawner);
  }

  void TearDown() override {
    hull::testing::StopSpawner(spawner_);
    if (root_.empty()) return;
    ::umount2((bundles_ / "c1" / "rootfs").c_str(), MNT_DETACH);
    ::umount2(root_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  fs::path root_;
  fs::path bundles_;
  std::unique_ptr<SpawnerClient> spawner_;
};

TEST_F(SpawnerMountsTest, MountsAndUnmountsABundlesRootfs) {
  const std::string target = (bundles_ / "c1" / "rootfs").string();
  Status mounted = MountRootfsVia(spawner_.get(), Tmpfs(), target);
  ASSERT_TRUE(mounted.ok()) << mounted.ToString();
  EXPECT_EQ(MountsBelow(bundles_.string()), std::vector<std::string>{target});
  Status unmounted = UnmountRootfsVia(spawner_.get(), target);
  ASSERT_TRUE(unmounted.ok()) << unmounted.ToString();
  EXPECT_TRUE(MountsBelow(bundles_.string()).empty());
}

TEST_F(SpawnerMountsTest, RefusesEveryOtherTarget) {
  fs::create_directories(bundles_ / "c2");
  fs::create_directory_symlink(root_ / "elsewhere", bundles_ / "link");
  fs::create_directory_symlink(root_ / "elsewhere" / "rootfs", bundles_ / "c2" / "rootfs");
  fs::create_directories(bundles_ / "c1" / "data");
  const std::vector<std::string> refused = {
      (root_ / "elsewhere" / "rootfs").string(),  // not in the bundles
      (bundles_ / "link" / "rootfs").string(),    // a bundle that is a symlink out
      (bundles_ / "c2" / "rootfs").string(),      // a rootfs that is a symlink
      (bundles_ / "c1" / "data").string(),        // not a rootfs
      (bundles_ / "c1" / ".." / ".." / "elsewhere" / "rootfs").string(),
      "rootfs",  // relative
  };
  for (const std::string& target : refused) {
    Status mounted = MountRootfsVia(spawner_.get(), Tmpfs(), target);
    EXPECT_EQ(mounted.code(), Code::kPermissionDenied) << target << ": " << mounted.ToString();
    Status unmounted = UnmountRootfsVia(spawner_.get(), target);
    EXPECT_EQ(unmounted.code(), Code::kPermissionDenied) << target;
  }
  // The tmpfs under everything stays: "unmount" did not take it.
  EXPECT_EQ(UnmountRootfsVia(spawner_.get(), root_.string()).code(), Code::kPermissionDenied);
  EXPECT_EQ(MountsBelow(root_.string()), std::vector<std::string>{root_.string()});
}

TEST_F(SpawnerMountsTest, MalformedRequestIsInvalidArgument) {
  Result<pid_t> r = spawner_->Run(kMountSpawnerEntry, "\x01\x02", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  // A count far beyond the message.
  std::string huge(4, '\0');
  huge += std::string("\xff\xff\xff\x7f", 4);
  r = spawner_->Run(kMountSpawnerEntry, huge, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
}

// A pod of containerd 2's shim sandboxer: the server's bundle is the sandbox
// controller's, its containers' are in the task directory.
TEST(BundleDirsTest, TheServersOwnDirectoryAndTheNamespacesTaskDirectory) {
  EXPECT_EQ(BundleDirs("/s/io.containerd.sandbox.controller.v1.shim/k8s.io/p1"),
            (std::vector<std::string>{"/s/io.containerd.sandbox.controller.v1.shim/k8s.io",
                                      "/s/io.containerd.runtime.v2.task/k8s.io"}));
  EXPECT_EQ(BundleDirs("/s/io.containerd.runtime.v2.task/default/c1"),
            (std::vector<std::string>{"/s/io.containerd.runtime.v2.task/default"}));
}

}  // namespace
}  // namespace hull::shim
