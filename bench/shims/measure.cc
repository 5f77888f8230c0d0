#include "bench/shims/measure.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "tests/integration/harness/host.h"

namespace hull::bench {

namespace fs = std::filesystem;

double Quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(samples.begin(), samples.end());
  double pos = q * static_cast<double>(samples.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, samples.size() - 1);
  return samples[lo] + (samples[hi] - samples[lo]) * (pos - static_cast<double>(lo));
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteWholeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  return static_cast<bool>(out);
}

namespace {

// The number after "<key>:" on its own line of a /proc file, or -1.
double Field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(key + ":")) return std::strtod(line.c_str() + key.size() + 1, nullptr);
  }
  return -1;
}

}  // namespace

Result<ProcessMemory> ReadProcessMemory(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::string rollup = ReadWholeFile(dir + "/smaps_rollup");
  std::string status = ReadWholeFile(dir + "/status");
  ProcessMemory m{.rss_kb = Field(rollup, "Rss"),
                  .pss_kb = Field(rollup, "Pss"),
                  .private_dirty_kb = Field(rollup, "Private_Dirty"),
                  .threads = Field(status, "Threads")};
  if (m.rss_kb < 0 || m.pss_kb < 0 || m.private_dirty_kb < 0 || m.threads < 0) {
    return NotFoundError("read " + dir + "/smaps_rollup: process gone or unreadable");
  }
  return m;
}

ProcessMemory GroupMemory::PerProcess() const {
  if (processes == 0) return {};
  double n = processes;
  return {total.rss_kb / n, total.pss_kb / n, total.private_dirty_kb / n, total.threads / n};
}

Result<GroupMemory> ReadGroupMemory(const std::vector<pid_t>& pids) {
  GroupMemory g;
  for (pid_t pid : pids) {
    HULL_ASSIGN_OR_RETURN(ProcessMemory m, ReadProcessMemory(pid));
    g.total.rss_kb += m.rss_kb;
    g.total.pss_kb += m.pss_kb;
    g.total.private_dirty_kb += m.private_dirty_kb;
    g.total.threads += m.threads;
    ++g.processes;
  }
  return g;
}

std::vector<pid_t> ProcessesOf(const std::string& binary_name,
                               const std::string& cmdline_substring) {
  std::vector<pid_t> pids;
  for (pid_t pid : itest::ProcessesMatching(cmdline_substring)) {
    std::string cmdline = ReadWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (fs::path(argv0).filename() == binary_name) pids.push_back(pid);
  }
  return pids;
}

double LoadAverage() {
  return std::strtod(ReadWholeFile("/proc/loadavg").c_str(), nullptr);
}

}  // namespace hull::bench
