// The sandbox's transition table.
#include "shim/sandbox/sandbox_state.h"

#include <gtest/gtest.h>

namespace hull::shim {
namespace {

using S = SandboxState;

TEST(SandboxStateTest, AllowedMoves) {
  EXPECT_TRUE(CheckSandboxTransition(S::kNone, S::kCreated).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kCreated, S::kReady).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kCreated, S::kStopped).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kCreated, S::kShutdown).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kReady, S::kStopped).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kReady, S::kShutdown).ok());
  EXPECT_TRUE(CheckSandboxTransition(S::kStopped, S::kShutdown).ok());
}

TEST(SandboxStateTest, EveryOtherMoveIsAFailedPrecondition) {
  const S all[] = {S::kNone, S::kCreated, S::kReady, S::kStopped, S::kShutdown};
  int allowed = 0;
  for (S from : all) {
    for (S to : all) {
      Status s = CheckSandboxTransition(from, to);
      if (s.ok()) {
        ++allowed;
      } else {
        EXPECT_EQ(s.code(), Code::kFailedPrecondition)
            << SandboxStateName(from) << " -> " << SandboxStateName(to);
      }
    }
  }
  EXPECT_EQ(allowed, 7);
  EXPECT_FALSE(CheckSandboxTransition(S::kReady, S::kReady).ok());
  EXPECT_FALSE(CheckSandboxTransition(S::kStopped, S::kReady).ok());
  EXPECT_FALSE(CheckSandboxTransition(S::kShutdown, S::kCreated).ok());
}

}  // namespace
}  // namespace hull::shim
