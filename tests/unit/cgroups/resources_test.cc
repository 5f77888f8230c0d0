// OCI LinuxResources -> Resources: runc's conversions, every field the
// parser maps, and the wrong types and impossible values it refuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cgroups/cgroups.h"

namespace hull::cgroups {
namespace {

TEST(ConversionTest, CpuWeightFromSharesIsRuncs) {
  EXPECT_EQ(CpuWeightFromShares(0), 0u);  // unset
  EXPECT_EQ(CpuWeightFromShares(2), 1u);
  EXPECT_EQ(CpuWeightFromShares(1024), 39u);  // 1 + 1022 * 9999 / 262142
  EXPECT_EQ(CpuWeightFromShares(262144), 10000u);
  // Outside the kernel's v1 range: clamped, never wrapped.
  EXPECT_EQ(CpuWeightFromShares(1), 1u);
  EXPECT_EQ(CpuWeightFromShares(1'000'000), 10000u);
}

TEST(ConversionTest, IoWeightFromBlkio) {
  EXPECT_EQ(IoWeightFromBlkio(0), 0u);
  EXPECT_EQ(IoWeightFromBlkio(10), 1u);
  EXPECT_EQ(IoWeightFromBlkio(500), 1 + 490 * 9999 / 990u);
  EXPECT_EQ(IoWeightFromBlkio(1000), 10000u);
  EXPECT_EQ(IoWeightFromBlkio(5), 1u);
}

TEST(ConversionTest, SwapIsMemoryPlusSwapMinusMemory) {
  auto swap = [](int64_t s, int64_t l) { return SwapMaxFromOci(s, l); };
  EXPECT_EQ(swap(0, 0).value(), std::nullopt);
  EXPECT_EQ(swap(0, 1 << 20).value(), std::nullopt);
  EXPECT_EQ(swap(0, -1).value(), kUnlimited);  // unlimited memory, swap unset
  EXPECT_EQ(swap(-1, 1 << 20).value(), kUnlimited);
  EXPECT_EQ(swap(3 << 20, 1 << 20).value(), uint64_t{2 << 20});
  EXPECT_EQ(swap(1 << 20, 1 << 20).value(), uint64_t{0});  // no swap at all
  EXPECT_EQ(swap(1 << 20, 0).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(swap(1 << 20, -1).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(swap(1 << 20, 2 << 20).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(swap(-5, 1 << 20).error().code(), Code::kInvalidArgument);
}

constexpr const char* kFullResources = R"({
  "devices": [{"allow": false, "access": "rwm"}],
  "memory": {"limit": 536870912, "reservation": 268435456, "swap": 1073741824,
             "kernel": -1, "swappiness": 60, "disableOOMKiller": false},
  "cpu": {"shares": 512, "quota": 50000, "period": 100000, "burst": 10000,
          "realtimeRuntime": 0, "cpus": "0-1", "mems": "0", "idle": 0},
  "pids": {"limit": 64},
  "blockIO": {"weight": 500, "leafWeight": 300,
              "weightDevice": [{"major": 8, "minor": 0, "weight": 200},
                               {"major": 8, "minor": 16, "leafWeight": 100}],
              "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}],
              "throttleWriteBpsDevice": [{"major": 8, "minor": 0, "rate": 0}],
              "throttleReadIOPSDevice": [{"major": 8, "minor": 0, "rate": 100}],
              "throttleWriteIOPSDevice": [{"major": 8, "minor": 0, "rate": 200}]},
  "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304},
                     {"pageSize": "1GB", "limit": 0}],
  "network": {"classID": 1},
  "rdma": {"mlx5_1": {"hcaHandles": 3, "hcaObjects": 10000}, "mlx4_0": {}},
  "unified": {"memory.high": "400000000", "memory.min": "1000", "cgroup.max.depth": "3"}
})";

TEST(ParseResourcesTest, MapsEveryField) {
  auto r = ParseResources(std::string_view(kFullResources));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_max, 536870912u);
  EXPECT_EQ(r->memory_low, 268435456u);
  EXPECT_EQ(r->memory_swap_max, 1073741824u - 536870912u);
  EXPECT_EQ(r->memory_min, std::nullopt);  // only through unified
  EXPECT_EQ(r->cpu_weight, CpuWeightFromShares(512));
  EXPECT_EQ(r->cpu_max, (CpuMax{.quota = 50000, .period = 100000}));
  EXPECT_EQ(r->cpu_max_burst, 10000u);
  EXPECT_EQ(r->cpu_idle, 0);
  EXPECT_EQ(r->cpuset_cpus, "0-1");
  EXPECT_EQ(r->cpuset_mems, "0");
  EXPECT_EQ(r->pids_max, 64u);
  EXPECT_EQ(r->blkio_weight, 500u);
  ASSERT_EQ(r->blkio_weight_devices.size(), 1u);  // the leafWeight-only one has nothing on v2
  EXPECT_EQ(r->blkio_weight_devices[0], (IoDeviceWeight{8, 0, 200}));
  EXPECT_EQ(r->io_max, (std::vector<IoMax>{{8, 0, "rbps", 1048576},
                                           {8, 0, "wbps", kUnlimited},
                                           {8, 0, "riops", 100},
                                           {8, 0, "wiops", 200}}));
  EXPECT_EQ(r->hugetlb_max.at("2MB"), 4194304u);
  EXPECT_EQ(r->hugetlb_max.at("1GB"), 0u);
  ASSERT_EQ(r->rdma_max.size(), 2u);
  EXPECT_EQ(r->rdma_max[0].device, "mlx4_0");  // object order
  EXPECT_EQ(r->rdma_max[0].hca_handles, std::nullopt);
  EXPECT_EQ(r->rdma_max[1], (RdmaMax{"mlx5_1", 3, 10000}));
  EXPECT_EQ(r->unified.at("memory.high"), "400000000");
  EXPECT_EQ(r->unified.at("memory.min"), "1000");
  EXPECT_EQ(r->unified.at("cgroup.max.depth"), "3");
  EXPECT_EQ(r->Controllers(),
            (std::vector<std::string>{"cpu", "cpuset", "memory", "pids", "io", "hugetlb", "rdma"}));
}

TEST(ParseResourcesTest, BothJsonFlavoursAndNull) {
  auto plain = ParseResources(nlohmann::json::parse(kFullResources));
  auto ordered = ParseResources(nlohmann::ordered_json::parse(kFullResources));
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(ordered.has_value());
  // Only the rdma order follows the document; everything else is keyed.
  plain->rdma_max.clear();
  ordered->rdma_max.clear();
  EXPECT_EQ(*plain, *ordered);
  auto empty = ParseResources(nlohmann::json());
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, Resources{});
  EXPECT_TRUE(empty->Controllers().empty());
}

TEST(ParseResourcesTest, UnlimitedAndUnsetValues) {
  auto r = ParseResources(std::string_view(R"({
    "memory": {"limit": -1, "reservation": 0},
    "cpu": {"shares": 0, "quota": -1, "period": 50000, "cpus": ""},
    "pids": {"limit": -1}
  })"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_max, kUnlimited);
  EXPECT_EQ(r->memory_low, std::nullopt);
  EXPECT_EQ(r->memory_swap_max, kUnlimited);  // runc: unlimited memory, swap unset
  EXPECT_EQ(r->cpu_weight, std::nullopt);
  EXPECT_EQ(r->cpu_max, (CpuMax{.quota = kUnlimited, .period = 50000}));
  EXPECT_EQ(r->cpuset_cpus, std::nullopt);
  EXPECT_EQ(r->pids_max, kUnlimited);

  auto none = ParseResources(std::string_view(R"({"cpu": {"quota": 0}, "pids": {"limit": 0}})"));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->cpu_max, std::nullopt);
  EXPECT_EQ(none->pids_max, std::nullopt);

  auto quota_only = ParseResources(std::string_view(R"({"cpu": {"quota": 20000}})"));
  ASSERT_TRUE(quota_only.has_value());
  EXPECT_EQ(quota_only->cpu_max, (CpuMax{.quota = 20000, .period = 100000}));
}

TEST(ParseResourcesTest, RefusesWrongTypesAndValues) {
  const char* bad[] = {
      "[]",
      "not json",
      R"({"memory": 5})",
      R"({"memory": {"limit": "1G"}})",
      R"({"memory": {"limit": 1.5}})",
      R"({"memory": {"limit": 18446744073709551615}})",
      R"({"memory": {"swap": 1048576}})",                    // swap without limit
      R"({"memory": {"limit": 2097152, "swap": 1048576}})",  // swap below limit
      R"({"cpu": {"shares": -2}})",
      R"({"cpu": {"cpus": 3}})",
      R"({"pids": {"limit": true}})",
      R"({"blockIO": {"weight": 2000}})",
      R"({"blockIO": {"weightDevice": {}}})",
      R"({"blockIO": {"throttleReadBpsDevice": [{"major": 8, "rate": 1}]}})",
      R"({"hugepageLimits": [{"pageSize": "2XB", "limit": 1}]})",
      R"({"hugepageLimits": [{"limit": 1}]})",
      R"({"rdma": {"mlx": {"hcaHandles": 4294967296}}})",
      R"({"unified": {"cgroup.procs": "1"}})",
      R"({"unified": {"cgroup.kill": "1"}})",
      R"({"unified": {"../memory.max": "1"}})",
      R"({"unified": {"memory.max": 5}})",
      R"({"unified": {"nodot": "1"}})",
  };
  for (const char* text : bad) {
    auto r = ParseResources(std::string_view(text));
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace hull::cgroups
