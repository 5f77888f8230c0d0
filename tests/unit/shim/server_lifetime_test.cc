// ServerLifetime: every rule of when the shim server ends, driven by hand
// (no services, no ttrpc): the reports containerd's calls turn into, and the
// one `stop` they may cause.
#include "shim/server_lifetime.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/unit/ttrpc/test_util.h"

namespace hull::shim {
namespace {

using std::chrono::milliseconds;

class ServerLifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_ = ttrpc::testing::NewLoop();
    lifetime_ = std::make_unique<ServerLifetime>(
        *loop_, [this] { return all_deleted_; }, [this] { ++stops_; },
        ServerLifetime::Timing{.shutdown_grace = milliseconds(20), .linger = milliseconds(20)});
  }
  // Runs the loop for `ms` (long enough for the 20 ms timers).
  void RunFor(int ms) {
    loop_->RunUntil([] { return false; }, milliseconds(ms));
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ServerLifetime> lifetime_;
  bool all_deleted_ = true;
  int stops_ = 0;
};

TEST_F(ServerLifetimeTest, ATaskShutdownWithNothingLeftEndsTheServerOnceAnswered) {
  EXPECT_TRUE(lifetime_->TaskShutdown());
  EXPECT_EQ(stops_, 0) << "the caller answers first";
  lifetime_->ShutdownAnswered();
  EXPECT_EQ(stops_, 1);
  lifetime_->EndNow();
  EXPECT_EQ(stops_, 1) << "stop runs once";
}

TEST_F(ServerLifetimeTest, ATaskShutdownWithContainersLeftEndsItAfterTheLastDeleteAndAGrace) {
  all_deleted_ = false;
  EXPECT_FALSE(lifetime_->TaskShutdown());
  lifetime_->ContainerDeleted();  // one of two
  RunFor(60);
  EXPECT_EQ(stops_, 0);
  all_deleted_ = true;
  lifetime_->ContainerDeleted();
  EXPECT_EQ(stops_, 0) << "containerd's own Shutdown gets the grace period";
  ASSERT_TRUE(loop_->RunUntil([&] { return stops_ == 1; }, milliseconds(2000)));
}

TEST_F(ServerLifetimeTest, ANewContainerDuringTheGraceKeepsTheServer) {
  all_deleted_ = false;
  EXPECT_FALSE(lifetime_->TaskShutdown());
  all_deleted_ = true;
  lifetime_->ContainerDeleted();
  all_deleted_ = false;  // admitted meanwhile
  RunFor(60);
  EXPECT_EQ(stops_, 0);
}

TEST_F(ServerLifetimeTest, DeletesWithoutAShutdownNeverEndIt) {
  lifetime_->ContainerDeleted();
  RunFor(60);
  EXPECT_EQ(stops_, 0);
}

TEST_F(ServerLifetimeTest, ASandboxApiPodEndsOnlyAtShutdownSandboxAfterTheLinger) {
  lifetime_->SandboxCreated();
  EXPECT_FALSE(lifetime_->TaskShutdown());
  all_deleted_ = false;
  EXPECT_FALSE(lifetime_->TaskShutdown());
  all_deleted_ = true;
  lifetime_->ContainerDeleted();
  RunFor(60);
  EXPECT_EQ(stops_, 0);
  lifetime_->SandboxShutDown();
  EXPECT_EQ(stops_, 0) << "the reply goes out before the connection ends";
  ASSERT_TRUE(loop_->RunUntil([&] { return stops_ == 1; }, milliseconds(2000)));
}

TEST_F(ServerLifetimeTest, ASignalEndsItAtOnce) {
  lifetime_->SandboxCreated();
  all_deleted_ = false;
  lifetime_->EndNow();
  EXPECT_EQ(stops_, 1);
  EXPECT_TRUE(lifetime_->ended());
}

}  // namespace
}  // namespace hull::shim
