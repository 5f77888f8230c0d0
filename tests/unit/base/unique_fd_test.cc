#include "base/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/unit/base/fd_count.h"

namespace hull {
namespace {

TEST(UniqueFdTest, ClosesOnDestructionAndReset) {
  int before = testing::CountOpenFds();
  {
    auto pipe = MakePipe();
    ASSERT_TRUE(pipe.has_value());
    EXPECT_TRUE(pipe->read.valid());
    EXPECT_EQ(testing::CountOpenFds(), before + 2);
    pipe->write.reset();
    EXPECT_EQ(testing::CountOpenFds(), before + 1);
  }
  EXPECT_EQ(testing::CountOpenFds(), before);
}

TEST(UniqueFdTest, MoveTransfersOwnership) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  int raw = pipe->read.get();
  UniqueFd moved = std::move(pipe->read);
  EXPECT_FALSE(pipe->read.valid());
  EXPECT_EQ(moved.get(), raw);
  int released = moved.release();
  EXPECT_FALSE(moved.valid());
  EXPECT_EQ(released, raw);
  ::close(released);
}

TEST(UniqueFdTest, EverythingIsCloexec) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  EXPECT_TRUE(::fcntl(pipe->read.get(), F_GETFD) & FD_CLOEXEC);
  auto dup = pipe->write.Duplicate();
  ASSERT_TRUE(dup.has_value());
  EXPECT_TRUE(::fcntl(dup->get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_TRUE(SetNonBlocking(pipe->read.get()).ok());
  EXPECT_TRUE(::fcntl(pipe->read.get(), F_GETFL) & O_NONBLOCK);
}

}  // namespace
}  // namespace hull
