// The measurements of bench_shims, one function per phase. Each phase runs
// the variants alternately (RoundOrder), leaves no container or shim behind
// when it succeeds, and adds its figures to the report.
#pragma once

#include <chrono>

#include "base/status.h"
#include "bench/shims/bench_env.h"
#include "bench/shims/report.h"

namespace hull::bench {

struct PhaseOptions {
  int run_count = 50;      // ctr run --rm per variant
  int exec_count = 50;     // ctr task exec per variant
  int start_count = 30;    // shim start-to-Connect per shim binary
  int alone_count = 30;    // runc/crun lifecycles without any shim
  int state_calls = 4000;  // State calls per throughput sample
  int state_rounds = 15;
  int pods = 50;          // "many pods" memory figure
  int grouped_pods = 10;  // pods of `grouped_size` containers
  int grouped_size = 5;
  int memory_rounds = 3;                                       // 1-pod layout
  int big_memory_rounds = 2;                                   // the many-pod layouts
  std::chrono::milliseconds settle = std::chrono::seconds(3);  // idle time before reading memory
};

// Memory of idle shims: 1 pod, `pods` single-container pods, and
// `grouped_pods` pods of `grouped_size` containers grouped by sandbox id.
Status MeasureMemory(BenchEnv& env, const PhaseOptions& options, Report& report);

// `ctr run --rm busybox /bin/true`: median and p90.
Status MeasureRunLatency(BenchEnv& env, const PhaseOptions& options, Report& report);

// `ctr task exec /bin/true` into a running container, then State calls per
// second straight to each shim's socket, then the shims' memory after that.
Status MeasureExecAndState(BenchEnv& env, const PhaseOptions& options, Report& report);

// The shim binary's `start` action in a prepared bundle until its server
// answers Connect; the fresh server's memory; cleaned up with Shutdown and
// the `delete` action.
Status MeasureShimStart(BenchEnv& env, const PhaseOptions& options, Report& report);

// runc and crun alone (create, start, wait for exit, delete) on the same
// busybox rootfs, no shim and no containerd: the floor under `ctr run`.
Status MeasureRuntimeAlone(BenchEnv& env, const PhaseOptions& options, Report& report);

}  // namespace hull::bench
