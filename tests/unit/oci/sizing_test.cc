// Pod sizing: every edge case of the reference's sections 1.3-1.4 and
// docs/sizing.md, for the three sources (containerd annotations, CRI-O JSON,
// PodSandboxConfig).

#include "oci/sizing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "cri/runtime/v1/api.pb.h"
#include "oci/annotations.h"

namespace hull::oci {
namespace {

using Annotations = std::map<std::string, std::string>;

constexpr int64_t kMiB = 1024 * 1024;

// containerd's four keys with the given raw values.
Annotations Containerd(std::string period, std::string quota, std::string shares,
                       std::string memory) {
  return {{std::string(kSandboxCpuPeriod), period},
          {std::string(kSandboxCpuQuota), quota},
          {std::string(kSandboxCpuShares), shares},
          {std::string(kSandboxMemory), memory}};
}

const SizingPolicy kPolicy;  // the defaults: 0.25 vCPU, 112 MiB + 3% overhead

TEST(SizingTest, PolicyDefaults) {
  EXPECT_EQ(kPolicy.overhead_vcpus, 0.25);
  EXPECT_EQ(kPolicy.overhead_memory_mib, 112u);
  EXPECT_EQ(kPolicy.overhead_memory_percent, 3.0);
  EXPECT_EQ(kPolicy.default_vcpus, 1u);
  EXPECT_EQ(kPolicy.default_memory_mib, 2048u);
  EXPECT_EQ(kPolicy.min_memory_mib, 128u);
  EXPECT_EQ(kPolicy.max_vcpus, 0u);
  EXPECT_TRUE(kPolicy.round_memory_to_even);
}

TEST(SizingTest, ContainerdAnnotationsWithLimits) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "50000", "512", "268435456"), kPolicy);
  EXPECT_EQ(size.source, SizeSource::kContainerdAnnotations);
  EXPECT_EQ(size.workload, (CpuMemory{100000, 50000, 512, 256 * kMiB}));
  EXPECT_TRUE(size.cpu_limit_set);
  EXPECT_FALSE(size.cpu_unconstrained);
  EXPECT_TRUE(size.cpu_shares_set);
  EXPECT_TRUE(size.memory_limit_set);
  EXPECT_EQ(size.vcpus, 1u);         // ceil(0.25 + 0.5)
  EXPECT_EQ(size.memory_mib, 376u);  // 112 + ceil(3% of 256) + 256
  EXPECT_FALSE(size.vcpus_defaulted);
  EXPECT_FALSE(size.memory_defaulted);
  EXPECT_EQ(size.pod_cpu_millis, 500u);
  EXPECT_EQ(size.pod_memory_bytes, static_cast<uint64_t>(256 * kMiB));
  EXPECT_TRUE(size.warnings.empty());
  EXPECT_EQ(size.ToString().rfind("1 vCPU, 376 MiB (containerd annotations", 0), 0u)
      << size.ToString();
}

TEST(SizingTest, WholeCpusGetTheOverheadOnTop) {
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "100000", "1024", "0"), kPolicy).vcpus, 2u);
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "200000", "2048", "0"), kPolicy).vcpus, 3u);
  EXPECT_EQ(SizeFromAnnotations(Containerd("50000", "175000", "0", "0"), kPolicy).vcpus, 4u);
}

// ceil() is exact: 0.2 + 0.8 is 1 vCPU, not 2 through floating-point error.
TEST(SizingTest, ExactArithmetic) {
  SizingPolicy policy;
  policy.overhead_vcpus = 0.2;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "80000", "0", "0"), policy).vcpus, 1u);
  policy.overhead_vcpus = 0.1;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "190000", "0", "0"), policy).vcpus, 2u);
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "190001", "0", "0"), policy).vcpus, 3u);
  policy.overhead_vcpus = 0;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "100000", "0", "0"), policy).vcpus, 1u);
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "100001", "0", "0"), policy).vcpus, 2u);
}

// Static CPU manager (DisableCPUQuotaWithExclusiveCPUs): quota -1, the
// exclusive CPUs are in the shares.
TEST(SizingTest, QuotaMinusOneWithShares) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "-1", "4096", "1073741824"), kPolicy);
  EXPECT_TRUE(size.cpu_unconstrained);
  EXPECT_FALSE(size.cpu_limit_set);
  EXPECT_EQ(size.vcpus, 5u);  // ceil(0.25 + ceil(4096 / 1024))
  EXPECT_FALSE(size.vcpus_defaulted);
  EXPECT_EQ(size.memory_mib, 1168u);
  EXPECT_EQ(size.pod_cpu_millis, 0u);
  EXPECT_TRUE(size.warnings.empty());
  // Shares that are not a whole number of CPUs round up.
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "-1", "1500", "0"), kPolicy).vcpus, 3u);
}

TEST(SizingTest, QuotaMinusOneWithoutShares) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "-1", "0", "0"), kPolicy);
  EXPECT_TRUE(size.cpu_unconstrained);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_TRUE(size.vcpus_defaulted);
  EXPECT_EQ(size.warnings.size(), 1u);
}

// Only a CPU limit: memory falls back to the default, never to the bare
// overhead and never to 0 MiB.
TEST(SizingTest, CpuOnly) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "150000", "1536", "0"), kPolicy);
  EXPECT_EQ(size.vcpus, 2u);
  EXPECT_FALSE(size.memory_limit_set);
  EXPECT_TRUE(size.memory_defaulted);
  EXPECT_EQ(size.memory_mib, 2048u);

  SizingPolicy zero;
  zero.default_memory_mib = 0;
  zero.min_memory_mib = 0;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "150000", "1536", "0"), zero).memory_mib, 2u);
  zero.round_memory_to_even = false;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "150000", "1536", "0"), zero).memory_mib, 1u);
}

TEST(SizingTest, MemoryOnly) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "0", "256", "536870912"), kPolicy);
  EXPECT_FALSE(size.cpu_limit_set);
  EXPECT_TRUE(size.cpu_shares_set);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_TRUE(size.vcpus_defaulted);
  EXPECT_EQ(size.memory_mib, 640u);
  EXPECT_FALSE(size.memory_defaulted);
}

// BestEffort: kubelet sends shares 2, no quota, no memory.
TEST(SizingTest, BestEffort) {
  PodSize size = SizeFromAnnotations(Containerd("100000", "0", "2", "0"), kPolicy);
  EXPECT_EQ(size.source, SizeSource::kContainerdAnnotations);
  EXPECT_FALSE(size.cpu_limit_set);
  EXPECT_FALSE(size.cpu_unconstrained);
  EXPECT_TRUE(size.cpu_shares_set);  // 2 shares do not make a vCPU
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_TRUE(size.vcpus_defaulted);
  EXPECT_TRUE(size.memory_defaulted);
  EXPECT_TRUE(size.warnings.empty());
}

// "0 means not set": a real pause spec with every value 0.
TEST(SizingTest, ZeroMeansNotSet) {
  PodSize size = SizeFromAnnotations(Containerd("0", "0", "0", "0"), kPolicy);
  EXPECT_EQ(size.source, SizeSource::kContainerdAnnotations);
  EXPECT_FALSE(size.cpu_limit_set || size.cpu_unconstrained || size.cpu_shares_set ||
               size.memory_limit_set);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_TRUE(size.warnings.empty());
}

TEST(SizingTest, UnparsableValuesAreNotSetWithWarnings) {
  PodSize size = SizeFromAnnotations(Containerd(" 100000", "abc", "", "1.5e9"), kPolicy);
  EXPECT_EQ(size.workload, CpuMemory{});
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  ASSERT_EQ(size.warnings.size(), 4u);
  EXPECT_NE(size.warnings[1].find(kSandboxCpuQuota), std::string::npos) << size.warnings[1];
  // Out of int64 range and trailing garbage too.
  size = SizeFromAnnotations(Containerd("100000", "99999999999999999999", "2x", "+5"), kPolicy);
  EXPECT_EQ(size.warnings.size(), 3u);
  EXPECT_FALSE(size.cpu_limit_set);
}

TEST(SizingTest, NegativeValuesAreNotSet) {
  PodSize size = SizeFromAnnotations(Containerd("-100000", "50000", "-2", "-1"), kPolicy);
  EXPECT_FALSE(size.memory_limit_set);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_FALSE(size.cpu_shares_set);
  // A negative period is dropped; the quota then gets the kernel default.
  EXPECT_EQ(size.workload.cpu_period, 100000);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.warnings.size(), 4u);
  // Quotas below -1 read as unlimited.
  size = SizeFromAnnotations(Containerd("100000", "-5", "2048", "0"), kPolicy);
  EXPECT_TRUE(size.cpu_unconstrained);
  EXPECT_EQ(size.workload.cpu_quota, -1);
  EXPECT_EQ(size.vcpus, 3u);
}

TEST(SizingTest, QuotaWithoutPeriodUsesTheKernelDefault) {
  PodSize size = SizeFromAnnotations(Containerd("0", "300000", "0", "0"), kPolicy);
  EXPECT_TRUE(size.cpu_limit_set);
  EXPECT_EQ(size.vcpus, 4u);  // ceil(0.25 + 3)
  EXPECT_EQ(size.warnings.size(), 1u);
}

TEST(SizingTest, PartialAnnotations) {
  PodSize size = SizeFromAnnotations({{std::string(kSandboxMemory), "1073741824"}}, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kContainerdAnnotations);
  EXPECT_EQ(size.memory_mib, 1168u);  // 1024 + 112 + ceil(30.72), even
  EXPECT_EQ(size.vcpus, 1u);
}

TEST(SizingTest, MemoryRounding) {
  // 100 MiB + 1 byte is 101 MiB; + 112 + ceil(3.03) = 217, rounded up to 218.
  const std::string bytes = std::to_string(100 * kMiB + 1);
  EXPECT_EQ(SizeFromAnnotations(Containerd("0", "0", "0", bytes), kPolicy).memory_mib, 218u);
  SizingPolicy odd;
  odd.round_memory_to_even = false;
  EXPECT_EQ(SizeFromAnnotations(Containerd("0", "0", "0", bytes), odd).memory_mib, 217u);
  // The total is rounded, not only the workload part: 63 + 100 = 163 -> 164.
  odd.overhead_memory_mib = 63;
  odd.overhead_memory_percent = 0;
  odd.round_memory_to_even = true;
  EXPECT_EQ(
      SizeFromAnnotations(Containerd("0", "0", "0", std::to_string(100 * kMiB)), odd).memory_mib,
      164u);
}

TEST(SizingTest, MinimumMemory) {
  // 16 MiB + 64 = 80 MiB, below the 128 MiB floor.
  SizingPolicy policy;
  policy.overhead_memory_mib = 64;
  policy.overhead_memory_percent = 0;
  PodSize size = SizeFromAnnotations(Containerd("0", "0", "0", std::to_string(16 * kMiB)), policy);
  EXPECT_EQ(size.memory_mib, 128u);
  // With the defaults 16 + 112 + 1 = 129 is above it: 130.
  EXPECT_EQ(
      SizeFromAnnotations(Containerd("0", "0", "0", std::to_string(16 * kMiB)), kPolicy).memory_mib,
      130u);
}

// The guest's memory overhead: the fixed part plus a share of the limit,
// rounded up; garbage shares count as 0 and huge ones saturate.
TEST(SizingTest, GuestMemoryOverheadHasAFixedAndAProportionalPart) {
  EXPECT_EQ(GuestMemoryOverheadMib(0, kPolicy), 112u);
  EXPECT_EQ(GuestMemoryOverheadMib(128, kPolicy), 116u);  // ceil(3.84)
  EXPECT_EQ(GuestMemoryOverheadMib(512, kPolicy), 128u);  // ceil(15.36)
  EXPECT_EQ(GuestMemoryOverheadMib(2048, kPolicy), 174u);
  SizingPolicy policy;
  policy.overhead_memory_percent = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(GuestMemoryOverheadMib(2048, policy), 112u);
  policy.overhead_memory_percent = -5;
  EXPECT_EQ(GuestMemoryOverheadMib(2048, policy), 112u);
  policy.overhead_memory_percent = 0.5;
  EXPECT_EQ(GuestMemoryOverheadMib(1000, policy), 117u);
  policy.overhead_memory_percent = 1e300;
  EXPECT_EQ(GuestMemoryOverheadMib(std::numeric_limits<uint64_t>::max(), policy),
            std::numeric_limits<uint64_t>::max());
}

TEST(SizingTest, MaxVcpus) {
  SizingPolicy policy;
  policy.max_vcpus = 8;
  PodSize size = SizeFromAnnotations(Containerd("100000", "6400000", "0", "0"), policy);
  EXPECT_EQ(size.vcpus, 8u);
  EXPECT_EQ(size.warnings.size(), 1u);
}

TEST(SizingTest, HugeValuesSaturate) {
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  PodSize size = SizeFromAnnotations(Containerd("1", max, "0", max), kPolicy);
  EXPECT_EQ(size.vcpus, std::numeric_limits<uint32_t>::max());
  // ceil((2^63-1) / MiB) = 8796093022208, + 112 + ceil(3% of it), even.
  EXPECT_EQ(size.memory_mib, 9059975812988u);
  EXPECT_EQ(size.pod_cpu_millis, std::numeric_limits<uint64_t>::max());
}

// The containers' share of a VM is the largest workload whose total (it plus
// its guest overhead) fits the VM, for every VM size, the huge ones included.
TEST(SizingTest, ContainerMemoryIsTheLargestWorkloadThatFits) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  auto total = [&](uint64_t w) {  // saturating, as sizing's arithmetic is
    return std::min<unsigned __int128>(
        static_cast<unsigned __int128>(w) + GuestMemoryOverheadMib(w, kPolicy), max);
  };
  for (uint64_t vm_mib : {uint64_t{0}, uint64_t{111}, uint64_t{112}, uint64_t{113}, uint64_t{376},
                          uint64_t{2222}, uint64_t{1} << 40, max / 2, max - 1, max}) {
    SCOPED_TRACE(vm_mib);
    const uint64_t w = ContainerMemoryMib(vm_mib, kPolicy);
    if (w > 0) {
      EXPECT_LE(total(w), vm_mib);
    }
    if (w < vm_mib) {
      EXPECT_GT(total(w + 1), vm_mib);
    }
  }
  EXPECT_EQ(ContainerMemoryMib(376, kPolicy), 256u);
}

TEST(SizingTest, PolicyGarbageIsHarmless) {
  SizingPolicy policy;
  policy.overhead_vcpus = -3;
  policy.default_vcpus = 0;
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "50000", "0", "0"), policy).vcpus, 1u);
  EXPECT_EQ(SizeFromAnnotations({}, policy).vcpus, 1u);
  policy.overhead_vcpus = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(SizeFromAnnotations(Containerd("100000", "150000", "0", "0"), policy).vcpus, 2u);
}

TEST(SizingTest, NoInformationUsesDefaults) {
  PodSize size = SizeFromAnnotations({{"unrelated", "1"}}, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kNone);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_TRUE(size.warnings.empty());
  EXPECT_EQ(size.ToString(),
            "1 vCPU, 2048 MiB (no sizing information; default vCPUs; default memory)");
}

// --- CRI-O ---

constexpr char kCrioResources[] =
    R"({"cpu_period":100000,"cpu_quota":150000,"cpu_shares":1536,"memory_limit_in_bytes":1073741824})";
constexpr char kCrioOverhead[] =
    R"({"cpu_period":100000,"cpu_quota":25000,"cpu_shares":256,"memory_limit_in_bytes":167772160})";

TEST(SizingTest, CrioOverheadIsCarried) {
  PodSize size = SizeFromAnnotations({{std::string(crio::kPodLinuxResourcesV2), kCrioResources},
                                      {std::string(crio::kPodLinuxOverheadV2), kCrioOverhead}},
                                     kPolicy);
  EXPECT_EQ(size.source, SizeSource::kCrioAnnotations);
  EXPECT_EQ(size.workload, (CpuMemory{100000, 150000, 1536, 1024 * kMiB}));
  ASSERT_TRUE(size.has_overhead);
  EXPECT_EQ(size.overhead, (CpuMemory{100000, 25000, 256, 160 * kMiB}));
  // The pod's cgroup gets workload + overhead...
  EXPECT_EQ(size.pod_cpu_millis, 1750u);
  EXPECT_EQ(size.pod_memory_bytes, static_cast<uint64_t>(1184 * kMiB));
  // ... the VM gets workload + hull's own guest overhead.
  EXPECT_EQ(size.vcpus, 2u);
  EXPECT_EQ(size.memory_mib, 1168u);
  EXPECT_TRUE(size.warnings.empty());
}

TEST(SizingTest, CrioOldKeys) {
  PodSize size = SizeFromAnnotations({{std::string(crio::kPodLinuxResources), kCrioResources},
                                      {std::string(crio::kPodLinuxOverhead), "null"}},
                                     kPolicy);
  EXPECT_EQ(size.source, SizeSource::kCrioAnnotations);
  EXPECT_FALSE(size.has_overhead);
  EXPECT_EQ(size.vcpus, 2u);
  EXPECT_EQ(size.memory_mib, 1168u);
}

TEST(SizingTest, CrioNewKeyWins) {
  PodSize size = SizeFromAnnotations(
      {{std::string(crio::kPodLinuxResources), kCrioResources},
       {std::string(crio::kPodLinuxResourcesV2), R"({"cpu_period":100000,"cpu_quota":400000})"}},
      kPolicy);
  EXPECT_EQ(size.vcpus, 5u);
  EXPECT_FALSE(size.memory_limit_set);
  // An unparsable new key falls back to the old one, with a warning.
  size = SizeFromAnnotations({{std::string(crio::kPodLinuxResources), kCrioResources},
                              {std::string(crio::kPodLinuxResourcesV2), "{not json"}},
                             kPolicy);
  EXPECT_EQ(size.vcpus, 2u);
  EXPECT_EQ(size.warnings.size(), 1u);
}

TEST(SizingTest, CrioNullAndGarbage) {
  PodSize size = SizeFromAnnotations({{std::string(crio::kPodLinuxResourcesV2), "null"}}, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kCrioAnnotations);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_TRUE(size.warnings.empty());

  size = SizeFromAnnotations({{std::string(crio::kPodLinuxResourcesV2), "[1,2]"}}, kPolicy);
  EXPECT_EQ(size.memory_mib, 2048u);
  EXPECT_EQ(size.warnings.size(), 1u);

  size = SizeFromAnnotations(
      {{std::string(crio::kPodLinuxResourcesV2),
        R"({"cpu_quota":"x","cpu_period":1.5,"memory_limit_in_bytes":true,"cpu_shares":{}})"}},
      kPolicy);
  EXPECT_EQ(size.workload, CpuMemory{});
  EXPECT_EQ(size.warnings.size(), 4u);
}

// protojson's spelling (lowerCamelCase, int64 as strings) is read too.
TEST(SizingTest, CrioProtojsonSpelling) {
  PodSize size = SizeFromAnnotations(
      {{std::string(crio::kPodLinuxResourcesV2),
        R"({"cpuPeriod":"100000","cpuQuota":"250000","memoryLimitInBytes":"536870912"})"}},
      kPolicy);
  EXPECT_EQ(size.vcpus, 3u);
  EXPECT_EQ(size.memory_mib, 640u);
}

TEST(SizingTest, ContainerdKeysWinOverCrio) {
  Annotations annotations = Containerd("100000", "50000", "512", "268435456");
  annotations[std::string(crio::kPodLinuxResourcesV2)] = kCrioResources;
  annotations[std::string(crio::kPodLinuxOverheadV2)] = kCrioOverhead;
  PodSize size = SizeFromAnnotations(annotations, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kContainerdAnnotations);
  // containerd drops the overhead: nothing carries it on this path.
  EXPECT_FALSE(size.has_overhead);
  EXPECT_EQ(size.pod_memory_bytes, static_cast<uint64_t>(256 * kMiB));
  EXPECT_EQ(size.memory_mib, 376u);
}

TEST(SizingTest, SmallRuntimeClassOverheadIsFlagged) {
  PodSize size = SizeFromAnnotations(
      {{std::string(crio::kPodLinuxResourcesV2), kCrioResources},
       {std::string(crio::kPodLinuxOverheadV2), R"({"memory_limit_in_bytes":33554432})"}},
      kPolicy);
  ASSERT_EQ(size.warnings.size(), 1u);
  EXPECT_NE(size.warnings[0].find("32 MiB"), std::string::npos) << size.warnings[0];
}

// --- PodSandboxConfig ---

TEST(SizingTest, PodSandboxConfigResourcesAndOverhead) {
  ::runtime::v1::PodSandboxConfig config;
  auto* resources = config.mutable_linux()->mutable_resources();
  resources->set_cpu_period(100000);
  resources->set_cpu_quota(250000);
  resources->set_cpu_shares(2560);
  resources->set_memory_limit_in_bytes(2048 * kMiB);
  auto* overhead = config.mutable_linux()->mutable_overhead();
  overhead->set_cpu_period(100000);
  overhead->set_cpu_quota(25000);
  overhead->set_memory_limit_in_bytes(320 * kMiB);
  PodSize size = SizeFromPodSandboxConfig(config, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kPodSandboxConfig);
  EXPECT_TRUE(size.has_overhead);
  EXPECT_EQ(size.vcpus, 3u);
  EXPECT_EQ(size.memory_mib, 2222u);  // 2048 + 112 + ceil(61.44)
  EXPECT_EQ(size.pod_cpu_millis, 2750u);
  EXPECT_EQ(size.pod_memory_bytes, static_cast<uint64_t>(2368 * kMiB));
  EXPECT_EQ(CpuMemoryFromProto(*resources), (CpuMemory{100000, 250000, 2560, 2048 * kMiB}));
}

TEST(SizingTest, PodSandboxConfigWithoutResources) {
  ::runtime::v1::PodSandboxConfig config;
  PodSize size = SizeFromPodSandboxConfig(config, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kNone);
  EXPECT_EQ(size.vcpus, 1u);
  EXPECT_EQ(size.memory_mib, 2048u);
  config.mutable_linux()->set_cgroup_parent("/kubepods");
  EXPECT_EQ(SizeFromPodSandboxConfig(config, kPolicy).source, SizeSource::kNone);
  // Present but all zero: BestEffort through the proto.
  config.mutable_linux()->mutable_resources()->set_cpu_shares(2);
  size = SizeFromPodSandboxConfig(config, kPolicy);
  EXPECT_EQ(size.source, SizeSource::kPodSandboxConfig);
  EXPECT_FALSE(size.has_overhead);
  EXPECT_TRUE(size.vcpus_defaulted);
  EXPECT_TRUE(size.memory_defaulted);
}

// The same pod through the three sources gives the same VM.
TEST(SizingTest, SourcesAgree) {
  ::runtime::v1::PodSandboxConfig config;
  auto* resources = config.mutable_linux()->mutable_resources();
  resources->set_cpu_period(100000);
  resources->set_cpu_quota(150000);
  resources->set_cpu_shares(1536);
  resources->set_memory_limit_in_bytes(1024 * kMiB);
  PodSize from_proto = SizeFromPodSandboxConfig(config, kPolicy);
  PodSize from_containerd =
      SizeFromAnnotations(Containerd("100000", "150000", "1536", "1073741824"), kPolicy);
  PodSize from_crio =
      SizeFromAnnotations({{std::string(crio::kPodLinuxResourcesV2), kCrioResources}}, kPolicy);
  EXPECT_EQ(from_proto.vcpus, from_containerd.vcpus);
  EXPECT_EQ(from_proto.vcpus, from_crio.vcpus);
  EXPECT_EQ(from_proto.memory_mib, from_containerd.memory_mib);
  EXPECT_EQ(from_proto.memory_mib, from_crio.memory_mib);
}

}  // namespace
}  // namespace hull::oci
