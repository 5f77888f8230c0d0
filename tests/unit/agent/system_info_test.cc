#include "agent/system_info.h"

#include <gtest/gtest.h>

namespace hull::agent {
namespace {

TEST(SystemInfoTest, CpuListsAreCounted) {
  EXPECT_EQ(ParseCpuList("0-1\n").value(), 2u);
  EXPECT_EQ(ParseCpuList("0").value(), 1u);
  EXPECT_EQ(ParseCpuList("0,2-3,7\n").value(), 4u);
  EXPECT_EQ(ParseCpuList("0-63").value(), 64u);
}

TEST(SystemInfoTest, BadCpuListsAreInvalid) {
  for (const char* bad : {"", "\n", "3-1", "a", "0-", "0,,1", "-1"}) {
    Result<uint32_t> n = ParseCpuList(bad);
    ASSERT_FALSE(n.has_value()) << bad;
    EXPECT_EQ(n.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(SystemInfoTest, MeminfoFieldsAreBytes) {
  const char* meminfo =
      "MemTotal:         210640 kB\n"
      "MemFree:          180000 kB\n"
      "MemAvailable:     175432 kB\n"
      "HugePages_Total:       0\n";
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "MemTotal").value(), 210640u * 1024);
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "MemAvailable").value(), 175432u * 1024);
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "HugePages_Total").value(), 0u);
  // A key is matched whole, not as a prefix.
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "Mem").error().code(), Code::kNotFound);
  EXPECT_EQ(ParseMeminfoBytes("MemTotal: lots kB\n", "MemTotal").error().code(),
            Code::kInvalidArgument);
}

TEST(SystemInfoTest, ThisMachineIsRead) {
  Result<SystemInfo> info = ReadSystemInfo();
  ASSERT_TRUE(info.has_value()) << info.error().ToString();
  EXPECT_GT(info->vcpus, 0u);
  EXPECT_GT(info->memory_bytes, 0u);
  EXPECT_LE(info->memory_available_bytes, info->memory_bytes);
  EXPECT_FALSE(info->kernel_release.empty());
}

}  // namespace
}  // namespace hull::agent
