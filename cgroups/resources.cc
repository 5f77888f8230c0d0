// Resources -> the cgroup v2 files that carry them, and runc's conversions
// from the v1 scales OCI and CRI use.
#include <algorithm>
#include <string>

#include "cgroups/cgroups.h"
#include "cgroups/resources_internal.h"

namespace hull::cgroups {
namespace {

std::string Value(uint64_t v) {
  return v == kUnlimited ? "max" : std::to_string(v);
}

std::string Device(uint64_t major, uint64_t minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

// The controller a v2 interface file belongs to: "memory.max" -> "memory";
// "" for the core's own cgroup.* files.
std::string ControllerOf(std::string_view file) {
  std::string_view prefix = file.substr(0, file.find('.'));
  if (prefix == "cgroup") return "";
  return std::string(prefix);
}

}  // namespace

uint64_t CpuWeightFromShares(uint64_t shares) {
  if (shares == 0) return 0;
  shares = std::clamp<uint64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

uint64_t IoWeightFromBlkio(uint64_t blkio_weight) {
  if (blkio_weight == 0) return 0;
  blkio_weight = std::clamp<uint64_t>(blkio_weight, 10, 1000);
  return 1 + (blkio_weight - 10) * 9999 / 990;
}

Result<std::optional<uint64_t>> SwapMaxFromOci(int64_t swap, int64_t limit) {
  // As cgroup v1 did: an unlimited memory limit without a swap limit means
  // unlimited swap too.
  if (limit == -1 && swap == 0) return std::optional<uint64_t>(kUnlimited);
  if (swap == 0) return std::optional<uint64_t>();
  if (swap == -1) return std::optional<uint64_t>(kUnlimited);
  if (swap < 0) return InvalidArgumentError("memory.swap: invalid value " + std::to_string(swap));
  if (limit == 0 || limit == -1) {
    return InvalidArgumentError("memory.swap: a swap limit needs a memory limit");
  }
  if (limit < 0)
    return InvalidArgumentError("memory.limit: invalid value " + std::to_string(limit));
  if (swap < limit) {
    return InvalidArgumentError("memory.swap (memory+swap, " + std::to_string(swap) +
                                ") is below memory.limit (" + std::to_string(limit) + ")");
  }
  return std::optional<uint64_t>(static_cast<uint64_t>(swap - limit));
}

std::vector<std::string> Resources::Controllers() const {
  std::vector<std::string> out;
  auto add = [&](std::string name) {
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(std::move(name));
    }
  };
  if (cpu_weight || cpu_max || cpu_max_burst || cpu_idle) add("cpu");
  if (cpuset_cpus || cpuset_mems) add("cpuset");
  if (memory_min || memory_low || memory_high || memory_max || memory_swap_max) add("memory");
  if (pids_max) add("pids");
  if (blkio_weight || !blkio_weight_devices.empty() || !io_max.empty()) add("io");
  if (!hugetlb_max.empty()) add("hugetlb");
  if (!rdma_max.empty()) add("rdma");
  for (const auto& [file, value] : unified) add(ControllerOf(file));
  return out;
}

namespace internal {

std::vector<FileWrite> ResourceWrites(const Resources& r, bool has_bfq) {
  std::vector<FileWrite> out;
  auto add = [&](std::string file, std::string value) {
    out.push_back({std::move(file), std::move(value)});
  };
  // cpuset first: the other controllers do not depend on it, but a task
  // moved in later must find its CPUs and nodes set.
  if (r.cpuset_cpus) add("cpuset.cpus", *r.cpuset_cpus);
  if (r.cpuset_mems) add("cpuset.mems", *r.cpuset_mems);
  if (r.cpu_weight) add("cpu.weight", std::to_string(*r.cpu_weight));
  if (r.cpu_max) add("cpu.max", Value(r.cpu_max->quota) + " " + std::to_string(r.cpu_max->period));
  if (r.cpu_max_burst) add("cpu.max.burst", std::to_string(*r.cpu_max_burst));
  if (r.cpu_idle) add("cpu.idle", std::to_string(*r.cpu_idle));
  if (r.memory_min) add("memory.min", Value(*r.memory_min));
  if (r.memory_low) add("memory.low", Value(*r.memory_low));
  if (r.memory_high) add("memory.high", Value(*r.memory_high));
  if (r.memory_max) add("memory.max", Value(*r.memory_max));
  if (r.memory_swap_max) add("memory.swap.max", Value(*r.memory_swap_max));
  if (r.pids_max) add("pids.max", Value(*r.pids_max));
  // BFQ takes OCI's scale as is, per device too; io.weight has its own.
  if (has_bfq) {
    if (r.blkio_weight) add("io.bfq.weight", std::to_string(*r.blkio_weight));
    for (const IoDeviceWeight& d : r.blkio_weight_devices) {
      add("io.bfq.weight", Device(d.major, d.minor) + " " + std::to_string(d.weight));
    }
  } else {
    if (r.blkio_weight)
      add("io.weight", "default " + std::to_string(IoWeightFromBlkio(*r.blkio_weight)));
    for (const IoDeviceWeight& d : r.blkio_weight_devices) {
      add("io.weight",
          Device(d.major, d.minor) + " " + std::to_string(IoWeightFromBlkio(d.weight)));
    }
  }
  for (const IoMax& m : r.io_max) {
    add("io.max", Device(m.major, m.minor) + " " + m.key + "=" + Value(m.value));
  }
  for (const auto& [size, limit] : r.hugetlb_max) add("hugetlb." + size + ".max", Value(limit));
  for (const RdmaMax& m : r.rdma_max) {
    auto count = [](std::optional<uint32_t> v) { return v ? std::to_string(*v) : "max"; };
    add("rdma.max",
        m.device + " hca_handle=" + count(m.hca_handles) + " hca_object=" + count(m.hca_objects));
  }
  for (const auto& [file, value] : r.unified) add(file, value);
  return out;
}

}  // namespace internal
}  // namespace hull::cgroups
