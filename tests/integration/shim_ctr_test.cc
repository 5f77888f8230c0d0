// hull under a real containerd 1.6, driven by ctr: the shim issue's proof.
// Each test starts a private containerd with hull on its PATH, imports the
// locally built busybox image and runs containers with
// `--runtime io.containerd.hull.v2`, once with runc and once with crun.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/harness/harness.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
constexpr const char* kHull = "io.containerd.hull.v2";

// Runs every test once per runtime hull drives.
class HullCtrTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    if (HullShimDir().empty()) GTEST_SKIP() << "containerd-shim-hull-v2 is not built";
    std::string error;
    containerd_ = PrivateContainerd::Start({}, &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("default", &error)) << error;
    config_ = containerd_->dir() + "/hull-" + GetParam() + ".toml";
    std::ofstream(config_) << "runtime = \"" << GetParam() << "\"\n";
  }

  void TearDown() override {
    if (containerd_ != nullptr && HasFailure()) {
      std::cerr << "containerd log tail:\n" << containerd_->LogTail(60) << "\n";
    }
  }

  // ctr run with hull and this test's runtime; `args` go before the image.
  CommandResult Run(const std::vector<std::string>& flags, const std::string& id,
                    const std::vector<std::string>& command, std::chrono::milliseconds timeout = 60s) {
    std::vector<std::string> args = {"run", "--runtime", kHull, "--runtime-config-path", config_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(kBusybox);
    args.push_back(id);
    args.insert(args.end(), command.begin(), command.end());
    return containerd_->Ctr(args, "default", timeout);
  }

  CommandResult Ctr(const std::vector<std::string>& args) { return containerd_->Ctr(args); }

  std::unique_ptr<PrivateContainerd> containerd_;
  std::string config_;
};

TEST_P(HullCtrTest, RunRmPrintsOutput) {
  CommandResult r = Run({"--rm"}, "t1", {"sh", "-c", "echo hello from $(cat /proc/1/comm); exit 0"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "hello from sh\n");
  EXPECT_TRUE(ProcessesMatching("containerd-shim-hull-v2").empty());
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullCtrTest, ::testing::Values("runc", "crun"));

}  // namespace
}  // namespace hull::itest
