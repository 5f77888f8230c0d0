// The `delete` action's VM clean-up reads a record from the bundle, which a
// confined server can write: a record naming another run directory than the
// pod's own is refused and touches nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "shim/backend/vm/vm_backend.h"
#include "tests/support/temp_dir.h"

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;

class VmCleanUpTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-vm-cleanup"};
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    bundle_ = fs::path(tmp_.path()) / "pod1";
    victim_ = fs::path(tmp_.path()) / "victim";
    fs::create_directories(bundle_);
    fs::create_directories(victim_);
    std::ofstream(victim_ / "keep") << "x";
  }
  void Record(const std::string& run_dir) {
    std::ofstream(bundle_ / std::string(kVmRecordFile))
        << nlohmann::json{{"qemu_pid", 1}, {"run_dir", run_dir}, {"netns", ""}}.dump();
  }
  fs::path bundle_, victim_;
};

TEST_F(VmCleanUpTest, ARunDirectoryOutsideThePodsIsRefusedAndKept) {
  // Lexically below the VM root, really the victim.
  Record(std::string(kRunRoot) + "/../../.." + victim_.string());
  Status s = CleanUpAfterShim(bundle_.string(), "pod1");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(fs::exists(victim_ / "keep"));
  EXPECT_FALSE(fs::exists(bundle_ / std::string(kVmRecordFile)));

  Record(std::string(kRunRoot) + "/another-pod");
  s = CleanUpAfterShim(bundle_.string(), "pod1");
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("another-pod"), std::string::npos) << s.ToString();
}

TEST_F(VmCleanUpTest, ThePodsOwnRunDirectoryIsCleanedUp) {
  // pid 1's command line does not name the run directory: nothing is killed.
  Record(std::string(kRunRoot) + "/pod1");
  EXPECT_TRUE(CleanUpAfterShim(bundle_.string(), "pod1").ok());
  EXPECT_FALSE(fs::exists(bundle_ / std::string(kVmRecordFile)));
}

}  // namespace
}  // namespace hull::shim::vm
