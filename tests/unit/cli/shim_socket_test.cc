// Creating the shim socket, finding a live one, replacing a stale one.

#include "shim/cli/shim_socket.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

class ShimSocketTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-sock"};  // dir_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }
  std::string dir_;
};

TEST_F(ShimSocketTest, CreatesDirectoriesAndListens) {
  std::string path = dir_ + "/a/s/sock";
  auto listener = ListenShimSocket(path);
  ASSERT_TRUE(listener.has_value()) << listener.error().ToString();
  EXPECT_FALSE(listener->existing);
  EXPECT_TRUE(listener->fd.valid());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ + "/a/s").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);
  EXPECT_TRUE(CanConnect(path));
}

TEST_F(ShimSocketTest, LiveSocketIsReusedNotReplaced) {
  std::string path = dir_ + "/sock";
  auto first = ListenShimSocket(path);
  ASSERT_TRUE(first.has_value());
  auto second = ListenShimSocket(path);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_TRUE(second->existing);
  EXPECT_FALSE(second->fd.valid());
}

TEST_F(ShimSocketTest, StaleSocketIsReplaced) {
  std::string path = dir_ + "/sock";
  {
    auto first = ListenShimSocket(path);
    ASSERT_TRUE(first.has_value());
  }  // closed: the file stays, nobody listens
  EXPECT_FALSE(CanConnect(path));
  auto second = ListenShimSocket(path);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_FALSE(second->existing);
  EXPECT_TRUE(CanConnect(path));
}

TEST_F(ShimSocketTest, TooLongPathIsInvalid) {
  auto listener = ListenShimSocket(dir_ + "/" + std::string(120, 'x'));
  ASSERT_FALSE(listener.has_value());
  EXPECT_EQ(listener.error().code(), Code::kInvalidArgument);
}

TEST_F(ShimSocketTest, CannotConnectToNothing) {
  EXPECT_FALSE(CanConnect(dir_ + "/missing"));
}

}  // namespace
}  // namespace hull::shim
