// The cgroup v1 metrics reader, against a fake tree with the kernel's file
// formats. Every field the reader maps is checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <limits>

#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using testing::FakeHost;

constexpr pid_t kV1Pid = 4321;
constexpr const char* kCtr = "kubepods/pod1/ctr";

// The CI host's layout (FakeHost::AddHybridLayout), the container's process
// in kCtr.
void AddHybridHost(FakeHost& host) {
  host.AddHybridLayout();
  host.SetProcCgroup(kV1Pid,
                     "13:rdma:/kubepods/pod1/ctr\n"
                     "12:hugetlb:/kubepods/pod1/ctr\n"
                     "9:pids:/kubepods/pod1/ctr\n"
                     "8:blkio:/kubepods/pod1/ctr\n"
                     "4:memory:/kubepods/pod1/ctr\n"
                     "2:cpuacct:/kubepods/pod1/ctr\n"
                     "1:cpu:/kubepods/pod1/ctr\n"
                     "0::/\n");
}

std::string At(const char* controller, const char* file) {
  return std::string(controller) + "/" + kCtr + "/" + file;
}

void WriteFullV1Tree(FakeHost& host) {
  host.Write(At("pids", "pids.current"), "7\n");
  host.Write(At("pids", "pids.max"), "100\n");

  host.Write(At("cpu", "cpu.stat"),
             "nr_periods 11\nnr_throttled 3\nthrottled_time 123456\nnr_bursts 0\nburst_time 0\n");
  host.Write(At("cpuacct", "cpuacct.usage"), "5000000000\n");
  host.Write(At("cpuacct", "cpuacct.usage_percpu"), "3000000000 2000000000 \n");
  host.Write(At("cpuacct", "cpuacct.stat"), "user 300\nsystem 150\n");

  host.Write(At("memory", "memory.stat"),
             "cache 1001\nrss 1002\nrss_huge 1003\nshmem 77\nmapped_file 1004\ndirty 1005\n"
             "writeback 1006\nworkingset_refault_anon 0\nswap 0\npgpgin 1007\npgpgout 1008\n"
             "pgfault 1009\npgmajfault 1010\ninactive_anon 1011\nactive_anon 1012\n"
             "inactive_file 1013\nactive_file 1014\nunevictable 1015\n"
             "hierarchical_memory_limit 1016\nhierarchical_memsw_limit 1017\n"
             "total_cache 1018\ntotal_rss 1019\ntotal_rss_huge 1020\ntotal_shmem 77\n"
             "total_mapped_file 1021\ntotal_dirty 1022\ntotal_writeback 1023\n"
             "total_pgpgin 1024\ntotal_pgpgout 1025\ntotal_pgfault 1026\n"
             "total_pgmajfault 1027\ntotal_inactive_anon 1028\ntotal_active_anon 1029\n"
             "total_inactive_file 1030\ntotal_active_file 1031\ntotal_unevictable 1032\n");
  const char* prefixes[] = {"memory.", "memory.memsw.", "memory.kmem.", "memory.kmem.tcp."};
  for (int i = 0; i < 4; ++i) {
    std::string p = prefixes[i];
    uint64_t base = 2000 + 10 * static_cast<uint64_t>(i);
    host.Write(At("memory", (p + "usage_in_bytes").c_str()), std::to_string(base + 1) + "\n");
    host.Write(At("memory", (p + "limit_in_bytes").c_str()), std::to_string(base + 2) + "\n");
    host.Write(At("memory", (p + "max_usage_in_bytes").c_str()), std::to_string(base + 3) + "\n");
    host.Write(At("memory", (p + "failcnt").c_str()), std::to_string(base + 4) + "\n");
  }
  host.Write(At("memory", "memory.oom_control"), "oom_kill_disable 1\nunder_oom 1\noom_kill 2\n");

  host.WriteProc(
      "partitions",
      "major minor  #blocks  name\n\n 254        0  268435456 vda\n   8   16  1000 sdb\n");
  // Kernels with the proportional-weight counters filled in.
  host.Write(At("blkio", "blkio.io_service_bytes_recursive"),
             "254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 12288\n254:0 Async 0\n"
             "254:0 Discard 0\n254:0 Total 12288\nTotal 12288\n");
  host.Write(At("blkio", "blkio.io_serviced_recursive"), "254:0 Read 1\n254:0 Write 2\nTotal 3\n");
  host.Write(At("blkio", "blkio.io_queued_recursive"), "254:0 Read 3\nTotal 3\n");
  host.Write(At("blkio", "blkio.io_service_time_recursive"), "254:0 Read 4\nTotal 4\n");
  host.Write(At("blkio", "blkio.io_wait_time_recursive"), "254:0 Read 5\nTotal 5\n");
  host.Write(At("blkio", "blkio.io_merged_recursive"), "254:0 Read 6\nTotal 6\n");
  host.Write(At("blkio", "blkio.time_recursive"), "254:0 7\n");
  host.Write(At("blkio", "blkio.sectors_recursive"), "8:16 8\n");
  // Present too, but not read when the counters above have entries.
  host.Write(At("blkio", "blkio.throttle.io_service_bytes_recursive"), "254:0 Read 999\n");

  host.Write(At("hugetlb", "hugetlb.1GB.usage_in_bytes"), "1073741824\n");
  host.Write(At("hugetlb", "hugetlb.1GB.max_usage_in_bytes"), "2147483648\n");
  host.Write(At("hugetlb", "hugetlb.1GB.failcnt"), "1\n");
  host.Write(At("hugetlb", "hugetlb.1GB.limit_in_bytes"), "9223372036854771712\n");
  host.Write(At("hugetlb", "hugetlb.2MB.usage_in_bytes"), "4194304\n");
  host.Write(At("hugetlb", "hugetlb.2MB.max_usage_in_bytes"), "6291456\n");
  host.Write(At("hugetlb", "hugetlb.2MB.failcnt"), "0\n");
  host.Write(At("hugetlb", "hugetlb.2MB.rsvd.usage_in_bytes"), "0\n");  // not a page size

  host.Write(At("rdma", "rdma.current"), "mlx4_0 hca_handle=2 hca_object=2000\n");
  host.Write(At("rdma", "rdma.max"), "mlx4_0 hca_handle=max hca_object=10\n");
}

v1::Metrics ReadV1Metrics(const FakeHost& host) {
  auto m = Manager::ForPid(kV1Pid, host.roots());
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  if (!m) return {};
  auto metrics = m->MetricsV1();
  EXPECT_TRUE(metrics.has_value()) << metrics.error().ToString();
  return metrics.value_or(v1::Metrics());
}

TEST(MetricsV1Test, Pids) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_pids());
  EXPECT_EQ(m.pids().current(), 7u);
  EXPECT_EQ(m.pids().limit(), 100u);

  host.Write(At("pids", "pids.max"), "max\n");
  EXPECT_EQ(ReadV1Metrics(host).pids().limit(), 0u);  // no limit, as containerd reports it
}

TEST(MetricsV1Test, Cpu) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_cpu());
  const v1::CPUUsage& usage = m.cpu().usage();
  EXPECT_EQ(usage.total(), 5000000000u);
  ASSERT_EQ(usage.per_cpu_size(), 2);
  EXPECT_EQ(usage.per_cpu(0), 3000000000u);
  EXPECT_EQ(usage.per_cpu(1), 2000000000u);
  const uint64_t ns_per_tick = 1000000000u / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  EXPECT_EQ(usage.user(), 300 * ns_per_tick);
  EXPECT_EQ(usage.kernel(), 150 * ns_per_tick);
  EXPECT_EQ(m.cpu().throttling().periods(), 11u);
  EXPECT_EQ(m.cpu().throttling().throttled_periods(), 3u);
  EXPECT_EQ(m.cpu().throttling().throttled_time(), 123456u);
}

TEST(MetricsV1Test, CoMountedCpuAndCpuacct) {
  FakeHost host;
  host.AddV1("cpu,cpuacct", "cpu,cpuacct");
  host.SetProcCgroup(kV1Pid, "3:cpu,cpuacct:/ctr\n0::/\n");
  host.Write("cpu,cpuacct/ctr/cpu.stat", "nr_periods 1\nnr_throttled 1\nthrottled_time 5\n");
  host.Write("cpu,cpuacct/ctr/cpuacct.usage", "99\n");
  v1::Metrics m = ReadV1Metrics(host);
  EXPECT_EQ(m.cpu().usage().total(), 99u);
  EXPECT_EQ(m.cpu().throttling().throttled_time(), 5u);
}

TEST(MetricsV1Test, Memory) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_memory());
  const v1::MemoryStat& s = m.memory();
  EXPECT_EQ(s.cache(), 1001u);
  EXPECT_EQ(s.rss(), 1002u);
  EXPECT_EQ(s.rss_huge(), 1003u);
  EXPECT_EQ(s.mapped_file(), 1004u);
  EXPECT_EQ(s.dirty(), 1005u);
  EXPECT_EQ(s.writeback(), 1006u);
  EXPECT_EQ(s.pg_pg_in(), 1007u);
  EXPECT_EQ(s.pg_pg_out(), 1008u);
  EXPECT_EQ(s.pg_fault(), 1009u);
  EXPECT_EQ(s.pg_maj_fault(), 1010u);
  EXPECT_EQ(s.inactive_anon(), 1011u);
  EXPECT_EQ(s.active_anon(), 1012u);
  EXPECT_EQ(s.inactive_file(), 1013u);
  EXPECT_EQ(s.active_file(), 1014u);
  EXPECT_EQ(s.unevictable(), 1015u);
  EXPECT_EQ(s.hierarchical_memory_limit(), 1016u);
  EXPECT_EQ(s.hierarchical_swap_limit(), 1017u);
  EXPECT_EQ(s.total_cache(), 1018u);
  EXPECT_EQ(s.total_rss(), 1019u);
  EXPECT_EQ(s.total_rss_huge(), 1020u);
  EXPECT_EQ(s.total_mapped_file(), 1021u);
  EXPECT_EQ(s.total_dirty(), 1022u);
  EXPECT_EQ(s.total_writeback(), 1023u);
  EXPECT_EQ(s.total_pg_pg_in(), 1024u);
  EXPECT_EQ(s.total_pg_pg_out(), 1025u);
  EXPECT_EQ(s.total_pg_fault(), 1026u);
  EXPECT_EQ(s.total_pg_maj_fault(), 1027u);
  EXPECT_EQ(s.total_inactive_anon(), 1028u);
  EXPECT_EQ(s.total_active_anon(), 1029u);
  EXPECT_EQ(s.total_inactive_file(), 1030u);
  EXPECT_EQ(s.total_active_file(), 1031u);
  EXPECT_EQ(s.total_unevictable(), 1032u);

  const v1::MemoryEntry* entries[] = {&s.usage(), &s.swap(), &s.kernel(), &s.kernel_tcp()};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    uint64_t base = 2000 + 10 * static_cast<uint64_t>(i);
    EXPECT_EQ(entries[i]->usage(), base + 1);
    EXPECT_EQ(entries[i]->limit(), base + 2);
    EXPECT_EQ(entries[i]->max(), base + 3);
    EXPECT_EQ(entries[i]->failcnt(), base + 4);
  }

  ASSERT_TRUE(m.has_memory_oom_control());
  EXPECT_EQ(m.memory_oom_control().oom_kill_disable(), 1u);
  EXPECT_EQ(m.memory_oom_control().under_oom(), 1u);
  EXPECT_EQ(m.memory_oom_control().oom_kill(), 2u);
}

TEST(MetricsV1Test, BlkioRecursiveCounters) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_blkio());
  const v1::BlkIOStat& b = m.blkio();
  ASSERT_EQ(b.io_service_bytes_recursive_size(), 6);  // the bare "Total" line is skipped
  const v1::BlkIOEntry& read = b.io_service_bytes_recursive(0);
  EXPECT_EQ(read.op(), "Read");
  EXPECT_EQ(read.major(), 254u);
  EXPECT_EQ(read.minor(), 0u);
  EXPECT_EQ(read.device(), "/dev/vda");
  EXPECT_EQ(read.value(), 4096u);
  EXPECT_EQ(b.io_service_bytes_recursive(5).op(), "Total");
  EXPECT_EQ(b.io_service_bytes_recursive(5).value(), 12288u);
  ASSERT_EQ(b.io_serviced_recursive_size(), 2);
  EXPECT_EQ(b.io_serviced_recursive(1).value(), 2u);
  ASSERT_EQ(b.io_queued_recursive_size(), 1);
  EXPECT_EQ(b.io_queued_recursive(0).value(), 3u);
  ASSERT_EQ(b.io_service_time_recursive_size(), 1);
  EXPECT_EQ(b.io_service_time_recursive(0).value(), 4u);
  ASSERT_EQ(b.io_wait_time_recursive_size(), 1);
  EXPECT_EQ(b.io_wait_time_recursive(0).value(), 5u);
  ASSERT_EQ(b.io_merged_recursive_size(), 1);
  EXPECT_EQ(b.io_merged_recursive(0).value(), 6u);
  ASSERT_EQ(b.io_time_recursive_size(), 1);
  EXPECT_EQ(b.io_time_recursive(0).op(), "");
  EXPECT_EQ(b.io_time_recursive(0).value(), 7u);
  ASSERT_EQ(b.sectors_recursive_size(), 1);
  EXPECT_EQ(b.sectors_recursive(0).device(), "/dev/sdb");
  EXPECT_EQ(b.sectors_recursive(0).value(), 8u);
}

TEST(MetricsV1Test, BlkioFallsBackToThrottleCounters) {
  FakeHost host;
  AddHybridHost(host);
  host.WriteProc("partitions", "major minor  #blocks  name\n\n 254        0  268435456 vda\n");
  // blk-mq kernels: the files exist but stay empty.
  host.Write(At("blkio", "blkio.io_service_bytes_recursive"), "Total 0\n");
  host.Write(At("blkio", "blkio.io_serviced_recursive"), "Total 0\n");
  host.Write(At("blkio", "blkio.throttle.io_service_bytes_recursive"),
             "254:0 Read 4096\n254:0 Write 512\nTotal 4608\n");
  host.Write(At("blkio", "blkio.throttle.io_serviced_recursive"), "254:0 Read 3\nTotal 3\n");
  host.Write(At("blkio", "blkio.throttle.io_service_bytes"), "254:0 Read 1\n");  // not used
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_blkio());
  ASSERT_EQ(m.blkio().io_service_bytes_recursive_size(), 2);
  EXPECT_EQ(m.blkio().io_service_bytes_recursive(0).value(), 4096u);
  EXPECT_EQ(m.blkio().io_service_bytes_recursive(0).device(), "/dev/vda");
  EXPECT_EQ(m.blkio().io_service_bytes_recursive(1).op(), "Write");
  ASSERT_EQ(m.blkio().io_serviced_recursive_size(), 1);
  EXPECT_EQ(m.blkio().io_serviced_recursive(0).value(), 3u);
  EXPECT_EQ(m.blkio().io_queued_recursive_size(), 0);
}

TEST(MetricsV1Test, BlkioOldKernelThrottleFiles) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("blkio", "blkio.throttle.io_service_bytes"), "8:0 Read 10\nTotal 10\n");
  host.Write(At("blkio", "blkio.throttle.io_serviced"), "8:0 Read 1\nTotal 1\n");
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_EQ(m.blkio().io_service_bytes_recursive_size(), 1);
  EXPECT_EQ(m.blkio().io_service_bytes_recursive(0).value(), 10u);
  EXPECT_EQ(m.blkio().io_service_bytes_recursive(0).device(), "");  // no /proc/partitions
  ASSERT_EQ(m.blkio().io_serviced_recursive_size(), 1);
}

TEST(MetricsV1Test, MalformedBlkioIsAnError) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("blkio", "blkio.throttle.io_service_bytes"), "8:0 Read lots\n");
  auto m = Manager::ForPid(kV1Pid, host.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->MetricsV1();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_NE(metrics.error().message().find("blkio.throttle.io_service_bytes"), std::string::npos);
}

TEST(MetricsV1Test, Hugetlb) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_EQ(m.hugetlb_size(), 2);  // smallest page size first; rsvd files ignored
  EXPECT_EQ(m.hugetlb(0).pagesize(), "2MB");
  EXPECT_EQ(m.hugetlb(0).usage(), 4194304u);
  EXPECT_EQ(m.hugetlb(0).max(), 6291456u);
  EXPECT_EQ(m.hugetlb(0).failcnt(), 0u);
  EXPECT_EQ(m.hugetlb(1).pagesize(), "1GB");
  EXPECT_EQ(m.hugetlb(1).usage(), 1073741824u);
  EXPECT_EQ(m.hugetlb(1).max(), 2147483648u);
  EXPECT_EQ(m.hugetlb(1).failcnt(), 1u);
}

TEST(MetricsV1Test, Rdma) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  v1::Metrics m = ReadV1Metrics(host);
  ASSERT_TRUE(m.has_rdma());
  ASSERT_EQ(m.rdma().current_size(), 1);
  EXPECT_EQ(m.rdma().current(0).device(), "mlx4_0");
  EXPECT_EQ(m.rdma().current(0).hca_handles(), 2u);
  EXPECT_EQ(m.rdma().current(0).hca_objects(), 2000u);
  ASSERT_EQ(m.rdma().limit_size(), 1);
  EXPECT_EQ(m.rdma().limit(0).hca_handles(), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(m.rdma().limit(0).hca_objects(), 10u);
}

TEST(MetricsV1Test, MissingFilesAreSkipped) {
  FakeHost host;
  AddHybridHost(host);
  for (const char* c : {"cpu", "cpuacct", "memory", "blkio", "pids", "hugetlb", "rdma"}) {
    host.MakeCgroup(std::string(c) + "/" + kCtr);
  }
  host.Write(At("memory", "memory.usage_in_bytes"), "4096\n");  // only this one
  v1::Metrics m = ReadV1Metrics(host);
  EXPECT_FALSE(m.has_pids());
  EXPECT_FALSE(m.has_cpu());
  EXPECT_FALSE(m.has_blkio());
  EXPECT_FALSE(m.has_rdma());
  EXPECT_FALSE(m.has_memory_oom_control());
  EXPECT_EQ(m.hugetlb_size(), 0);
  ASSERT_TRUE(m.has_memory());
  EXPECT_EQ(m.memory().usage().usage(), 4096u);
  EXPECT_FALSE(m.memory().has_swap());
  EXPECT_FALSE(m.memory().has_kernel());
}

TEST(MetricsV1Test, SomeControllerDirectoriesMissing) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("memory", "memory.usage_in_bytes"), "4096\n");  // only the memory cgroup exists
  v1::Metrics m = ReadV1Metrics(host);
  EXPECT_EQ(m.memory().usage().usage(), 4096u);
  EXPECT_FALSE(m.has_cpu());
}

TEST(MetricsV1Test, MissingCgroupIsNotFound) {
  FakeHost host;
  AddHybridHost(host);  // the pid's directories were never created
  auto m = Manager::ForPid(kV1Pid, host.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->Metrics();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_EQ(metrics.error().code(), Code::kNotFound);
}

TEST(MetricsV1Test, MissingPidIsNotFound) {
  FakeHost host;
  AddHybridHost(host);
  auto any = MetricsForPid(kV1Pid + 1, host.roots());
  ASSERT_FALSE(any.has_value());
  EXPECT_EQ(any.error().code(), Code::kNotFound);
}

TEST(MetricsV1Test, MalformedSingleValueIsAnError) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("pids", "pids.current"), "lots\n");
  auto m = Manager::ForPid(kV1Pid, host.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->MetricsV1();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_NE(metrics.error().message().find("pids.current"), std::string::npos);
}

TEST(MetricsV1Test, AnyCarriesTheV1TypeUrl) {
  FakeHost host;
  AddHybridHost(host);
  WriteFullV1Tree(host);
  auto any = MetricsForPid(kV1Pid, host.roots());
  ASSERT_TRUE(any.has_value()) << any.error().ToString();
  EXPECT_EQ(any->type_url(), "io.containerd.cgroups.v1.Metrics");
  v1::Metrics decoded;
  ASSERT_TRUE(decoded.ParseFromString(any->value()));
  EXPECT_EQ(decoded.SerializeAsString(), ReadV1Metrics(host).SerializeAsString());
  EXPECT_EQ(decoded.memory().cache(), 1001u);
}

TEST(MetricsV1Test, V2MetricsOnAV1HostIsFailedPrecondition) {
  FakeHost host;
  AddHybridHost(host);
  auto m = Manager::ForPid(kV1Pid, host.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->MetricsV2();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_EQ(metrics.error().code(), Code::kFailedPrecondition);
}

TEST(OomKillCountV1Test, ReadsOomControl) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("memory", "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  auto count = OomKillCount(kV1Pid, host.roots());
  ASSERT_TRUE(count.has_value()) << count.error().ToString();
  EXPECT_EQ(*count, 3u);
}

TEST(OomKillCountV1Test, OldKernelWithoutCounterIsUnimplemented) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("memory", "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\n");
  auto count = OomKillCount(kV1Pid, host.roots());
  ASSERT_FALSE(count.has_value());
  EXPECT_EQ(count.error().code(), Code::kUnimplemented);
}

TEST(OomKillCountV1Test, ByPathAfterTheProcessIsGone) {
  FakeHost host;
  AddHybridHost(host);
  host.Write(At("memory", "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  auto m = Manager::ForPath("/kubepods/pod1/ctr", host.roots());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->OomKillCount().value_or(0), 1u);
}

}  // namespace
}  // namespace hull::cgroups
