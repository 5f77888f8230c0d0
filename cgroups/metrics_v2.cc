// cgroup v2 metrics: everything io.containerd.cgroups.v2.Metrics has a file
// for, read from the one directory of the cgroup. Field meanings follow
// containerd's cgroup2 stats ("max" limits read as UINT64_MAX).
#include <array>
#include <charconv>
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
using internal::NestedLine;
using internal::StatFiles;

namespace {

template <typename Message>
using Setter = void (Message::*)(uint64_t);

template <typename Message>
struct KeyField {
  std::string_view key;
  Setter<Message> set;
};

// Sets every field of `out` whose key is in `keyed`.
template <typename Message, size_t N>
void ApplyKeyed(const FlatKeyed& keyed, const std::array<KeyField<Message>, N>& fields,
                Message& out) {
  for (const auto& [key, value] : keyed) {
    for (const KeyField<Message>& f : fields) {
      if (f.key == key) (out.*f.set)(value);
    }
  }
}

// "some avg10=0.12 avg60=0.05 avg300=0.01 total=12345" and the "full" line.
std::optional<v2::PSIStats> ReadPsi(StatFiles& files, std::string_view name) {
  auto lines = files.Nested(name);
  if (!lines) return std::nullopt;
  auto number = [](std::optional<std::string_view> text) {
    double value = 0;
    if (text) std::from_chars(text->data(), text->data() + text->size(), value);
    return value;
  };
  v2::PSIStats psi;
  for (const NestedLine& line : *lines) {
    v2::PSIData* data = nullptr;
    if (line.name == "some") data = psi.mutable_some();
    if (line.name == "full") data = psi.mutable_full();
    if (data == nullptr) continue;
    data->set_avg10(number(line.Get("avg10")));
    data->set_avg60(number(line.Get("avg60")));
    data->set_avg300(number(line.Get("avg300")));
    if (auto total = line.Get("total")) data->set_total(internal::ParseUint(*total).value_or(0));
  }
  return psi;
}

void ReadPids(StatFiles& files, v2::Metrics& out) {
  auto current = files.Uint("pids.current");
  auto max = files.Uint("pids.max");
  if (!current && !max) return;
  out.mutable_pids()->set_current(current.value_or(0));
  out.mutable_pids()->set_limit(max.value_or(0));
}

constexpr auto kCpuStatKeys = std::to_array<KeyField<v2::CPUStat>>({
    {"usage_usec", &v2::CPUStat::set_usage_usec},
    {"user_usec", &v2::CPUStat::set_user_usec},
    {"system_usec", &v2::CPUStat::set_system_usec},
    {"nr_periods", &v2::CPUStat::set_nr_periods},
    {"nr_throttled", &v2::CPUStat::set_nr_throttled},
    {"throttled_usec", &v2::CPUStat::set_throttled_usec},
    {"nr_bursts", &v2::CPUStat::set_nr_bursts},
    {"burst_usec", &v2::CPUStat::set_burst_usec},
});

void ReadCpu(StatFiles& files, v2::Metrics& out) {
  auto stat = files.Keyed("cpu.stat");
  auto psi = ReadPsi(files, "cpu.pressure");
  if (!stat && !psi) return;
  if (stat) ApplyKeyed(*stat, kCpuStatKeys, *out.mutable_cpu());
  if (psi) *out.mutable_cpu()->mutable_psi() = std::move(*psi);
}

// workingset_refault/workingset_activate are deprecated in the proto (Linux
// 5.9 split them into _anon/_file), but kernels before 5.9 report only them,
// so they are still filled when present.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr auto kMemoryStatKeys = std::to_array<KeyField<v2::MemoryStat>>({
    {"anon", &v2::MemoryStat::set_anon},
    {"file", &v2::MemoryStat::set_file},
    {"kernel_stack", &v2::MemoryStat::set_kernel_stack},
    {"slab", &v2::MemoryStat::set_slab},
    {"sock", &v2::MemoryStat::set_sock},
    {"shmem", &v2::MemoryStat::set_shmem},
    {"file_mapped", &v2::MemoryStat::set_file_mapped},
    {"file_dirty", &v2::MemoryStat::set_file_dirty},
    {"file_writeback", &v2::MemoryStat::set_file_writeback},
    {"anon_thp", &v2::MemoryStat::set_anon_thp},
    {"inactive_anon", &v2::MemoryStat::set_inactive_anon},
    {"active_anon", &v2::MemoryStat::set_active_anon},
    {"inactive_file", &v2::MemoryStat::set_inactive_file},
    {"active_file", &v2::MemoryStat::set_active_file},
    {"unevictable", &v2::MemoryStat::set_unevictable},
    {"slab_reclaimable", &v2::MemoryStat::set_slab_reclaimable},
    {"slab_unreclaimable", &v2::MemoryStat::set_slab_unreclaimable},
    {"pgfault", &v2::MemoryStat::set_pgfault},
    {"pgmajfault", &v2::MemoryStat::set_pgmajfault},
    {"workingset_refault", &v2::MemoryStat::set_workingset_refault},
    {"workingset_activate", &v2::MemoryStat::set_workingset_activate},
    {"workingset_nodereclaim", &v2::MemoryStat::set_workingset_nodereclaim},
    {"pgrefill", &v2::MemoryStat::set_pgrefill},
    {"pgscan", &v2::MemoryStat::set_pgscan},
    {"pgsteal", &v2::MemoryStat::set_pgsteal},
    {"pgactivate", &v2::MemoryStat::set_pgactivate},
    {"pgdeactivate", &v2::MemoryStat::set_pgdeactivate},
    {"pglazyfree", &v2::MemoryStat::set_pglazyfree},
    {"pglazyfreed", &v2::MemoryStat::set_pglazyfreed},
    {"thp_fault_alloc", &v2::MemoryStat::set_thp_fault_alloc},
    {"thp_collapse_alloc", &v2::MemoryStat::set_thp_collapse_alloc},
    {"workingset_refault_anon", &v2::MemoryStat::set_workingset_refault_anon},
    {"workingset_refault_file", &v2::MemoryStat::set_workingset_refault_file},
    {"workingset_activate_anon", &v2::MemoryStat::set_workingset_activate_anon},
    {"workingset_activate_file", &v2::MemoryStat::set_workingset_activate_file},
});
#pragma GCC diagnostic pop

// Single-value memory files next to memory.stat.
constexpr auto kMemoryFiles = std::to_array<KeyField<v2::MemoryStat>>({
    {"memory.current", &v2::MemoryStat::set_usage},
    {"memory.max", &v2::MemoryStat::set_usage_limit},
    {"memory.swap.current", &v2::MemoryStat::set_swap_usage},
    {"memory.swap.max", &v2::MemoryStat::set_swap_limit},
    {"memory.peak", &v2::MemoryStat::set_max_usage},
    {"memory.swap.peak", &v2::MemoryStat::set_swap_max_usage},
});

void ReadMemory(StatFiles& files, v2::Metrics& out) {
  v2::MemoryStat memory;
  bool any = false;
  if (auto stat = files.Keyed("memory.stat")) {
    ApplyKeyed(*stat, kMemoryStatKeys, memory);
    any = true;
  }
  for (const KeyField<v2::MemoryStat>& f : kMemoryFiles) {
    if (auto value = files.Uint(f.key)) {
      (memory.*f.set)(*value);
      any = true;
    }
  }
  if (auto psi = ReadPsi(files, "memory.pressure")) {
    *memory.mutable_psi() = std::move(*psi);
    any = true;
  }
  if (any) *out.mutable_memory() = std::move(memory);
}

constexpr auto kMemoryEventKeys = std::to_array<KeyField<v2::MemoryEvents>>({
    {"low", &v2::MemoryEvents::set_low},
    {"high", &v2::MemoryEvents::set_high},
    {"max", &v2::MemoryEvents::set_max},
    {"oom", &v2::MemoryEvents::set_oom},
    {"oom_kill", &v2::MemoryEvents::set_oom_kill},
    {"oom_group_kill", &v2::MemoryEvents::set_oom_group_kill},
});

void ReadMemoryEvents(StatFiles& files, v2::Metrics& out) {
  if (auto events = files.Keyed("memory.events")) {
    ApplyKeyed(*events, kMemoryEventKeys, *out.mutable_memory_events());
  }
}

// io.stat: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0".
void ReadIo(StatFiles& files, v2::Metrics& out) {
  auto lines = files.Nested("io.stat");
  auto psi = ReadPsi(files, "io.pressure");
  if (!lines && !psi) return;
  v2::IOStat* io = out.mutable_io();
  if (lines) {
    for (const NestedLine& line : *lines) {
      auto device = internal::ParseDevice(line.name);
      if (!device) continue;
      v2::IOEntry* entry = io->add_usage();
      entry->set_major(device->first);
      entry->set_minor(device->second);
      auto get = [&](std::string_view key) {
        auto text = line.Get(key);
        return text ? internal::ParseUint(*text).value_or(0) : 0;
      };
      entry->set_rbytes(get("rbytes"));
      entry->set_wbytes(get("wbytes"));
      entry->set_rios(get("rios"));
      entry->set_wios(get("wios"));
    }
  }
  if (psi) *io->mutable_psi() = std::move(*psi);
}

// hugetlb.<size>.{current,max,events}; failcnt is the "max" count of the
// events file (allocations that failed on the limit), as v1's failcnt.
void ReadHugetlb(StatFiles& files, v2::Metrics& out) {
  for (const std::string& size : internal::HugePageSizes(files, "current")) {
    const std::string p = "hugetlb." + size + ".";
    v2::HugeTlbStat* stat = out.add_hugetlb();
    stat->set_pagesize(size);
    stat->set_current(files.Uint(p + "current").value_or(0));
    stat->set_max(files.Uint(p + "max").value_or(0));
    if (auto events = files.Keyed(p + "events"))
      stat->set_failcnt(Lookup(*events, "max").value_or(0));
  }
}

void ReadRdmaV2(StatFiles& files, v2::Metrics& out) {
  v2::RdmaStat rdma;
  if (internal::ReadRdma(files, rdma)) *out.mutable_rdma() = std::move(rdma);
}

}  // namespace

Result<v2::Metrics> Manager::MetricsV2() const {
  if (mode_ != Mode::kUnified) {
    return FailedPreconditionError("cgroup v2 metrics asked on a " + std::string(ModeName(mode_)) +
                                   " host");
  }
  HULL_ASSIGN_OR_RETURN(Location loc, Find(""));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  StatFiles files(dir);
  v2::Metrics metrics;
  ReadPids(files, metrics);
  ReadCpu(files, metrics);
  ReadMemory(files, metrics);
  ReadMemoryEvents(files, metrics);
  ReadIo(files, metrics);
  ReadHugetlb(files, metrics);
  ReadRdmaV2(files, metrics);
  HULL_RETURN_IF_ERROR(files.status());
  return metrics;
}

}  // namespace hull::cgroups
