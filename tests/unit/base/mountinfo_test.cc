// Parsing /proc/<pid>/mountinfo: the cases the shim's unmount code and the
// cgroups module's host detection rely on.

#include "base/mountinfo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hull {
namespace {

using Options = std::vector<std::string>;

TEST(MountInfoTest, ParsesFieldsAndEscapes) {
  auto mounts = ParseMountInfo(
      "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "90 22 0:50 /dir /run/with\\040space rw master:1 propagate_from:2 - overlay overlay "
      "rw,lowerdir=/a\\134b\n"
      "91 22 0:51 / /run/empty rw - tmpfs  rw\n");
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  ASSERT_EQ(mounts->size(), 4u);
  const MountInfo& proc = (*mounts)[0];
  EXPECT_EQ(proc.id, 22);
  EXPECT_EQ(proc.parent_id, 1);
  EXPECT_EQ(proc.root, "/");
  EXPECT_EQ(proc.mount_point, "/proc");
  EXPECT_EQ(proc.fs_type, "proc");
  EXPECT_EQ(proc.source, "proc");
  EXPECT_EQ(proc.super_options, Options{"rw"});
  EXPECT_EQ((*mounts)[1].super_options, (Options{"rw", "memory"}));
  const MountInfo& overlay = (*mounts)[2];
  EXPECT_EQ(overlay.root, "/dir");
  EXPECT_EQ(overlay.mount_point, "/run/with space");
  EXPECT_EQ(overlay.fs_type, "overlay");
  EXPECT_EQ(overlay.super_options, (Options{"rw", "lowerdir=/a\\b"}));
  // A mount with an empty source keeps the fields after it in place.
  EXPECT_EQ((*mounts)[3].fs_type, "tmpfs");
  EXPECT_EQ((*mounts)[3].source, "");
  EXPECT_EQ((*mounts)[3].super_options, Options{"rw"});
}

TEST(MountInfoTest, CgroupHierarchies) {
  auto mounts = ParseMountInfo(
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
      "41 31 0:38 /a\\040b /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  ASSERT_EQ(mounts->size(), 2u);
  EXPECT_EQ((*mounts)[0].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ((*mounts)[0].fs_type, "cgroup");
  EXPECT_EQ((*mounts)[0].super_options, (Options{"rw", "memory"}));
  EXPECT_EQ((*mounts)[1].root, "/a b");
  EXPECT_EQ((*mounts)[1].fs_type, "cgroup2");
}

TEST(MountInfoTest, SuperOptionsSplitBeforeUnescaping) {
  // The kernel writes a ',' inside an option's value as \054; empty pieces go.
  auto mounts = ParseMountInfo("7 1 0:7 / /m rw - fuse.x src rw,,opt=a\\054b,\n");
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  ASSERT_EQ(mounts->size(), 1u);
  EXPECT_EQ((*mounts)[0].fs_type, "fuse.x");
  EXPECT_EQ((*mounts)[0].super_options, (Options{"rw", "opt=a,b"}));
}

TEST(MountInfoTest, EscapesThatAreNotOctalStayAsWritten) {
  auto mounts = ParseMountInfo(
      "7 1 0:7 / /a\\011b\\012c rw - tmpfs tmpfs rw\n"
      "8 1 0:8 / /x\\777\\09z\\4 rw - tmpfs tmpfs rw\n");
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  ASSERT_EQ(mounts->size(), 2u);
  EXPECT_EQ((*mounts)[0].mount_point, "/a\tb\nc");
  EXPECT_EQ((*mounts)[1].mount_point, "/x\\777\\09z\\4");
}

TEST(MountInfoTest, EmptyTextAndEmptyLines) {
  auto none = ParseMountInfo("");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  auto one = ParseMountInfo("\n7 1 0:7 / /m rw - tmpfs tmpfs rw\n\n");
  ASSERT_TRUE(one.has_value()) << one.error().ToString();
  EXPECT_EQ(one->size(), 1u);
}

TEST(MountInfoTest, MalformedLineFailsTheWholeParse) {
  const char* kGood = "7 1 0:7 / /m rw - tmpfs tmpfs rw\n";
  for (const char* bad : {
           "22 1 0:21 / /proc rw\n",                    // no "-"
           "x 1 0:21 / /p rw - proc proc rw\n",         // id not a number
           "22 -1 0:21 / /p rw - proc proc rw\n",       // negative parent
           "22 1 0:21 / /p rw - proc proc\n",           // no super options
           "22 1 0:21 / /p rw - proc proc rw extra\n",  // a field too many
           "22 1 0:21 / /p - proc proc rw\n",           // "-" among the fixed fields
           "short line\n",
       }) {
    auto mounts = ParseMountInfo(std::string(kGood) + bad);
    ASSERT_FALSE(mounts.has_value()) << bad;
    EXPECT_EQ(mounts.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(MountInfoTest, ReadsOurOwn) {
  auto mounts = ReadMountInfo();
  ASSERT_TRUE(mounts.has_value()) << mounts.error().ToString();
  bool has_root = false;
  for (const auto& m : *mounts) has_root |= m.mount_point == "/";
  EXPECT_TRUE(has_root);
}

TEST(MountInfoTest, ReadingAMissingFileIsNotFound) {
  auto mounts = ReadMountInfo("/nonexistent/mountinfo");
  ASSERT_FALSE(mounts.has_value());
  EXPECT_EQ(mounts.error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace hull
