// guest_init's pod cgroup (SetPodMemoryMaxIn) against a directory that stands
// in for the guest's cgroup2 root: what it makes, and what it leaves when it
// fails.
#include "agent/guest_init.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/file_util.h"
#include "tests/support/temp_dir.h"

namespace hull::agent {
namespace {

namespace fs = std::filesystem;

// A plain directory is not a cgroup: the kernel fills a new cgroup with its
// cgroup.controllers, so enabling the controllers below the new one fails.
// The directory made is removed again, so the next call starts over instead
// of writing a memory.max that cannot exist.
TEST(SetPodMemoryMaxTest, ACgroupWhoseControllersCannotBeEnabledIsRemoved) {
  hull::testing::TempDir root("hull-guest-init");
  ASSERT_TRUE(root.ok());
  Status s = SetPodMemoryMaxIn(root.path(), 256ull << 20);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(root / "hull"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(root / "hull"));
}

// An existing pod cgroup is used as it is: only its memory.max is written.
TEST(SetPodMemoryMaxTest, AnExistingPodCgroupGetsTheLimit) {
  hull::testing::TempDir root("hull-guest-init");
  ASSERT_TRUE(root.ok());
  fs::create_directories(root / "hull");
  ASSERT_TRUE(WriteFileAtomic(root / "hull/memory.max", "max\n", 0644).ok());
  ASSERT_TRUE(SetPodMemoryMaxIn(root.path(), 448ull << 20).ok());
  EXPECT_EQ(ReadFile(root / "hull/memory.max").value(), std::to_string(448ull << 20));
}

}  // namespace
}  // namespace hull::agent
