// fstab-style options to mount(2) flags and data.

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <string>
#include <vector>

#include "shim/mount/mount.h"

namespace hull::shim {
namespace {

Result<MountOptions> Parse(std::vector<std::string> options) {
  return ParseMountOptions(options);
}

TEST(MountOptionsTest, FlagWords) {
  auto o = Parse({"rbind", "ro", "nosuid", "nodev", "noexec", "relatime"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->flags,
            MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME);
  EXPECT_EQ(o->propagation, 0u);
  EXPECT_TRUE(o->data.empty());
}

TEST(MountOptionsTest, LaterWordsWin) {
  EXPECT_EQ(Parse({"ro", "rw"})->flags, 0u);
  EXPECT_EQ(Parse({"nosuid", "suid", "dev"})->flags, 0u);
  EXPECT_EQ(Parse({"defaults", "bind"})->flags, static_cast<unsigned long>(MS_BIND));
}

TEST(MountOptionsTest, PropagationIsSeparate) {
  auto o = Parse({"rbind", "rprivate"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->flags, MS_BIND | MS_REC);
  EXPECT_EQ(o->propagation, MS_PRIVATE | MS_REC);
  EXPECT_EQ(Parse({"shared"})->propagation, static_cast<unsigned long>(MS_SHARED));
  EXPECT_EQ(Parse({"rslave"})->propagation, MS_SLAVE | MS_REC);
}

TEST(MountOptionsTest, DataKeptInOrderContainerdOptionsDropped) {
  auto o = Parse({"index=off", "lowerdir=/l2:/l1", "X-containerd.mkdir.path=/x", "upperdir=/u",
                  "workdir=/w", "ro"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->data, (std::vector<std::string>{"index=off", "lowerdir=/l2:/l1", "upperdir=/u",
                                               "workdir=/w"}));
  EXPECT_EQ(o->flags, static_cast<unsigned long>(MS_RDONLY));
}

TEST(MountOptionsTest, UnsupportedOptions) {
  EXPECT_EQ(Parse({"loop"}).error().code(), Code::kUnimplemented);
  EXPECT_EQ(Parse({"uidmap=0:1000:1"}).error().code(), Code::kUnimplemented);
  EXPECT_EQ(Parse({"gidmap=0:1000:1"}).error().code(), Code::kUnimplemented);
}

}  // namespace
}  // namespace hull::shim
