// cgroup v1 metrics: one reader per controller, each filling its part of
// io.containerd.cgroups.v1.Metrics from that controller's directory. The
// field meanings follow containerd's cgroup1 stats, which CRI and the metrics
// plugin expect.
#include <unistd.h>

#include <array>
#include <optional>
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/metrics_internal.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {

using internal::CgroupDir;
using internal::FlatKeyed;
using internal::Lookup;
using internal::StatFiles;

namespace {

constexpr uint64_t kNanosPerSecond = 1'000'000'000;

void ReadPids(StatFiles& files, const Roots&, v1::Metrics& out) {
  auto current = files.Uint("pids.current");
  auto max = files.Uint("pids.max", 0);  // "max": no limit, reported as 0
  if (!current && !max) return;
  out.mutable_pids()->set_current(current.value_or(0));
  out.mutable_pids()->set_limit(max.value_or(0));
}

// The cpu controller: CFS throttling.
void ReadCpu(StatFiles& files, const Roots&, v1::Metrics& out) {
  std::optional<FlatKeyed> stat = files.Keyed("cpu.stat");
  if (!stat) return;
  v1::Throttle* t = out.mutable_cpu()->mutable_throttling();
  t->set_periods(Lookup(*stat, "nr_periods").value_or(0));
  t->set_throttled_periods(Lookup(*stat, "nr_throttled").value_or(0));
  t->set_throttled_time(Lookup(*stat, "throttled_time").value_or(0));
}

// The cpuacct controller: usage in nanoseconds.
void ReadCpuacct(StatFiles& files, const Roots&, v1::Metrics& out) {
  auto total = files.Uint("cpuacct.usage");
  auto percpu = files.Text("cpuacct.usage_percpu");
  auto stat = files.Keyed("cpuacct.stat");
  if (!total && !percpu && !stat) return;
  v1::CPUUsage* usage = out.mutable_cpu()->mutable_usage();
  usage->set_total(total.value_or(0));
  if (percpu) {
    for (std::string_view field : internal::Fields(*percpu)) {
      auto v = internal::ParseUint(field);
      if (!v) {
        files.Fail(InternalError("parse " + (files.dir().path() / "cpuacct.usage_percpu").string() +
                                 ": not a number: \"" + std::string(field) + "\""));
        return;
      }
      usage->add_per_cpu(*v);
    }
  }
  if (stat) {
    // cpuacct.stat counts USER_HZ ticks.
    long hz = ::sysconf(_SC_CLK_TCK);
    uint64_t ns_per_tick = kNanosPerSecond / static_cast<uint64_t>(hz > 0 ? hz : 100);
    usage->set_user(Lookup(*stat, "user").value_or(0) * ns_per_tick);
    usage->set_kernel(Lookup(*stat, "system").value_or(0) * ns_per_tick);
  }
}

using MemorySetter = void (v1::MemoryStat::*)(uint64_t);
struct MemoryKey {
  std::string_view key;
  MemorySetter set;
};
constexpr auto kMemoryStatKeys = std::to_array<MemoryKey>({
    {"cache", &v1::MemoryStat::set_cache},
    {"rss", &v1::MemoryStat::set_rss},
    {"rss_huge", &v1::MemoryStat::set_rss_huge},
    {"mapped_file", &v1::MemoryStat::set_mapped_file},
    {"dirty", &v1::MemoryStat::set_dirty},
    {"writeback", &v1::MemoryStat::set_writeback},
    {"pgpgin", &v1::MemoryStat::set_pg_pg_in},
    {"pgpgout", &v1::MemoryStat::set_pg_pg_out},
    {"pgfault", &v1::MemoryStat::set_pg_fault},
    {"pgmajfault", &v1::MemoryStat::set_pg_maj_fault},
    {"inactive_anon", &v1::MemoryStat::set_inactive_anon},
    {"active_anon", &v1::MemoryStat::set_active_anon},
    {"inactive_file", &v1::MemoryStat::set_inactive_file},
    {"active_file", &v1::MemoryStat::set_active_file},
    {"unevictable", &v1::MemoryStat::set_unevictable},
    {"hierarchical_memory_limit", &v1::MemoryStat::set_hierarchical_memory_limit},
    {"hierarchical_memsw_limit", &v1::MemoryStat::set_hierarchical_swap_limit},
    {"total_cache", &v1::MemoryStat::set_total_cache},
    {"total_rss", &v1::MemoryStat::set_total_rss},
    {"total_rss_huge", &v1::MemoryStat::set_total_rss_huge},
    {"total_mapped_file", &v1::MemoryStat::set_total_mapped_file},
    {"total_dirty", &v1::MemoryStat::set_total_dirty},
    {"total_writeback", &v1::MemoryStat::set_total_writeback},
    {"total_pgpgin", &v1::MemoryStat::set_total_pg_pg_in},
    {"total_pgpgout", &v1::MemoryStat::set_total_pg_pg_out},
    {"total_pgfault", &v1::MemoryStat::set_total_pg_fault},
    {"total_pgmajfault", &v1::MemoryStat::set_total_pg_maj_fault},
    {"total_inactive_anon", &v1::MemoryStat::set_total_inactive_anon},
    {"total_active_anon", &v1::MemoryStat::set_total_active_anon},
    {"total_inactive_file", &v1::MemoryStat::set_total_inactive_file},
    {"total_active_file", &v1::MemoryStat::set_total_active_file},
    {"total_unevictable", &v1::MemoryStat::set_total_unevictable},
});

// memory.<prefix>{usage_in_bytes,limit_in_bytes,max_usage_in_bytes,failcnt}.
std::optional<v1::MemoryEntry> ReadMemoryEntry(StatFiles& files, std::string_view prefix) {
  const std::string p = "memory." + std::string(prefix);
  auto usage = files.Uint(p + "usage_in_bytes");
  auto limit = files.Uint(p + "limit_in_bytes");
  auto max = files.Uint(p + "max_usage_in_bytes");
  auto failcnt = files.Uint(p + "failcnt");
  if (!usage && !limit && !max && !failcnt) return std::nullopt;
  v1::MemoryEntry entry;
  entry.set_usage(usage.value_or(0));
  entry.set_limit(limit.value_or(0));
  entry.set_max(max.value_or(0));
  entry.set_failcnt(failcnt.value_or(0));
  return entry;
}

void ReadMemory(StatFiles& files, const Roots&, v1::Metrics& out) {
  v1::MemoryStat memory;
  bool any = false;
  if (auto stat = files.Keyed("memory.stat")) {
    any = true;
    for (const auto& [key, value] : *stat) {
      for (const MemoryKey& k : kMemoryStatKeys) {
        if (k.key == key) (memory.*k.set)(value);
      }
    }
  }
  using EntryField = v1::MemoryEntry* (v1::MemoryStat::*)();
  constexpr std::pair<std::string_view, EntryField> kEntries[] = {
      {"", &v1::MemoryStat::mutable_usage},
      {"memsw.", &v1::MemoryStat::mutable_swap},
      {"kmem.", &v1::MemoryStat::mutable_kernel},
      {"kmem.tcp.", &v1::MemoryStat::mutable_kernel_tcp},
  };
  for (const auto& [prefix, field] : kEntries) {
    if (auto entry = ReadMemoryEntry(files, prefix)) {
      *(memory.*field)() = std::move(*entry);
      any = true;
    }
  }
  if (any) *out.mutable_memory() = std::move(memory);

  if (auto oom = files.Keyed("memory.oom_control")) {
    v1::MemoryOomControl* c = out.mutable_memory_oom_control();
    c->set_oom_kill_disable(Lookup(*oom, "oom_kill_disable").value_or(0));
    c->set_under_oom(Lookup(*oom, "under_oom").value_or(0));
    c->set_oom_kill(Lookup(*oom, "oom_kill").value_or(0));
  }
}

using BlkioAdder = v1::BlkIOEntry* (v1::BlkIOStat::*)();
struct BlkioFile {
  std::string_view name;
  BlkioAdder add;
};

// The proportional-weight (CFQ/BFQ-era) counters. Many kernels have the files
// but leave them empty (blk-mq schedulers); then the throttle counters below
// are what there is.
constexpr auto kBlkioRecursive = std::to_array<BlkioFile>({
    {"blkio.io_service_bytes_recursive", &v1::BlkIOStat::add_io_service_bytes_recursive},
    {"blkio.io_serviced_recursive", &v1::BlkIOStat::add_io_serviced_recursive},
    {"blkio.io_queued_recursive", &v1::BlkIOStat::add_io_queued_recursive},
    {"blkio.io_service_time_recursive", &v1::BlkIOStat::add_io_service_time_recursive},
    {"blkio.io_wait_time_recursive", &v1::BlkIOStat::add_io_wait_time_recursive},
    {"blkio.io_merged_recursive", &v1::BlkIOStat::add_io_merged_recursive},
    {"blkio.time_recursive", &v1::BlkIOStat::add_io_time_recursive},
    {"blkio.sectors_recursive", &v1::BlkIOStat::add_sectors_recursive},
});
// Throttle counters, recursive (Linux 4.19+) or this cgroup only.
constexpr auto kBlkioThrottle = std::to_array<BlkioFile>({
    {"blkio.throttle.io_service_bytes_recursive", &v1::BlkIOStat::add_io_service_bytes_recursive},
    {"blkio.throttle.io_serviced_recursive", &v1::BlkIOStat::add_io_serviced_recursive},
});
constexpr auto kBlkioThrottleLocal = std::to_array<BlkioFile>({
    {"blkio.throttle.io_service_bytes", &v1::BlkIOStat::add_io_service_bytes_recursive},
    {"blkio.throttle.io_serviced", &v1::BlkIOStat::add_io_serviced_recursive},
});

// Reads one family of blkio files into `out`; how many entries, or nullopt
// if none of the files exist.
template <size_t N>
std::optional<size_t> ReadBlkioFiles(StatFiles& files, const std::array<BlkioFile, N>& family,
                                     const std::vector<internal::Partition>& partitions,
                                     v1::BlkIOStat& out) {
  std::optional<size_t> count;
  for (const BlkioFile& file : family) {
    auto text = files.Text(file.name);
    if (!text) continue;
    auto lines = internal::ParseBlkio(*text);
    if (!lines) {
      files.Fail(lines.error().WithContext((files.dir().path() / file.name).string()));
      return count;
    }
    count = count.value_or(0) + lines->size();
    for (const internal::BlkioLine& line : *lines) {
      v1::BlkIOEntry* entry = (out.*file.add)();
      entry->set_op(line.op);
      entry->set_major(line.major);
      entry->set_minor(line.minor);
      entry->set_value(line.value);
      for (const internal::Partition& p : partitions) {
        if (p.major == line.major && p.minor == line.minor) entry->set_device(p.device);
      }
    }
  }
  return count;
}

void ReadBlkio(StatFiles& files, const Roots& roots, v1::Metrics& out) {
  // Device names are a nicety: without /proc/partitions they stay empty.
  std::vector<internal::Partition> partitions;
  if (auto text = internal::ReadFileAt(roots.proc / "partitions")) {
    partitions = internal::ParsePartitions(*text);
  }
  v1::BlkIOStat blkio;
  std::optional<size_t> n = ReadBlkioFiles(files, kBlkioRecursive, partitions, blkio);
  if (n.value_or(0) == 0) {
    blkio.Clear();
    std::optional<size_t> throttled = ReadBlkioFiles(files, kBlkioThrottle, partitions, blkio);
    if (!throttled) throttled = ReadBlkioFiles(files, kBlkioThrottleLocal, partitions, blkio);
    if (throttled) n = throttled;
  }
  if (n) *out.mutable_blkio() = std::move(blkio);
}

void ReadHugetlb(StatFiles& files, const Roots&, v1::Metrics& out) {
  for (const std::string& size : internal::HugePageSizes(files, "usage_in_bytes")) {
    const std::string p = "hugetlb." + size + ".";
    v1::HugetlbStat* stat = out.add_hugetlb();
    stat->set_pagesize(size);
    stat->set_usage(files.Uint(p + "usage_in_bytes").value_or(0));
    stat->set_max(files.Uint(p + "max_usage_in_bytes").value_or(0));
    stat->set_failcnt(files.Uint(p + "failcnt").value_or(0));
  }
}

void ReadRdmaV1(StatFiles& files, const Roots&, v1::Metrics& out) {
  v1::RdmaStat rdma;
  if (internal::ReadRdma(files, rdma)) *out.mutable_rdma() = std::move(rdma);
}

struct ControllerReader {
  std::string_view controller;
  void (*read)(StatFiles&, const Roots&, v1::Metrics&);
};
constexpr auto kReaders = std::to_array<ControllerReader>({
    {"pids", &ReadPids},
    {"cpu", &ReadCpu},
    {"cpuacct", &ReadCpuacct},
    {"memory", &ReadMemory},
    {"blkio", &ReadBlkio},
    {"hugetlb", &ReadHugetlb},
    {"rdma", &ReadRdmaV1},
});

}  // namespace

Result<v1::Metrics> Manager::MetricsV1() const {
  if (mode_ == Mode::kUnified) {
    return FailedPreconditionError("cgroup v1 metrics asked on a unified (v2) host");
  }
  v1::Metrics metrics;
  bool found = false;
  std::string missing;  // a directory that was not there, for the NotFound message
  for (const ControllerReader& reader : kReaders) {
    Result<Location> loc = Find(reader.controller);
    if (!loc) continue;
    Result<CgroupDir> dir = CgroupDir::Open(loc->mount_point, loc->relative);
    if (!dir) {
      if (dir.error().code() != Code::kNotFound) return dir.error();
      missing = dir.error().message();
      continue;
    }
    found = true;
    StatFiles files(*dir);
    reader.read(files, roots_, metrics);
    HULL_RETURN_IF_ERROR(files.status());
  }
  if (!found) {
    return NotFoundError("cgroup not found" + (missing.empty() ? "" : ": " + missing));
  }
  return metrics;
}

}  // namespace hull::cgroups
