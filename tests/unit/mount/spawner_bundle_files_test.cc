// hull's files in its pod's bundles, written and removed by a real spawner
// (shim/mount/spawner_bundle_files.h), as a confined server has them: only
// hull's names, directly in one of the pod's bundles, never through a
// symlink; everything else refused and nothing written.

#include "shim/mount/spawner_bundle_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/spawner_wire.h"
#include "tests/support/privileged.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

class SpawnerBundleFilesTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-bundle-files"};
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = fs::canonical(tmp_.path());
    bundles_ = root_ / "ns";
    fs::create_directories(bundles_ / "c1");
    fs::create_directories(root_ / "server" / "hull-sandbox");
    fs::create_directories(root_ / "elsewhere");
    fs::create_directory_symlink(root_ / "elsewhere", bundles_ / "link");
    std::vector<SpawnerEntry> entries(kBundleFileSpawnerEntry + 1);
    fs::create_directories(root_ / "runsc");
    entries[kBundleFileSpawnerEntry] =
        BundleFileSpawnerEntry({bundles_.string()}, (root_ / "server" / "hull-sandbox").string(),
                               (root_ / "runsc").string());
    auto spawner = SpawnerClient::Start(std::move(entries));
    ASSERT_TRUE(spawner.has_value()) << spawner.error().ToString();
    spawner_ = std::move(*spawner);
  }
  void TearDown() override { hull::testing::StopSpawner(spawner_); }

  static int Mode(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  }

  fs::path root_, bundles_;
  std::unique_ptr<SpawnerClient> spawner_;
};

TEST_F(SpawnerBundleFilesTest, WritesAndRemovesHullsFilesInThePodsBundles) {
  const fs::path c1 = bundles_ / "c1";
  for (const std::string name : {"hull-vm.json", "hull-pod-size.json", "hull-pod-cgroup.json",
                                 "init.pid", "e1.pid", "e1.process.json"}) {
    Status s = WriteBundleFileVia(spawner_.get(), (c1 / name).string(), "{\"n\":1}");
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    EXPECT_EQ(*ReadFile((c1 / name).string()), "{\"n\":1}") << name;
    EXPECT_EQ(Mode(c1 / name), name.ends_with(".process.json") ? 0600 : 0644) << name;
  }
  // Written again: replaced, not appended.
  ASSERT_TRUE(WriteBundleFileVia(spawner_.get(), (c1 / "init.pid").string(), "42").ok());
  EXPECT_EQ(*ReadFile((c1 / "init.pid").string()), "42");
  // The Sandbox API pod's own bundle counts.
  const fs::path sandbox = root_ / "server" / "hull-sandbox" / "init.pid";
  ASSERT_TRUE(WriteBundleFileVia(spawner_.get(), sandbox.string(), "7").ok());
  EXPECT_EQ(*ReadFile(sandbox.string()), "7");

  ASSERT_TRUE(RemoveBundleFileVia(spawner_.get(), (c1 / "e1.pid").string()).ok());
  EXPECT_FALSE(fs::exists(c1 / "e1.pid"));
  EXPECT_TRUE(RemoveBundleFileVia(spawner_.get(), (c1 / "e1.pid").string()).ok());  // gone: fine
  // No temporary file is left.
  for (const auto& entry : fs::directory_iterator(c1)) {
    EXPECT_NE(entry.path().filename().string()[0], '.') << entry.path();
  }
}

TEST_F(SpawnerBundleFilesTest, RefusesEveryOtherFile) {
  const fs::path c1 = bundles_ / "c1";
  std::ofstream(c1 / "config.json") << "{}";
  const std::vector<std::string> refused = {
      (c1 / "config.json").string(),                // containerd's spec
      (c1 / "address").string(),                    // containerd reads it
      (c1 / "hull-config.toml").string(),           // `start`'s, `delete` reads it
      (c1 / "log.json").string(),                   // the runtime's
      (c1 / ".pid").string(),                       // hidden
      (c1 / "rootfs").string(),                     //
      (bundles_ / "link" / "init.pid").string(),    // a bundle that is a symlink
      (root_ / "elsewhere" / "init.pid").string(),  // not a bundle
      (bundles_ / "init.pid").string(),             // the bundle directory itself
      (c1 / "sub" / "init.pid").string(),           // below a bundle
      "init.pid",                                   // relative
  };
  for (const std::string& path : refused) {
    Status s = WriteBundleFileVia(spawner_.get(), path, "x");
    EXPECT_FALSE(s.ok()) << path;
    EXPECT_NE(s.code(), Code::kOk) << path;
    Status r = RemoveBundleFileVia(spawner_.get(), path);
    EXPECT_FALSE(r.ok()) << path;
  }
  EXPECT_EQ(*ReadFile((c1 / "config.json").string()), "{}");
  EXPECT_FALSE(fs::exists(root_ / "elsewhere" / "init.pid"));
  EXPECT_FALSE(fs::exists(bundles_ / "init.pid"));

  // A malformed request.
  Result<pid_t> bad = spawner_->Run(kBundleFileSpawnerEntry, "w", {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
}

// runsc's orphaned sandbox locks, removed in the runtime root the entry was
// given: only a lock without its state, only of the sandbox named, and a
// name that is a path is refused.
TEST_F(SpawnerBundleFilesTest, RemovesOnlyASandboxsOrphanedLocks) {
  const fs::path runsc = root_ / "runsc";
  for (const char* name :
       {"a_sandbox:sb1.lock", "b_sandbox:sb1.lock", "b_sandbox:sb1.state", "c_sandbox:sb2.lock"}) {
    std::ofstream(runsc / name) << "x";
  }
  ASSERT_TRUE(RemoveRunscLocksVia(spawner_.get(), "sb1").ok());
  EXPECT_FALSE(fs::exists(runsc / "a_sandbox:sb1.lock"));
  EXPECT_TRUE(fs::exists(runsc / "b_sandbox:sb1.lock"));  // its state is there
  EXPECT_TRUE(fs::exists(runsc / "c_sandbox:sb2.lock"));  // another sandbox's
  for (const char* bad : {"", "..", "../runsc", "a/b"}) {
    EXPECT_EQ(RemoveRunscLocksVia(spawner_.get(), bad).code(), Code::kPermissionDenied) << bad;
  }
  EXPECT_TRUE(fs::exists(runsc / "c_sandbox:sb2.lock"));
}

// The one change the entry makes to a bundle's config.json: its ociVersion
// lowered to the runtime's (crun's) when nothing newer is used; a spec in no
// pod bundle is refused and left as it was.
TEST_F(SpawnerBundleFilesTest, FitsABundlesSpecVersionOnly) {
  const fs::path c1 = bundles_ / "c1";
  std::ofstream(c1 / "config.json") << R"({"ociVersion":"1.2.0","process":{"args":["sh"]}})";
  Status fit = FitBundleSpecVia(spawner_.get(), (c1 / "config.json").string(), "1.1.0", "crun");
  ASSERT_TRUE(fit.ok()) << fit.ToString();
  EXPECT_EQ(*ReadFile((c1 / "config.json").string()),
            R"({"ociVersion":"1.1.0","process":{"args":["sh"]}})");

  const fs::path elsewhere = root_ / "elsewhere" / "config.json";
  std::ofstream(elsewhere) << R"({"ociVersion":"1.2.0"})";
  for (const fs::path& path : {elsewhere, bundles_ / "link" / "config.json", c1 / "spec.json"}) {
    EXPECT_EQ(FitBundleSpecVia(spawner_.get(), path.string(), "1.1.0", "crun").code(),
              Code::kPermissionDenied)
        << path;
  }
  EXPECT_EQ(*ReadFile(elsewhere.string()), R"({"ociVersion":"1.2.0"})");

  // runsc's fit: a container joining the sandbox leaves its pid namespace
  // path; what runsc cannot do is refused with the reason.
  std::ofstream(c1 / "config.json", std::ios::trunc)
      << R"({"linux":{"namespaces":[{"type":"pid","path":"/proc/42/ns/pid"},{"type":"ipc"},
          {"type":"uts"},{"type":"mount"},{"type":"network"}]}})";
  fit = FitBundleToSandboxKernelVia(spawner_.get(), (c1 / "config.json").string(), true);
  ASSERT_TRUE(fit.ok()) << fit.ToString();
  EXPECT_EQ(ReadFile((c1 / "config.json").string())->find("/proc/42"), std::string::npos);
  std::ofstream(c1 / "config.json", std::ios::trunc)
      << R"({"linux":{"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},
          {"type":"mount"},{"type":"network"}],"sysctl":{"kernel.shm_rmid_forced":"1"}}})";
  fit = FitBundleToSandboxKernelVia(spawner_.get(), (c1 / "config.json").string(), false);
  EXPECT_EQ(fit.code(), Code::kInvalidArgument) << fit.ToString();
  EXPECT_EQ(FitBundleToSandboxKernelVia(spawner_.get(), elsewhere.string(), true).code(),
            Code::kPermissionDenied);
}

TEST(IsHullBundleFileTest, OnlyHullsNames) {
  for (std::string_view name :
       {"hull-vm.json", "hull-pod-size.json", "hull-pod-cgroup.json", "init.pid", "exec-1.pid",
        "exec-1.pid.internal", "exec-1.process.json"}) {
    EXPECT_TRUE(IsHullBundleFile(name)) << name;
  }
  for (std::string_view name :
       {"config.json", "address", "hull-config.toml", "log.json", ".pid", ".process.json", "pid",
        "a/b.pid", "", ".pid.internal", "x.internal"}) {
    EXPECT_FALSE(IsHullBundleFile(name)) << name;
  }
}

}  // namespace
}  // namespace hull::shim
