// Parsing /proc/<pid>/mountinfo.

#include "shim/mount/mountinfo.h"

#include <gtest/gtest.h>

namespace hull::shim {
namespace {

TEST(MountInfoTest, ParsesFieldsAndEscapes) {
  auto mounts = ParseMountInfo(
      "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "90 22 0:50 /dir /run/with\\040space rw master:1 propagate_from:2 - overlay overlay "
      "rw,lowerdir=/a\\134b\n"
      "91 22 0:51 / /run/empty rw -  \n");
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  ASSERT_EQ(mounts->size(), 4u);
  const MountInfo& proc = (*mounts)[0];
  EXPECT_EQ(proc.id, 22);
  EXPECT_EQ(proc.parent_id, 1);
  EXPECT_EQ(proc.mount_point, "/proc");
  EXPECT_EQ(proc.fs_type, "proc");
  EXPECT_EQ(proc.source, "proc");
  EXPECT_EQ((*mounts)[1].super_options, "rw,memory");
  const MountInfo& overlay = (*mounts)[2];
  EXPECT_EQ(overlay.root, "/dir");
  EXPECT_EQ(overlay.mount_point, "/run/with space");
  EXPECT_EQ(overlay.fs_type, "overlay");
  EXPECT_EQ(overlay.super_options, "rw,lowerdir=/a\\b");
  // A mount with an empty source keeps the fields in place.
  EXPECT_EQ((*mounts)[3].fs_type, "");
  EXPECT_EQ((*mounts)[3].source, "");
}

TEST(MountInfoTest, MalformedLines) {
  EXPECT_EQ(ParseMountInfo("22 1 0:21 / /proc rw\n").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseMountInfo("x 1 0:21 / /p rw - proc proc rw\n").error().code(),
            Code::kInvalidArgument);
}

TEST(MountInfoTest, ReadsOurOwn) {
  auto mounts = ReadMountInfo();
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  bool has_root = false;
  for (const auto& m : *mounts) has_root |= m.mount_point == "/";
  EXPECT_TRUE(has_root);
}

}  // namespace
}  // namespace hull::shim
