// The runsc sandbox container's bundle for the Sandbox API (sandbox_bundle.h):
// what its spec keeps and drops of the pod's, and the files written, in a
// temporary directory. No runtime runs.
#include "runtime/oci_cli/sandbox_bundle.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "base/file_util.h"
#include "tests/support/temp_dir.h"

namespace hull::runtime::oci_cli {
namespace {

constexpr const char* kPodSpec = R"({
  "ociVersion": "1.2.1",
  "process": {"args": ["/pause"], "cwd": "/", "oomScoreAdj": -998, "env": ["PATH=/bin"]},
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "web",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev/shm", "type": "bind", "source": "/run/x/shm", "options": ["rbind", "ro"]},
    {"destination": "/etc/resolv.conf", "type": "bind", "source": "/var/lib/x/resolv.conf"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"}
  ],
  "annotations": {"io.kubernetes.cri.container-type": "sandbox",
                  "io.kubernetes.cri.sandbox-id": "pod1"},
  "linux": {"cgroupsPath": "/kubepods/pod1",
            "namespaces": [{"type": "network", "path": "/var/run/netns/cni-1"}]}
})";

class SandboxBundleTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-sandbox-bundle"};  // dir_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    pause_ = dir_ + "/hull-pause";
    std::ofstream(pause_) << "#!pause";
  }

  std::string dir_;
  std::string pause_;
};

TEST_F(SandboxBundleTest, TheSpecRunsPauseFromAReadOnlyRootWithoutBindMountsOrOomScore) {
  Result<oci::Spec> pod = oci::Spec::Parse(kPodSpec);
  ASSERT_TRUE(pod.has_value());
  const oci::SpecJson doc = SandboxContainerSpec(*pod).json();
  EXPECT_EQ(doc["process"]["args"], oci::SpecJson::array({"/pause"}));
  EXPECT_FALSE(doc["process"].contains("oomScoreAdj"));
  EXPECT_EQ(doc["process"]["env"], oci::SpecJson::array({"PATH=/bin"}));
  EXPECT_EQ(doc["root"]["path"], "rootfs");
  EXPECT_EQ(doc["root"]["readonly"], true);
  ASSERT_EQ(doc["mounts"].size(), 2u);
  EXPECT_EQ(doc["mounts"][0]["destination"], "/proc");
  EXPECT_EQ(doc["mounts"][1]["destination"], "/dev");
  // What makes it the pod's sandbox is kept.
  EXPECT_EQ(doc["hostname"], "web");
  EXPECT_EQ(doc["annotations"]["io.kubernetes.cri.container-type"], "sandbox");
  EXPECT_EQ(doc["annotations"]["io.kubernetes.cri.sandbox-id"], "pod1");
  EXPECT_EQ(doc["linux"]["cgroupsPath"], "/kubepods/pod1");
  EXPECT_EQ(doc["linux"]["namespaces"][0]["path"], "/var/run/netns/cni-1");
}

TEST_F(SandboxBundleTest, WritesTheRootfsWithPauseAndTheSpec) {
  Result<oci::Spec> pod = oci::Spec::Parse(kPodSpec);
  ASSERT_TRUE(pod.has_value());
  Result<std::string> dir = WriteSandboxBundle(dir_, *pod, pause_);
  ASSERT_TRUE(dir.has_value()) << dir.error().ToString();
  EXPECT_EQ(*dir, dir_ + "/hull-sandbox");
  struct stat st {};
  ASSERT_EQ(::stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(::stat((*dir + "/rootfs/pause").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(*ReadFile(*dir + "/rootfs/pause"), "#!pause");
  // Only pause in the root.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(*dir + "/rootfs")) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  Result<oci::Spec> written = oci::Spec::Load(*dir + "/config.json");
  ASSERT_TRUE(written.has_value());
  EXPECT_EQ(written->json(), SandboxContainerSpec(*pod).json());
}

TEST_F(SandboxBundleTest, AMissingPauseBinaryLeavesNothing) {
  Result<oci::Spec> pod = oci::Spec::Parse(kPodSpec);
  ASSERT_TRUE(pod.has_value());
  Result<std::string> dir = WriteSandboxBundle(dir_, *pod, dir_ + "/no-such-pause");
  ASSERT_FALSE(dir.has_value());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/hull-sandbox"));
}

}  // namespace
}  // namespace hull::runtime::oci_cli
