#include "oci/sizing.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "cri/runtime/v1/api.pb.h"
#include "oci/annotations.h"

namespace hull::oci {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// The kernel's default CFS period, used when a quota comes without one.
constexpr int64_t kDefaultCfsPeriod = 100000;
// cgroup v1 shares per CPU.
constexpr int64_t kSharesPerCpu = 1024;

// Strict decimal int64: optional '-', digits, nothing else.
std::optional<int64_t> ParseInt64(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

uint64_t CeilDiv(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

// ceil(quota / period * 1000), exact. Both > 0.
uint64_t QuotaToMillis(int64_t quota, int64_t period) {
  unsigned __int128 millis = static_cast<unsigned __int128>(quota) * 1000;
  millis = millis / static_cast<uint64_t>(period) + (millis % static_cast<uint64_t>(period) != 0);
  return millis > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                       : static_cast<uint64_t>(millis);
}

// The policy's CPU overhead in millicores; NaN, negative and absurd values
// count as 0 or are clamped.
uint64_t OverheadMillis(double vcpus) {
  if (!(vcpus > 0)) return 0;
  if (vcpus > 1e6) return 1000000000;
  return static_cast<uint64_t>(std::llround(vcpus * 1000));
}

// Drops values that make no sense, explaining each in `warnings`. `what`
// names the input ("workload", "overhead").
CpuMemory Sanitize(const CpuMemory& in, std::string_view what, std::vector<std::string>& warnings) {
  CpuMemory out = in;
  auto warn = [&](std::string text) { warnings.push_back(std::string(what) + ": " + text); };
  if (out.cpu_period < 0) {
    warn("negative cpu period " + std::to_string(out.cpu_period) + " ignored");
    out.cpu_period = 0;
  }
  if (out.cpu_quota < -1) {
    warn("cpu quota " + std::to_string(out.cpu_quota) + " read as -1 (unlimited)");
    out.cpu_quota = -1;
  }
  if (out.cpu_quota > 0 && out.cpu_period == 0) {
    warn("cpu quota without a period: assuming the kernel default period 100000");
    out.cpu_period = kDefaultCfsPeriod;
  }
  if (out.cpu_shares < 0) {
    warn("negative cpu shares " + std::to_string(out.cpu_shares) + " ignored");
    out.cpu_shares = 0;
  }
  if (out.memory_limit_bytes < 0) {
    warn("negative memory limit " + std::to_string(out.memory_limit_bytes) + " ignored");
    out.memory_limit_bytes = 0;
  }
  return out;
}

uint32_t SizeVcpus(const PodSize& size, const SizingPolicy& policy, bool& defaulted) {
  const uint64_t overhead_millis = OverheadMillis(policy.overhead_vcpus);
  uint64_t vcpus = 0;
  defaulted = false;
  if (size.cpu_limit_set) {
    // ceil((overhead + quota/period)), in exact integer arithmetic.
    const auto period = static_cast<uint64_t>(size.workload.cpu_period);
    unsigned __int128 num = static_cast<unsigned __int128>(overhead_millis) * period +
                            static_cast<unsigned __int128>(size.workload.cpu_quota) * 1000;
    unsigned __int128 den = static_cast<unsigned __int128>(period) * 1000;
    unsigned __int128 ceil = num / den + (num % den != 0);
    vcpus = ceil > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                        : static_cast<uint64_t>(ceil);
  } else if (size.cpu_unconstrained && size.cpu_shares_set) {
    // Static CPU manager: quota -1, the exclusive CPUs are in the shares.
    uint64_t workload = CeilDiv(static_cast<uint64_t>(size.workload.cpu_shares), kSharesPerCpu);
    vcpus = CeilDiv(SaturatingAdd(overhead_millis, workload * 1000), 1000);
  } else {
    vcpus = policy.default_vcpus;
    defaulted = true;
  }
  vcpus = std::max<uint64_t>(vcpus, 1);
  return static_cast<uint32_t>(std::min<uint64_t>(vcpus, std::numeric_limits<uint32_t>::max()));
}

// The policy's memory share in thousandths of a percent; NaN, negative and
// absurd values count as 0 or are clamped (at 1000%).
uint64_t OverheadPercentMillis(double percent) {
  if (!(percent > 0)) return 0;
  if (percent > 1000) return 1000000;
  return static_cast<uint64_t>(std::llround(percent * 1000));
}

uint64_t SizeMemory(const PodSize& size, const SizingPolicy& policy, bool& defaulted) {
  uint64_t mib = 0;
  defaulted = false;
  if (size.memory_limit_set) {
    uint64_t workload = CeilDiv(static_cast<uint64_t>(size.workload.memory_limit_bytes), kMiB);
    mib = SaturatingAdd(GuestMemoryOverheadMib(workload, policy), workload);
  } else {
    mib = policy.default_memory_mib;
    defaulted = true;
  }
  mib = std::max({mib, policy.min_memory_mib, uint64_t{1}});
  if (policy.round_memory_to_even && mib % 2 != 0) {
    mib = mib == std::numeric_limits<uint64_t>::max() ? mib - 1 : mib + 1;
  }
  return mib;
}

// --- (a) containerd annotations ---

const std::string* Find(const std::map<std::string, std::string>& map, std::string_view key) {
  auto it = map.find(std::string(key));
  return it == map.end() ? nullptr : &it->second;
}

// Reads one containerd sizing key into `out`; returns whether it was there.
bool ReadContainerdKey(const std::map<std::string, std::string>& annotations, std::string_view key,
                       int64_t& out, std::vector<std::string>& warnings) {
  const std::string* text = Find(annotations, key);
  if (!text) return false;
  std::optional<int64_t> value = ParseInt64(*text);
  if (!value) {
    warnings.push_back(std::string(key) + ": \"" + *text +
                       "\" is not a decimal integer; read as not set");
    return true;
  }
  out = *value;
  return true;
}

// --- (b) CRI-O JSON ---

// One field of CRI-O's LinuxContainerResources JSON: Go's encoding uses the
// snake_case name with a number; protojson would use lowerCamelCase and a
// decimal string. Both are accepted.
void ReadCrioField(const nlohmann::json& doc, std::string_view snake, std::string_view camel,
                   std::string_view annotation, int64_t& out, std::vector<std::string>& warnings) {
  auto it = doc.find(snake);
  if (it == doc.end()) it = doc.find(camel);
  if (it == doc.end() || it->is_null()) return;
  std::optional<int64_t> value;
  if (it->is_number_integer()) {
    value = it->get<int64_t>();
  } else if (it->is_string()) {
    value = ParseInt64(it->get_ref<const std::string&>());
  }
  if (!value) {
    warnings.push_back(std::string(annotation) + ": " + std::string(snake) + " " + it->dump() +
                       " is not an integer; read as not set");
    return;
  }
  out = *value;
}

enum class CrioParse { kAbsent, kNull, kValue, kInvalid };

// Parses the CRI-O annotation at `key` into `out`.
CrioParse ParseCrioResources(const std::map<std::string, std::string>& annotations,
                             std::string_view key, CpuMemory& out,
                             std::vector<std::string>& warnings) {
  const std::string* text = Find(annotations, key);
  if (!text) return CrioParse::kAbsent;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !(doc.is_object() || doc.is_null())) {
    warnings.push_back(std::string(key) + ": not a JSON object; ignored");
    return CrioParse::kInvalid;
  }
  if (doc.is_null()) return CrioParse::kNull;
  out = {};
  ReadCrioField(doc, "cpu_period", "cpuPeriod", key, out.cpu_period, warnings);
  ReadCrioField(doc, "cpu_quota", "cpuQuota", key, out.cpu_quota, warnings);
  ReadCrioField(doc, "cpu_shares", "cpuShares", key, out.cpu_shares, warnings);
  ReadCrioField(doc, "memory_limit_in_bytes", "memoryLimitInBytes", key, out.memory_limit_bytes,
                warnings);
  return CrioParse::kValue;
}

// The new spelling wins; the old one is read when the new one is absent or
// cannot be parsed.
CrioParse ParseCrioPair(const std::map<std::string, std::string>& annotations,
                        std::string_view new_key, std::string_view old_key, CpuMemory& out,
                        std::vector<std::string>& warnings) {
  CrioParse result = ParseCrioResources(annotations, new_key, out, warnings);
  if (result == CrioParse::kAbsent || result == CrioParse::kInvalid) {
    CrioParse old = ParseCrioResources(annotations, old_key, out, warnings);
    if (old != CrioParse::kAbsent) result = old;
  }
  return result;
}

std::string Describe(const CpuMemory& r) {
  return "quota " + std::to_string(r.cpu_quota) + "/period " + std::to_string(r.cpu_period) +
         ", shares " + std::to_string(r.cpu_shares) + ", memory " +
         std::to_string(r.memory_limit_bytes);
}

}  // namespace

uint64_t GuestMemoryOverheadMib(uint64_t workload_mib, const SizingPolicy& policy) {
  // ceil(workload * percent / 100), exact.
  unsigned __int128 share = static_cast<unsigned __int128>(workload_mib) *
                            OverheadPercentMillis(policy.overhead_memory_percent);
  share = share / 100000 + (share % 100000 != 0);
  const uint64_t proportional = share > std::numeric_limits<uint64_t>::max()
                                    ? std::numeric_limits<uint64_t>::max()
                                    : static_cast<uint64_t>(share);
  return SaturatingAdd(policy.overhead_memory_mib, proportional);
}

const char* SizeSourceName(SizeSource source) {
  switch (source) {
    case SizeSource::kNone: return "no sizing information";
    case SizeSource::kContainerdAnnotations: return "containerd annotations";
    case SizeSource::kCrioAnnotations: return "CRI-O annotations";
    case SizeSource::kPodSandboxConfig: return "PodSandboxConfig";
  }
  return "unknown";
}

std::string PodSize::ToString() const {
  std::string out = std::to_string(vcpus) + (vcpus == 1 ? " vCPU" : " vCPUs") + ", " +
                    std::to_string(memory_mib) + " MiB (" + SizeSourceName(source);
  if (source != SizeSource::kNone) out += ": " + Describe(workload);
  if (has_overhead) out += "; overhead " + Describe(overhead);
  if (vcpus_defaulted) out += "; default vCPUs";
  if (memory_defaulted) out += "; default memory";
  out += ")";
  return out;
}

PodSize ComputePodSize(SizeSource source, const CpuMemory& workload, const CpuMemory* overhead,
                       const SizingPolicy& policy) {
  PodSize size;
  size.source = source;
  size.workload = Sanitize(workload, "workload", size.warnings);
  if (overhead) {
    size.has_overhead = true;
    size.overhead = Sanitize(*overhead, "overhead", size.warnings);
  }

  const CpuMemory& w = size.workload;
  size.cpu_limit_set = w.cpu_quota > 0 && w.cpu_period > 0;
  size.cpu_unconstrained = w.cpu_quota < 0;
  size.cpu_shares_set = w.cpu_shares > 0;
  size.memory_limit_set = w.memory_limit_bytes > 0;
  if (size.cpu_unconstrained && !size.cpu_shares_set) {
    size.warnings.push_back("workload: cpu quota -1 without shares: default vCPUs");
  }

  if (size.cpu_limit_set) {
    size.pod_cpu_millis = QuotaToMillis(w.cpu_quota, w.cpu_period);
    const CpuMemory& o = size.overhead;
    if (size.has_overhead && o.cpu_quota > 0 && o.cpu_period > 0) {
      size.pod_cpu_millis =
          SaturatingAdd(size.pod_cpu_millis, QuotaToMillis(o.cpu_quota, o.cpu_period));
    }
  }
  if (size.memory_limit_set) {
    size.pod_memory_bytes = static_cast<uint64_t>(w.memory_limit_bytes);
    if (size.has_overhead && size.overhead.memory_limit_bytes > 0) {
      size.pod_memory_bytes = SaturatingAdd(
          size.pod_memory_bytes, static_cast<uint64_t>(size.overhead.memory_limit_bytes));
    }
  }

  size.vcpus = SizeVcpus(size, policy, size.vcpus_defaulted);
  if (policy.max_vcpus != 0 && size.vcpus > policy.max_vcpus) {
    size.warnings.push_back(std::to_string(size.vcpus) + " vCPUs capped to max_vcpus " +
                            std::to_string(policy.max_vcpus));
    size.vcpus = policy.max_vcpus;
  }
  size.memory_mib = SizeMemory(size, policy, size.memory_defaulted);
  size.container_memory_mib = ContainerMemoryMib(size.memory_mib, policy);

  const uint64_t guest_overhead_mib = GuestMemoryOverheadMib(
      size.memory_limit_set ? CeilDiv(static_cast<uint64_t>(w.memory_limit_bytes), kMiB) : 0,
      policy);
  if (size.has_overhead && size.overhead.memory_limit_bytes > 0 &&
      guest_overhead_mib <= std::numeric_limits<uint64_t>::max() / kMiB &&
      static_cast<uint64_t>(size.overhead.memory_limit_bytes) < guest_overhead_mib * kMiB) {
    size.warnings.push_back("overhead: the pod's RuntimeClass memory overhead (" +
                            std::to_string(size.overhead.memory_limit_bytes / kMiB) +
                            " MiB) is below hull's VM overhead (" +
                            std::to_string(guest_overhead_mib) +
                            " MiB): the VM can outgrow the pod's cgroup");
  }
  return size;
}

uint64_t ContainerMemoryMib(uint64_t memory_mib, const SizingPolicy& policy) {
  // The largest workload whose total (it plus its overhead, which grows with
  // it) fits: the total never falls as the workload grows, so a bisection
  // finds it in at most 64 steps, whatever the size.
  auto total = [&](uint64_t w) { return SaturatingAdd(w, GuestMemoryOverheadMib(w, policy)); };
  if (total(0) > memory_mib) return 0;
  uint64_t fits = 0;
  uint64_t too_big_above = memory_mib;  // every w > this is too big
  while (fits < too_big_above) {
    const uint64_t mid = fits + (too_big_above - fits) / 2 + 1;  // in (fits, too_big_above]
    if (total(mid) <= memory_mib) {
      fits = mid;
    } else {
      too_big_above = mid - 1;
    }
  }
  return fits;
}

PodSize SizeFromAnnotations(const std::map<std::string, std::string>& annotations,
                            const SizingPolicy& policy) {
  std::vector<std::string> warnings;
  CpuMemory workload;
  bool any = false;
  any |= ReadContainerdKey(annotations, kSandboxCpuPeriod, workload.cpu_period, warnings);
  any |= ReadContainerdKey(annotations, kSandboxCpuQuota, workload.cpu_quota, warnings);
  any |= ReadContainerdKey(annotations, kSandboxCpuShares, workload.cpu_shares, warnings);
  any |= ReadContainerdKey(annotations, kSandboxMemory, workload.memory_limit_bytes, warnings);

  PodSize size;
  if (any) {
    size = ComputePodSize(SizeSource::kContainerdAnnotations, workload, nullptr, policy);
  } else {
    CpuMemory resources;
    CpuMemory overhead;
    CrioParse r = ParseCrioPair(annotations, crio::kPodLinuxResourcesV2, crio::kPodLinuxResources,
                                resources, warnings);
    CrioParse o = ParseCrioPair(annotations, crio::kPodLinuxOverheadV2, crio::kPodLinuxOverhead,
                                overhead, warnings);
    if (r == CrioParse::kAbsent && o == CrioParse::kAbsent) {
      size = ComputePodSize(SizeSource::kNone, {}, nullptr, policy);
    } else {
      if (r != CrioParse::kValue) resources = {};
      size = ComputePodSize(SizeSource::kCrioAnnotations, resources,
                            o == CrioParse::kValue ? &overhead : nullptr, policy);
    }
  }
  size.warnings.insert(size.warnings.begin(), warnings.begin(), warnings.end());
  return size;
}

CpuMemory CpuMemoryFromProto(const ::runtime::v1::LinuxContainerResources& resources) {
  return {resources.cpu_period(), resources.cpu_quota(), resources.cpu_shares(),
          resources.memory_limit_in_bytes()};
}

PodSize SizeFromPodSandboxConfig(const ::runtime::v1::PodSandboxConfig& config,
                                 const SizingPolicy& policy) {
  const bool has_resources = config.has_linux() && config.linux().has_resources();
  const bool has_overhead = config.has_linux() && config.linux().has_overhead();
  if (!has_resources && !has_overhead) {
    return ComputePodSize(SizeSource::kNone, {}, nullptr, policy);
  }
  CpuMemory workload = has_resources ? CpuMemoryFromProto(config.linux().resources()) : CpuMemory{};
  CpuMemory overhead = has_overhead ? CpuMemoryFromProto(config.linux().overhead()) : CpuMemory{};
  return ComputePodSize(SizeSource::kPodSandboxConfig, workload, has_overhead ? &overhead : nullptr,
                        policy);
}

}  // namespace hull::oci
