// The host pause runner, without root: a spec with no namespaces to create
// (every namespace given by path would need privileges), so the clone is a
// plain fork. Its name, its end on SIGKILL (Kill) and on SIGTERM, its exit
// reaped through the reaper, and a user namespace refused.
#include "shim/sandbox/pause_process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace hull::shim {
namespace {

using std::chrono::seconds;

oci::Spec SpecWith(const std::string& namespaces_json) {
  auto spec = oci::Spec::Parse(R"({"ociVersion":"1.0.2","hostname":"h","linux":{"namespaces":)" +
                               namespaces_json + "}}");
  EXPECT_TRUE(spec.has_value());
  return *spec;
}

std::string Comm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PauseProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(*Reaper::Create(*loop_));
    runner_ = MakeHostPauseRunner(*reaper_);
  }
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<PauseRunner> runner_;
};

TEST_F(PauseProcessTest, RunsNamedUntilKilled) {
  std::optional<int> exit_status;
  auto pid = runner_->Start(SpecWith("[]"), [&](int status) { exit_status = status; });
  ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return Comm(*pid) == "hull-pause\n"; }, seconds(5)));
  EXPECT_FALSE(exit_status.has_value());
  runner_->Kill(*pid);
  ASSERT_TRUE(loop_->RunUntil([&] { return exit_status.has_value(); }, seconds(5)));
  EXPECT_EQ(*exit_status, 128 + SIGKILL);
}

TEST_F(PauseProcessTest, EndsCleanlyOnSigterm) {
  std::optional<int> exit_status;
  auto pid = runner_->Start(SpecWith("[]"), [&](int status) { exit_status = status; });
  ASSERT_TRUE(pid.has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return Comm(*pid) == "hull-pause\n"; }, seconds(5)));
  ASSERT_EQ(::kill(*pid, SIGTERM), 0);
  ASSERT_TRUE(loop_->RunUntil([&] { return exit_status.has_value(); }, seconds(5)));
  EXPECT_EQ(*exit_status, 0);
}

TEST_F(PauseProcessTest, RefusesAUserNamespaceAndAMissingNetns) {
  auto user = runner_->Start(SpecWith(R"([{"type":"user"}])"), [](int) {});
  ASSERT_FALSE(user.has_value());
  EXPECT_EQ(user.error().code(), Code::kUnimplemented);
  auto netns =
      runner_->Start(SpecWith(R"([{"type":"network","path":"/nonexistent/netns"}])"), [](int) {});
  ASSERT_FALSE(netns.has_value());
  EXPECT_EQ(netns.error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace hull::shim
