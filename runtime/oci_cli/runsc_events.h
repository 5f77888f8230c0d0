// What gVisor's runsc prints, turned into what containerd expects: the stats
// event of `runsc events --stats <id>` as cgroup v1 Metrics, and the result
// line of `runsc wait <id>` as an exit status. Pure; any thread.
#pragma once

#include <string_view>

#include "base/status.h"
#include "io/containerd/cgroups/v1/metrics.pb.h"

namespace hull::runtime::oci_cli {

// `{"type":"stats","id":..,"data":{"cpu":{"usage":{"total":..}},
// "memory":{"usage":{"usage":..,"limit":..,"max":..,"failcnt":..}},"pids":{..}}}`
// -> Metrics with cpu.usage, memory.usage and pids filled; fields runsc
// leaves out stay zero. InvalidArgument if `output` is not a stats event.
Result<::io::containerd::cgroups::v1::Metrics> MetricsFromRunscStats(std::string_view output);

// `{"id":"x","exitStatus":N}` -> N. runsc already folds a signal into
// 128 + signal number. InvalidArgument on anything else.
Result<int> ExitStatusFromRunscWait(std::string_view output);

}  // namespace hull::runtime::oci_cli
