// A VM pod's share and network through a real spawner (shim/backend/vm/
// vm_spawner.h), as a confined server has them made: as root, in a private
// mount namespace of the test process. The spawner binds only the pod's own
// containers' rootfs and volumes, only into the pod's share, never through a
// symlink, and wires only the pod's network namespace; everything else is
// refused and nothing is mounted.
#include "shim/backend/vm/vm_spawner.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mountinfo.h"
#include "shim/backend/vm/vm_backend.h"
#include "tests/support/privileged.h"
#include "tests/support/temp_dir.h"

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;

using hull::testing::MountsBelow;

class VmSpawnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = hull::testing::EnterPrivateMountNamespace(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    ASSERT_TRUE(tmp_.ok());
    root_ = fs::canonical(tmp_.path());
    bundles_ = root_ / "ns";
    pod_ = "hull-vm-spawner-test-" + std::to_string(::getpid());
    // The pod's sandbox, one of its containers (with a volume), and a
    // container of another pod, all in the namespace's bundle directory.
    Bundle(pod_, pod_, "/var/run/netns/pod-ns");
    Bundle("c1", pod_, "", (root_ / "volume").string());
    Bundle("c9", "other-pod", "");
    fs::create_directories(root_ / "volume");
    fs::create_directories(root_ / "elsewhere" / "x");
    share_ = std::string(kRunRoot) + "/" + pod_ + "/share";
    fs::create_directories(share_ + "/c1/rootfs");
    fs::create_directories(share_ + "/c1/mounts/0");
    fs::create_directories(share_ + "/c9/rootfs");
    fs::create_directory_symlink(root_ / "elsewhere", share_ + "/c1/link");
    std::vector<SpawnerEntry> entries(kVmShareSpawnerEntry + 1);
    std::vector<SpawnerEntry> vm = VmSpawnerEntries(ReadVmPod((bundles_ / pod_).string()));
    entries[kVmNetworkSpawnerEntry] = std::move(vm[0]);
    entries[kVmShareSpawnerEntry] = std::move(vm[1]);
    auto spawner = SpawnerClient::Start(std::move(entries));
    ASSERT_TRUE(spawner.has_value()) << spawner.error().ToString();
    spawner_ = std::move(*spawner);
  }

  void TearDown() override {
    hull::testing::StopSpawner(spawner_);
    if (share_.empty()) return;
    for (const std::string& m : MountsBelow(share_)) ::umount2(m.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(fs::path(share_).parent_path(), ec);
  }

  // A bundle with a rootfs, in pod `group` (CRI's sandbox-id annotation),
  // naming `netns` and a bind mount of `volume` when given.
  void Bundle(const std::string& id, const std::string& group, const std::string& netns,
              const std::string& volume = "") {
    fs::create_directories(bundles_ / id / "rootfs");
    nlohmann::json spec = {{"ociVersion", "1.1.0"},
                           {"root", {{"path", "rootfs"}}},
                           {"annotations", {{"io.kubernetes.cri.sandbox-id", group}}},
                           {"linux", {{"namespaces", nlohmann::json::array()}}}};
    if (!netns.empty()) {
      spec["linux"]["namespaces"].push_back({{"type", "network"}, {"path", netns}});
    }
    if (!volume.empty()) {
      spec["mounts"] = {{{"destination", "/data"},
                         {"type", "bind"},
                         {"source", volume},
                         {"options", {"rbind", "rw"}}}};
    }
    std::ofstream(bundles_ / id / "config.json") << spec.dump();
  }

  std::string BundleOf(const std::string& id) const { return (bundles_ / id).string(); }

  hull::testing::TempDir tmp_{"hull-vm-spawner"};
  fs::path root_;
  fs::path bundles_;
  std::string pod_;
  std::string share_;
  std::unique_ptr<SpawnerClient> spawner_;
};

TEST_F(VmSpawnerTest, BindsThePodsContainersIntoItsShare) {
  Status shared = MakeSharedVia(spawner_.get(), share_);
  ASSERT_TRUE(shared.ok()) << shared.ToString();
  Status rootfs =
      BindVia(spawner_.get(), BundleOf("c1"), BundleOf("c1") + "/rootfs", share_ + "/c1/rootfs");
  ASSERT_TRUE(rootfs.ok()) << rootfs.ToString();
  Status volume =
      BindVia(spawner_.get(), BundleOf("c1"), (root_ / "volume").string(), share_ + "/c1/mounts/0");
  ASSERT_TRUE(volume.ok()) << volume.ToString();
  EXPECT_EQ(MountsBelow(share_),
            (std::vector<std::string>{share_, share_ + "/c1/rootfs", share_ + "/c1/mounts/0"}));
  // A second MakeShared finds it done.
  EXPECT_TRUE(MakeSharedVia(spawner_.get(), share_).ok());
  Status unmounted = UnmountAllVia(spawner_.get(), share_);
  ASSERT_TRUE(unmounted.ok()) << unmounted.ToString();
  EXPECT_TRUE(MountsBelow(share_).empty());
}

TEST_F(VmSpawnerTest, RefusesWhatThePodsFilesDoNotName) {
  const std::string c1 = BundleOf("c1");
  struct Case {
    std::string bundle, source, target, why;
  };
  const std::vector<Case> cases = {
      {c1, "/etc", share_ + "/c1/rootfs", "a source c1's spec does not name"},
      {BundleOf("c9"), BundleOf("c9") + "/rootfs", share_ + "/c9/rootfs",
       "another pod's container"},
      {(root_ / "elsewhere").string(), "/", share_ + "/c1/rootfs", "not a bundle"},
      {c1, c1 + "/rootfs", share_ + "/c1/link", "a target that is a symlink out"},
      {c1, c1 + "/rootfs", share_ + "/c1/link/x", "a target reached through a symlink"},
      {c1, c1 + "/rootfs", (root_ / "elsewhere").string(), "a target outside the share"},
      {c1, c1 + "/rootfs", share_, "the share itself"},
      {c1, c1 + "/rootfs", std::string(kRunRoot) + "/other-pod/share/c1", "another pod's share"},
      {c1, c1 + "/rootfs", share_ + "/c1/../../../../etc", "a target that climbs out"},
  };
  for (const Case& c : cases) {
    Status bound = BindVia(spawner_.get(), c.bundle, c.source, c.target);
    EXPECT_EQ(bound.code(), Code::kPermissionDenied) << c.why << ": " << bound.ToString();
  }
  EXPECT_EQ(MakeSharedVia(spawner_.get(), share_ + "/c1").code(), Code::kPermissionDenied);
  EXPECT_EQ(MakeSharedVia(spawner_.get(), root_.string()).code(), Code::kPermissionDenied);
  EXPECT_EQ(UnmountAllVia(spawner_.get(), root_.string()).code(), Code::kPermissionDenied);
  EXPECT_EQ(UnmountAllVia(spawner_.get(), share_ + "/c1/link").code(), Code::kPermissionDenied);
  EXPECT_TRUE(MountsBelow(share_).empty());
  EXPECT_TRUE(MountsBelow(root_.string()).empty());
}

// The pod's spec names its network namespace: no other is wired.
TEST_F(VmSpawnerTest, WiresOnlyThePodsNetworkNamespace) {
  for (const std::string netns : {"/proc/1/ns/net", "/var/run/netns/another", "relative"}) {
    Result<PodNic> nic = WirePodNetworkVia(spawner_.get(), netns);
    ASSERT_FALSE(nic.has_value());
    EXPECT_EQ(nic.error().code(), Code::kPermissionDenied)
        << netns << ": " << nic.error().ToString();
  }
  // The pod's own (not there in this test): the spawner tries it.
  Result<PodNic> nic = WirePodNetworkVia(spawner_.get(), "/var/run/netns/pod-ns");
  ASSERT_FALSE(nic.has_value());
  EXPECT_NE(nic.error().code(), Code::kPermissionDenied) << nic.error().ToString();
}

TEST_F(VmSpawnerTest, MalformedRequestsAreInvalidArgument) {
  for (uint32_t entry : {kVmNetworkSpawnerEntry, kVmShareSpawnerEntry}) {
    Result<SpawnerReply> r = spawner_->Call(entry, std::string("\x09\x00", 2), {});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << r.error().ToString();
  }
}

}  // namespace
}  // namespace hull::shim::vm
