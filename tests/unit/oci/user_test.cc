// ResolveUser against a rootfs laid out in a temporary directory.

#include "oci/user.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_util.h"
#include "tests/support/temp_dir.h"

namespace hull::oci {
namespace {

class UserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(root_.path().empty());
    ASSERT_EQ(::mkdir((root_ / "etc").c_str(), 0755), 0);
    ASSERT_TRUE(WriteFileAtomic(root_ / "etc/passwd",
                                "# comment\n"
                                "root:x:0:0:root:/root:/bin/sh\n"
                                "broken:x:notanumber:1::/:/bin/false\n"
                                "nobody:x:65534:65534:nobody:/:/bin/false\n"
                                "app:x:1000:2000::/home/app:/bin/sh\n")
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(root_ / "etc/group", "root:x:0:\nstaff:x:50:app\n").ok());
  }

  hull::testing::TempDir root_;
};

TEST_F(UserTest, NumericNeedsNoRootfs) {
  EXPECT_EQ(ResolveUser("65535:65535", ""), (ProcessUser{65535, 65535}));
  EXPECT_EQ(ResolveUser("1000", ""), (ProcessUser{1000, 0}));
  EXPECT_EQ(ResolveUser("0:0", ""), (ProcessUser{0, 0}));
}

TEST_F(UserTest, BareUidTakesItsGroupFromPasswd) {
  EXPECT_EQ(ResolveUser("1000", root_.path()), (ProcessUser{1000, 2000}));
  // Not listed: gid 0, as containerd does.
  EXPECT_EQ(ResolveUser("4242", root_.path()), (ProcessUser{4242, 0}));
  // uid:gid is taken as it is.
  EXPECT_EQ(ResolveUser("1000:7", root_.path()), (ProcessUser{1000, 7}));
}

TEST_F(UserTest, Names) {
  EXPECT_EQ(ResolveUser("app", root_.path()), (ProcessUser{1000, 2000}));
  EXPECT_EQ(ResolveUser("nobody:staff", root_.path()), (ProcessUser{65534, 50}));
  EXPECT_EQ(ResolveUser("0:staff", root_.path()), (ProcessUser{0, 50}));
  auto missing = ResolveUser("ghost", root_.path());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  auto no_rootfs = ResolveUser("app", "");
  ASSERT_FALSE(no_rootfs.has_value());
  EXPECT_EQ(no_rootfs.error().code(), Code::kFailedPrecondition);
}

TEST_F(UserTest, Malformed) {
  for (const char* user : {"1:2:3", "-1", "2147483648", "1:-5"}) {
    auto result = ResolveUser(user, "");
    ASSERT_FALSE(result.has_value()) << user;
    EXPECT_EQ(result.error().code(), Code::kInvalidArgument) << user;
  }
}

// The image cannot point the lookup at a host file through a symlink.
TEST_F(UserTest, SymlinkedPasswdIsRefused) {
  hull::testing::TempDir evil;
  ASSERT_EQ(::mkdir((evil / "etc").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((root_ / "etc/passwd").c_str(), (evil / "etc/passwd").c_str()), 0);
  auto result = ResolveUser("app", evil.path());
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().code(), Code::kOk);
  // So does a bare uid's group lookup: a refused file is not "uid not listed".
  EXPECT_FALSE(ResolveUser("1000", evil.path()).has_value());
}

}  // namespace
}  // namespace hull::oci
