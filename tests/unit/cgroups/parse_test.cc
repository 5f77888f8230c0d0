// The file-format parsers.
#include <gtest/gtest.h>

#include <limits>

#include "cgroups/parse_internal.h"

namespace hull::cgroups::internal {
namespace {

TEST(ParseTest, UintOrMax) {
  EXPECT_EQ(ParseUintOrMax("42\n", 0), 42u);
  EXPECT_EQ(ParseUintOrMax("max\n", 7), 7u);
  EXPECT_EQ(ParseUintOrMax(" 18446744073709551615 ", 0), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(ParseUintOrMax("", 0).has_value());
  EXPECT_FALSE(ParseUintOrMax("-1", 0).has_value());
  EXPECT_FALSE(ParseUintOrMax("12ab", 0).has_value());
  EXPECT_FALSE(ParseUintOrMax("18446744073709551616", 0).has_value());
}

TEST(ParseTest, FlatKeyedSkipsOddLines) {
  FlatKeyed kv = ParseFlatKeyed("a 1\nb two\n\nc 3 4\nd 5\n");
  ASSERT_EQ(kv.size(), 2u);
  EXPECT_EQ(Lookup(kv, "a"), 1u);
  EXPECT_EQ(Lookup(kv, "d"), 5u);
  EXPECT_FALSE(Lookup(kv, "b").has_value());
}

TEST(ParseTest, NestedKeyed) {
  auto lines = ParseNestedKeyed("8:16 rbytes=1 wbytes=2\nsome avg10=0.50 total=9\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].name, "8:16");
  EXPECT_EQ(lines[0].Get("wbytes"), "2");
  EXPECT_FALSE(lines[0].Get("dios").has_value());
  EXPECT_EQ(lines[1].Get("avg10"), "0.50");
}

TEST(ParseTest, Blkio) {
  auto lines = ParseBlkio("8:0 Read 10\n8:0 Total 10\n253:1 77\nTotal 10\n");
  ASSERT_TRUE(lines.has_value()) << lines.error().ToString();
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].op, "Read");
  EXPECT_EQ((*lines)[1].op, "Total");
  EXPECT_EQ((*lines)[2].major, 253u);
  EXPECT_EQ((*lines)[2].minor, 1u);
  EXPECT_EQ((*lines)[2].op, "");
  EXPECT_EQ((*lines)[2].value, 77u);
  EXPECT_FALSE(ParseBlkio("8:0 Read\n").has_value());
  EXPECT_FALSE(ParseBlkio("x:y Read 1\n").has_value());
  EXPECT_TRUE(ParseBlkio("Total 0\n")->empty());
}

TEST(ParseTest, Partitions) {
  auto parts = ParsePartitions("major minor  #blocks  name\n\n 254        0  268435456 vda\n");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].major, 254u);
  EXPECT_EQ(parts[0].device, "/dev/vda");
}

TEST(ParseTest, PageSizes) {
  EXPECT_EQ(PageSizeBytes("64KB"), 64u << 10);
  EXPECT_EQ(PageSizeBytes("2MB"), 2u << 20);
  EXPECT_EQ(PageSizeBytes("1GB"), 1u << 30);
  EXPECT_FALSE(PageSizeBytes("rsvd").has_value());
  EXPECT_FALSE(PageSizeBytes("2TB").has_value());
}

}  // namespace
}  // namespace hull::cgroups::internal
