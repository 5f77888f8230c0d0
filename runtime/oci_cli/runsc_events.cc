#include "runtime/oci_cli/runsc_events.h"

#include <nlohmann/json.hpp>
#include <string>

namespace hull::runtime::oci_cli {
namespace {

using nlohmann::json;

// `object[key]` as an unsigned number; 0 when absent or not a number.
uint64_t U64(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) {
    int64_t v = it->get<int64_t>();
    return v < 0 ? 0 : static_cast<uint64_t>(v);
  }
  double d = it->get<double>();
  return d < 0 ? 0 : static_cast<uint64_t>(d);
}

const json& Member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

}  // namespace

Result<::io::containerd::cgroups::v1::Metrics> MetricsFromRunscStats(std::string_view output) {
  json event = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object() || Member(event, "type") != "stats" ||
      !Member(event, "data").is_object()) {
    return InvalidArgumentError("runsc events --stats: not a stats event: " +
                                std::string(output.substr(0, 200)));
  }
  const json& data = Member(event, "data");
  ::io::containerd::cgroups::v1::Metrics metrics;

  const json& cpu = Member(Member(data, "cpu"), "usage");
  auto* usage = metrics.mutable_cpu()->mutable_usage();
  usage->set_total(U64(cpu, "total"));
  usage->set_kernel(U64(cpu, "kernel"));
  usage->set_user(U64(cpu, "user"));
  if (const json& per_cpu = Member(cpu, "percpu"); per_cpu.is_array()) {
    for (const json& v : per_cpu)
      usage->add_per_cpu(v.is_number_unsigned() ? v.get<uint64_t>() : 0);
  }
  const json& throttling = Member(Member(data, "cpu"), "throttling");
  auto* throttle = metrics.mutable_cpu()->mutable_throttling();
  throttle->set_periods(U64(throttling, "periods"));
  throttle->set_throttled_periods(U64(throttling, "throttledPeriods"));
  throttle->set_throttled_time(U64(throttling, "throttledTime"));

  const json& memory = Member(data, "memory");
  auto* mem = metrics.mutable_memory();
  mem->set_cache(U64(memory, "cache"));
  const auto fill = [&memory](const char* key, auto* entry) {
    const json& m = Member(memory, key);
    entry->set_usage(U64(m, "usage"));
    entry->set_max(U64(m, "max"));
    entry->set_limit(U64(m, "limit"));
    entry->set_failcnt(U64(m, "failcnt"));
  };
  fill("usage", mem->mutable_usage());
  fill("swap", mem->mutable_swap());
  fill("kernel", mem->mutable_kernel());
  fill("kernelTCP", mem->mutable_kernel_tcp());

  const json& pids = Member(data, "pids");
  metrics.mutable_pids()->set_current(U64(pids, "current"));
  metrics.mutable_pids()->set_limit(U64(pids, "limit"));
  return metrics;
}

Result<int> ExitStatusFromRunscWait(std::string_view output) {
  json result = json::parse(output, nullptr, /*allow_exceptions=*/false);
  const json& status = Member(result, "exitStatus");
  if (!status.is_number_integer()) {
    return InvalidArgumentError("runsc wait: no exit status in: " +
                                std::string(output.substr(0, 200)));
  }
  return status.get<int>();
}

}  // namespace hull::runtime::oci_cli
