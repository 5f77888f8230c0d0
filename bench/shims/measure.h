// Small measurement helpers for bench_shims: sample statistics, a process's
// memory and thread count from /proc, and wall-clock timing. No state; every
// call reads /proc afresh.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace hull::bench {

using Clock = std::chrono::steady_clock;

inline double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The q-quantile (0..1) of `samples`, linearly interpolated; NaN when empty.
double Quantile(std::vector<double> samples, double q);
inline double Median(std::vector<double> samples) {
  return Quantile(std::move(samples), 0.5);
}

// One process's memory (kB, from /proc/<pid>/smaps_rollup) and threads.
struct ProcessMemory {
  double rss_kb = 0;
  double pss_kb = 0;
  double private_dirty_kb = 0;
  double threads = 0;
};
Result<ProcessMemory> ReadProcessMemory(pid_t pid);

// The memory of a group of processes (all the shims of one kind), summed,
// and the number of processes.
struct GroupMemory {
  ProcessMemory total;
  int processes = 0;
  ProcessMemory PerProcess() const;
};
Result<GroupMemory> ReadGroupMemory(const std::vector<pid_t>& pids);

// Live processes whose argv[0] has basename `binary_name` and whose command
// line contains `cmdline_substring` (the private containerd's socket path,
// which every shim of that instance is started with).
std::vector<pid_t> ProcessesOf(const std::string& binary_name,
                               const std::string& cmdline_substring);

// The 1-minute load average, from /proc/loadavg.
double LoadAverage();

std::string ReadWholeFile(const std::string& path);
bool WriteWholeFile(const std::string& path, const std::string& content);

}  // namespace hull::bench
