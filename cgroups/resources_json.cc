// OCI LinuxResources (config.json's linux.resources, or an Update request's
// resources) -> Resources. nlohmann::json is read only through its
// non-throwing calls: every value's type is checked before it is taken.
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"

namespace hull::cgroups {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Typed reads of one JSON object's members. A member that is absent or null
// reads as nullopt; one of the wrong type records an InvalidArgument naming
// it ("memory.limit: ...") and reads as nullopt too. The first error wins.
template <typename Json>
class Reader {
 public:
  const Status& status() const { return status_; }
  void Fail(std::string field, std::string_view what) {
    if (status_.ok()) status_ = InvalidArgumentError(std::move(field) + ": " + std::string(what));
  }

  const Json* Member(const Json& obj, const std::string& key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }
  const Json* Object(const Json& obj, const std::string& key, const std::string& field) {
    const Json* v = Member(obj, key);
    if (v != nullptr && !v->is_object()) {
      Fail(field, "not an object");
      return nullptr;
    }
    return v;
  }
  const Json* Array(const Json& obj, const std::string& key, const std::string& field) {
    const Json* v = Member(obj, key);
    if (v != nullptr && !v->is_array()) {
      Fail(field, "not an array");
      return nullptr;
    }
    return v;
  }
  std::optional<int64_t> Int(const Json& obj, const std::string& key, const std::string& field) {
    const Json* v = Member(obj, key);
    if (v == nullptr) return std::nullopt;
    if (v->is_number_unsigned()) {
      if (v->template get<uint64_t>() > kInt64Max) {
        Fail(field, "out of range");
        return std::nullopt;
      }
      return static_cast<int64_t>(v->template get<uint64_t>());
    }
    if (v->is_number_integer()) return v->template get<int64_t>();
    Fail(field, "not an integer");
    return std::nullopt;
  }
  std::optional<uint64_t> Uint(const Json& obj, const std::string& key, const std::string& field,
                               uint64_t max = std::numeric_limits<uint64_t>::max()) {
    const Json* v = Member(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_unsigned()) {
      Fail(field, v->is_number_integer() ? "negative" : "not an unsigned integer");
      return std::nullopt;
    }
    uint64_t value = v->template get<uint64_t>();
    if (value > max) {
      Fail(field, "out of range");
      return std::nullopt;
    }
    return value;
  }
  std::optional<std::string> String(const Json& obj, const std::string& key,
                                    const std::string& field) {
    const Json* v = Member(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      Fail(field, "not a string");
      return std::nullopt;
    }
    return v->template get<std::string>();
  }

 private:
  Status status_;
};

// OCI's signed limits: -1 is unlimited, 0 unset.
std::optional<uint64_t> SignedLimit(std::optional<int64_t> v) {
  if (!v || *v == 0) return std::nullopt;
  if (*v < 0) return kUnlimited;
  return static_cast<uint64_t>(*v);
}

template <typename Json>
void ParseCpu(Reader<Json>& in, const Json& cpu, Resources& out) {
  if (auto shares = in.Uint(cpu, "shares", "cpu.shares"); shares && *shares != 0) {
    out.cpu_weight = CpuWeightFromShares(*shares);
  }
  auto quota = in.Int(cpu, "quota", "cpu.quota");
  auto period = in.Uint(cpu, "period", "cpu.period");
  // runc: nothing unless a positive quota or a period is given; a quota of
  // 0 or -1 with a period is "max <period>".
  if ((quota && *quota > 0) || (period && *period != 0)) {
    CpuMax max;
    if (period && *period != 0) max.period = *period;
    if (quota && *quota > 0) max.quota = static_cast<uint64_t>(*quota);
    out.cpu_max = max;
  }
  if (auto burst = in.Uint(cpu, "burst", "cpu.burst")) out.cpu_max_burst = *burst;
  if (auto idle = in.Int(cpu, "idle", "cpu.idle")) out.cpu_idle = *idle;
  if (auto cpus = in.String(cpu, "cpus", "cpu.cpus"); cpus && !cpus->empty())
    out.cpuset_cpus = *cpus;
  if (auto mems = in.String(cpu, "mems", "cpu.mems"); mems && !mems->empty())
    out.cpuset_mems = *mems;
}

template <typename Json>
Status ParseMemory(Reader<Json>& in, const Json& memory, Resources& out) {
  auto limit = in.Int(memory, "limit", "memory.limit");
  auto reservation = in.Int(memory, "reservation", "memory.reservation");
  auto swap = in.Int(memory, "swap", "memory.swap");
  if (!in.status().ok()) return Status::Ok();  // reported by the caller
  out.memory_max = SignedLimit(limit);
  out.memory_low = SignedLimit(reservation);
  HULL_ASSIGN_OR_RETURN(out.memory_swap_max, SwapMaxFromOci(swap.value_or(0), limit.value_or(0)));
  return Status::Ok();
}

template <typename Json>
void ParseBlockIo(Reader<Json>& in, const Json& io, Resources& out) {
  if (auto weight = in.Uint(io, "weight", "blockIO.weight", 1000); weight && *weight != 0) {
    out.blkio_weight = *weight;
  }
  auto device = [&](const Json& entry, const std::string& field, uint64_t& major, uint64_t& minor) {
    auto ma = in.Uint(entry, "major", field + ".major");
    auto mi = in.Uint(entry, "minor", field + ".minor");
    if (!ma || !mi) {
      in.Fail(field, "needs major and minor");
      return false;
    }
    major = *ma;
    minor = *mi;
    return true;
  };
  if (const Json* list = in.Array(io, "weightDevice", "blockIO.weightDevice")) {
    for (const Json& entry : *list) {
      IoDeviceWeight w;
      if (!device(entry, "blockIO.weightDevice", w.major, w.minor)) continue;
      auto weight = in.Uint(entry, "weight", "blockIO.weightDevice.weight", 1000);
      if (!weight || *weight == 0) continue;  // only a leafWeight: nothing on v2
      w.weight = *weight;
      out.blkio_weight_devices.push_back(w);
    }
  }
  static constexpr std::pair<const char*, const char*> kThrottles[] = {
      {"throttleReadBpsDevice", "rbps"},
      {"throttleWriteBpsDevice", "wbps"},
      {"throttleReadIOPSDevice", "riops"},
      {"throttleWriteIOPSDevice", "wiops"},
  };
  for (const auto& [name, key] : kThrottles) {
    const std::string field = std::string("blockIO.") + name;
    const Json* list = in.Array(io, name, field);
    if (list == nullptr) continue;
    for (const Json& entry : *list) {
      IoMax m{.key = key};
      if (!device(entry, field, m.major, m.minor)) continue;
      // A rate of 0 removes the limit, as it did in cgroup v1.
      auto rate = in.Uint(entry, "rate", field + ".rate");
      m.value = rate && *rate != 0 ? *rate : kUnlimited;
      out.io_max.push_back(m);
    }
  }
}

template <typename Json>
void ParseHugepages(Reader<Json>& in, const Json& list, Resources& out) {
  for (const Json& entry : list) {
    auto size = in.String(entry, "pageSize", "hugepageLimits.pageSize");
    auto limit = in.Uint(entry, "limit", "hugepageLimits.limit");
    if (!size || !limit) {
      in.Fail("hugepageLimits", "needs pageSize and limit");
      continue;
    }
    if (!internal::PageSizeBytes(*size)) {
      in.Fail("hugepageLimits.pageSize", "not a page size: \"" + *size + "\"");
      continue;
    }
    out.hugetlb_max[*size] = *limit;
  }
}

template <typename Json>
void ParseRdma(Reader<Json>& in, const Json& rdma, Resources& out) {
  constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
  for (auto it = rdma.begin(); it != rdma.end(); ++it) {
    const std::string field = "rdma." + it.key();
    if (!it.value().is_object()) {
      in.Fail(field, "not an object");
      continue;
    }
    if (it.key().empty() || it.key().find_first_of(" \t\n") != std::string::npos) {
      in.Fail(field, "not a device name");
      continue;
    }
    RdmaMax m{.device = it.key()};
    if (auto v = in.Uint(it.value(), "hcaHandles", field + ".hcaHandles", kMax32)) {
      m.hca_handles = static_cast<uint32_t>(*v);
    }
    if (auto v = in.Uint(it.value(), "hcaObjects", field + ".hcaObjects", kMax32)) {
      m.hca_objects = static_cast<uint32_t>(*v);
    }
    out.rdma_max.push_back(std::move(m));
  }
}

// linux.resources.unified: "<controller>.<file>" names only (and the
// cgroup.max.* limits), so it cannot reach cgroup.procs, cgroup.kill or
// anything outside the directory.
template <typename Json>
void ParseUnified(Reader<Json>& in, const Json& unified, Resources& out) {
  for (auto it = unified.begin(); it != unified.end(); ++it) {
    const std::string& file = it.key();
    const std::string field = "unified." + file;
    if (!internal::ValidateComponent(file).ok() || file.find('.') == std::string::npos ||
        file.front() == '.' || (file.starts_with("cgroup.") && !file.starts_with("cgroup.max."))) {
      in.Fail(field, "not a cgroup v2 limit file");
      continue;
    }
    if (!it.value().is_string()) {
      in.Fail(field, "not a string");
      continue;
    }
    out.unified[file] = it.value().template get<std::string>();
  }
}

template <typename Json>
Result<Resources> Parse(const Json& r) {
  if (r.is_null()) return Resources{};
  if (!r.is_object()) return InvalidArgumentError("linux.resources: not an object");
  Reader<Json> in;
  Resources out;
  if (const Json* cpu = in.Object(r, "cpu", "cpu")) ParseCpu(in, *cpu, out);
  if (const Json* memory = in.Object(r, "memory", "memory")) {
    HULL_RETURN_IF_ERROR_CTX(ParseMemory(in, *memory, out), "linux.resources");
  }
  if (const Json* pids = in.Object(r, "pids", "pids")) {
    out.pids_max = SignedLimit(in.Int(*pids, "limit", "pids.limit"));
  }
  if (const Json* io = in.Object(r, "blockIO", "blockIO")) ParseBlockIo(in, *io, out);
  if (const Json* list = in.Array(r, "hugepageLimits", "hugepageLimits")) {
    ParseHugepages(in, *list, out);
  }
  if (const Json* rdma = in.Object(r, "rdma", "rdma")) ParseRdma(in, *rdma, out);
  if (const Json* unified = in.Object(r, "unified", "unified")) ParseUnified(in, *unified, out);
  if (!in.status().ok()) return in.status().WithContext("linux.resources");
  return out;
}

}  // namespace

Result<Resources> ParseResources(const nlohmann::json& linux_resources) {
  return Parse(linux_resources);
}

Result<Resources> ParseResources(const nlohmann::ordered_json& linux_resources) {
  return Parse(linux_resources);
}

Result<Resources> ParseResources(std::string_view linux_resources_json) {
  nlohmann::json doc =
      nlohmann::json::parse(linux_resources_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("linux.resources: not JSON");
  return Parse(doc);
}

}  // namespace hull::cgroups
