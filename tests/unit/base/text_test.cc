// TrimSpace: the one whitespace trim the kernel-file and runtime-output
// parsers share (base/text.h).
#include "base/text.h"

#include <gtest/gtest.h>

namespace hull {
namespace {

TEST(TrimSpaceTest, DropsEveryKindOfLeadingAndTrailingWhitespace) {
  EXPECT_EQ(TrimSpace(" \t\n\r\v\f42 kB \r\n"), "42 kB");
  EXPECT_EQ(TrimSpace("max\n"), "max");
  EXPECT_EQ(TrimSpace("runsc version release-20230214.0\r"), "runsc version release-20230214.0");
}

TEST(TrimSpaceTest, KeepsInnerWhitespaceAndUntouchedText) {
  EXPECT_EQ(TrimSpace("a \t b"), "a \t b");
  EXPECT_EQ(TrimSpace("0-1"), "0-1");
}

TEST(TrimSpaceTest, AllWhitespaceOrEmptyIsEmpty) {
  EXPECT_EQ(TrimSpace(""), "");
  EXPECT_EQ(TrimSpace(" \n\t "), "");
}

}  // namespace
}  // namespace hull
