// The cgroup v2 metrics reader, against a fake unified tree with the
// kernel's file formats. Every field the reader maps is checked.
#include <gtest/gtest.h>

#include <limits>

#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using testing::FakeHost;

constexpr pid_t kV2Pid = 777;
constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();

void AddUnifiedHost(FakeHost& host) {
  host.AddUnified();
  host.SetProcCgroup(kV2Pid, "0::/kubepods/pod1/ctr\n");
}

std::string At(const char* file) {
  return std::string("kubepods/pod1/ctr/") + file;
}

// memory.stat keys in the proto's field order, with values 3001, 3002, ...
constexpr const char* kMemoryStatKeys[] = {
    "anon",
    "file",
    "kernel_stack",
    "slab",
    "sock",
    "shmem",
    "file_mapped",
    "file_dirty",
    "file_writeback",
    "anon_thp",
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
    "slab_reclaimable",
    "slab_unreclaimable",
    "pgfault",
    "pgmajfault",
    "workingset_refault",
    "workingset_activate",
    "workingset_nodereclaim",
    "pgrefill",
    "pgscan",
    "pgsteal",
    "pgactivate",
    "pgdeactivate",
    "pglazyfree",
    "pglazyfreed",
    "thp_fault_alloc",
    "thp_collapse_alloc",
    "workingset_refault_anon",
    "workingset_refault_file",
    "workingset_activate_anon",
    "workingset_activate_file",
};

void WriteFullV2Tree(FakeHost& host) {
  host.Write(At("pids.current"), "12\n");
  host.Write(At("pids.max"), "max\n");
  host.Write(At("cpu.stat"),
             "usage_usec 1001\nuser_usec 1002\nsystem_usec 1003\n"
             "core_sched.force_idle_usec 0\nnr_periods 1004\nnr_throttled 1005\n"
             "throttled_usec 1006\nnr_bursts 1007\nburst_usec 1008\n");
  host.Write(At("cpu.pressure"),
             "some avg10=1.50 avg60=2.25 avg300=3.00 total=4000\n"
             "full avg10=0.50 avg60=0.25 avg300=0.00 total=1000\n");
  std::string stat;
  uint64_t value = 3001;
  for (const char* key : kMemoryStatKeys)
    stat += std::string(key) + " " + std::to_string(value++) + "\n";
  stat += "zswap 0\nsec_pagetables 0\n";  // keys the proto has no field for
  host.Write(At("memory.stat"), stat);
  host.Write(At("memory.current"), "4001\n");
  host.Write(At("memory.max"), "max\n");
  host.Write(At("memory.swap.current"), "4003\n");
  host.Write(At("memory.swap.max"), "4004\n");
  host.Write(At("memory.peak"), "4005\n");
  host.Write(At("memory.swap.peak"), "4006\n");
  host.Write(At("memory.pressure"),
             "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\n"
             "full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n");
  host.Write(At("memory.events"), "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n");
  host.Write(At("io.stat"),
             "254:0 rbytes=100 wbytes=200 rios=3 wios=4 dbytes=0 dios=0\n"
             "8:16 rbytes=5 wbytes=6 rios=7 wios=8 dbytes=9 dios=10\n");
  host.Write(At("io.pressure"), "some avg10=0.10 avg60=0.20 avg300=0.30 total=21\n");
  host.Write(At("hugetlb.2MB.current"), "4194304\n");
  host.Write(At("hugetlb.2MB.max"), "max\n");
  host.Write(At("hugetlb.2MB.events"), "max 7\n");
  host.Write(At("hugetlb.2MB.rsvd.current"), "0\n");  // not a page size
  host.Write(At("hugetlb.1GB.current"), "0\n");
  host.Write(At("hugetlb.1GB.max"), "1073741824\n");
  host.Write(At("rdma.current"), "mlx5_1 hca_handle=3 hca_object=30\n");
  host.Write(At("rdma.max"), "mlx5_1 hca_handle=max hca_object=max\n");
}

v2::Metrics ReadV2Metrics(const FakeHost& host) {
  auto m = Manager::ForPid(kV2Pid, host.roots());
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  if (!m) return {};
  auto metrics = m->MetricsV2();
  EXPECT_TRUE(metrics.has_value()) << metrics.error().ToString();
  return metrics.value_or(v2::Metrics());
}

TEST(MetricsV2Test, PidsAndCpu) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_TRUE(m.has_pids());
  EXPECT_EQ(m.pids().current(), 12u);
  EXPECT_EQ(m.pids().limit(), kMax64);
  ASSERT_TRUE(m.has_cpu());
  const v2::CPUStat& cpu = m.cpu();
  EXPECT_EQ(cpu.usage_usec(), 1001u);
  EXPECT_EQ(cpu.user_usec(), 1002u);
  EXPECT_EQ(cpu.system_usec(), 1003u);
  EXPECT_EQ(cpu.nr_periods(), 1004u);
  EXPECT_EQ(cpu.nr_throttled(), 1005u);
  EXPECT_EQ(cpu.throttled_usec(), 1006u);
  EXPECT_EQ(cpu.nr_bursts(), 1007u);
  EXPECT_EQ(cpu.burst_usec(), 1008u);
  EXPECT_DOUBLE_EQ(cpu.psi().some().avg10(), 1.5);
  EXPECT_DOUBLE_EQ(cpu.psi().some().avg60(), 2.25);
  EXPECT_DOUBLE_EQ(cpu.psi().some().avg300(), 3.0);
  EXPECT_EQ(cpu.psi().some().total(), 4000u);
  EXPECT_DOUBLE_EQ(cpu.psi().full().avg10(), 0.5);
  EXPECT_DOUBLE_EQ(cpu.psi().full().avg60(), 0.25);
  EXPECT_EQ(cpu.psi().full().total(), 1000u);
}

TEST(MetricsV2Test, Memory) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_TRUE(m.has_memory());
  const v2::MemoryStat& s = m.memory();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const uint64_t got[] = {
      s.anon(),
      s.file(),
      s.kernel_stack(),
      s.slab(),
      s.sock(),
      s.shmem(),
      s.file_mapped(),
      s.file_dirty(),
      s.file_writeback(),
      s.anon_thp(),
      s.inactive_anon(),
      s.active_anon(),
      s.inactive_file(),
      s.active_file(),
      s.unevictable(),
      s.slab_reclaimable(),
      s.slab_unreclaimable(),
      s.pgfault(),
      s.pgmajfault(),
      s.workingset_refault(),
      s.workingset_activate(),
      s.workingset_nodereclaim(),
      s.pgrefill(),
      s.pgscan(),
      s.pgsteal(),
      s.pgactivate(),
      s.pgdeactivate(),
      s.pglazyfree(),
      s.pglazyfreed(),
      s.thp_fault_alloc(),
      s.thp_collapse_alloc(),
      s.workingset_refault_anon(),
      s.workingset_refault_file(),
      s.workingset_activate_anon(),
      s.workingset_activate_file(),
  };
#pragma GCC diagnostic pop
  static_assert(std::size(got) == std::size(kMemoryStatKeys));
  for (size_t i = 0; i < std::size(got); ++i) {
    EXPECT_EQ(got[i], 3001 + i) << kMemoryStatKeys[i];
  }
  EXPECT_EQ(s.usage(), 4001u);
  EXPECT_EQ(s.usage_limit(), kMax64);
  EXPECT_EQ(s.swap_usage(), 4003u);
  EXPECT_EQ(s.swap_limit(), 4004u);
  EXPECT_EQ(s.max_usage(), 4005u);
  EXPECT_EQ(s.swap_max_usage(), 4006u);
  EXPECT_EQ(s.psi().some().total(), 11u);
  EXPECT_EQ(s.psi().full().total(), 12u);
}

TEST(MetricsV2Test, MemoryEvents) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_TRUE(m.has_memory_events());
  EXPECT_EQ(m.memory_events().low(), 1u);
  EXPECT_EQ(m.memory_events().high(), 2u);
  EXPECT_EQ(m.memory_events().max(), 3u);
  EXPECT_EQ(m.memory_events().oom(), 4u);
  EXPECT_EQ(m.memory_events().oom_kill(), 5u);
  EXPECT_EQ(m.memory_events().oom_group_kill(), 6u);
}

TEST(MetricsV2Test, Io) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_TRUE(m.has_io());
  ASSERT_EQ(m.io().usage_size(), 2);
  const v2::IOEntry& first = m.io().usage(0);
  EXPECT_EQ(first.major(), 254u);
  EXPECT_EQ(first.minor(), 0u);
  EXPECT_EQ(first.rbytes(), 100u);
  EXPECT_EQ(first.wbytes(), 200u);
  EXPECT_EQ(first.rios(), 3u);
  EXPECT_EQ(first.wios(), 4u);
  EXPECT_EQ(m.io().usage(1).major(), 8u);
  EXPECT_EQ(m.io().usage(1).minor(), 16u);
  EXPECT_EQ(m.io().usage(1).wios(), 8u);
  EXPECT_DOUBLE_EQ(m.io().psi().some().avg300(), 0.3);
  EXPECT_EQ(m.io().psi().some().total(), 21u);
  EXPECT_FALSE(m.io().psi().has_full());
}

TEST(MetricsV2Test, Hugetlb) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_EQ(m.hugetlb_size(), 2);
  EXPECT_EQ(m.hugetlb(0).pagesize(), "2MB");
  EXPECT_EQ(m.hugetlb(0).current(), 4194304u);
  EXPECT_EQ(m.hugetlb(0).max(), kMax64);
  EXPECT_EQ(m.hugetlb(0).failcnt(), 7u);
  EXPECT_EQ(m.hugetlb(1).pagesize(), "1GB");
  EXPECT_EQ(m.hugetlb(1).current(), 0u);
  EXPECT_EQ(m.hugetlb(1).max(), 1073741824u);
  EXPECT_EQ(m.hugetlb(1).failcnt(), 0u);  // no events file
}

TEST(MetricsV2Test, Rdma) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  v2::Metrics m = ReadV2Metrics(host);
  ASSERT_EQ(m.rdma().current_size(), 1);
  EXPECT_EQ(m.rdma().current(0).device(), "mlx5_1");
  EXPECT_EQ(m.rdma().current(0).hca_handles(), 3u);
  EXPECT_EQ(m.rdma().current(0).hca_objects(), 30u);
  ASSERT_EQ(m.rdma().limit_size(), 1);
  EXPECT_EQ(m.rdma().limit(0).hca_handles(), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(m.rdma().limit(0).hca_objects(), std::numeric_limits<uint32_t>::max());
}

TEST(MetricsV2Test, MissingFilesAreSkipped) {
  FakeHost host;
  AddUnifiedHost(host);
  host.MakeCgroup(At(""));
  host.Write(At("memory.current"), "8192\n");
  v2::Metrics m = ReadV2Metrics(host);
  EXPECT_FALSE(m.has_pids());
  EXPECT_FALSE(m.has_cpu());
  EXPECT_FALSE(m.has_io());
  EXPECT_FALSE(m.has_memory_events());
  EXPECT_FALSE(m.has_rdma());
  EXPECT_EQ(m.hugetlb_size(), 0);
  ASSERT_TRUE(m.has_memory());
  EXPECT_EQ(m.memory().usage(), 8192u);
  EXPECT_EQ(m.memory().anon(), 0u);
  EXPECT_FALSE(m.memory().has_psi());
}

TEST(MetricsV2Test, MissingCgroupIsNotFound) {
  FakeHost host;
  AddUnifiedHost(host);
  auto any = MetricsForPid(kV2Pid, host.roots());
  ASSERT_FALSE(any.has_value());
  EXPECT_EQ(any.error().code(), Code::kNotFound);
}

TEST(MetricsV2Test, AnyCarriesTheV2TypeUrl) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  auto any = MetricsForPid(kV2Pid, host.roots());
  ASSERT_TRUE(any.has_value()) << any.error().ToString();
  EXPECT_EQ(any->type_url(), "io.containerd.cgroups.v2.Metrics");
  v2::Metrics decoded;
  ASSERT_TRUE(decoded.ParseFromString(any->value()));
  EXPECT_EQ(decoded.SerializeAsString(), ReadV2Metrics(host).SerializeAsString());
  EXPECT_EQ(decoded.memory().usage(), 4001u);
}

TEST(MetricsV2Test, V1MetricsOnAUnifiedHostIsFailedPrecondition) {
  FakeHost host;
  AddUnifiedHost(host);
  auto m = Manager::ForPid(kV2Pid, host.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->MetricsV1();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_EQ(metrics.error().code(), Code::kFailedPrecondition);
}

TEST(OomKillCountV2Test, ReadsMemoryEvents) {
  FakeHost host;
  AddUnifiedHost(host);
  WriteFullV2Tree(host);
  auto count = OomKillCount(kV2Pid, host.roots());
  ASSERT_TRUE(count.has_value()) << count.error().ToString();
  EXPECT_EQ(*count, 5u);
}

}  // namespace
}  // namespace hull::cgroups
