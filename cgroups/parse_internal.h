// Parsers for the text formats of /proc and cgroupfs files. Pure functions on
// strings: the readers that open the files live elsewhere. Lenient where the
// kernel adds keys over time (unknown keys are kept or skipped, never errors).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace hull::cgroups::internal {

// Splits on `sep`, dropping empty pieces.
std::vector<std::string_view> Split(std::string_view s, char sep);
// Splits on runs of spaces, tabs and newlines.
std::vector<std::string_view> Fields(std::string_view s);

// A decimal uint64, nothing else.
std::optional<uint64_t> ParseUint(std::string_view s);
// A single-value file: the number, or `max_value` for "max". Surrounding
// whitespace is ignored.
std::optional<uint64_t> ParseUintOrMax(std::string_view s, uint64_t max_value);

// "key value" lines (memory.stat, cpu.stat, memory.events, oom_control).
// Lines whose value is not a uint64 are skipped.
using FlatKeyed = std::vector<std::pair<std::string, uint64_t>>;
FlatKeyed ParseFlatKeyed(std::string_view content);
std::optional<uint64_t> Lookup(const FlatKeyed& keyed, std::string_view key);

// "k1=v1 k2=v2" after a leading name: "8:16 rbytes=1 wbytes=2", "some
// avg10=0.00 ...", "mlx4_0 hca_handle=2 hca_object=max".
struct NestedLine {
  std::string name;
  std::vector<std::pair<std::string, std::string>> values;
  std::optional<std::string_view> Get(std::string_view key) const;
};
std::vector<NestedLine> ParseNestedKeyed(std::string_view content);

// "major:minor" -> {major, minor}.
std::optional<std::pair<uint64_t, uint64_t>> ParseDevice(std::string_view s);

// One line of a v1 blkio file: "8:0 Read 4096", or "8:0 4096" for files
// without an operation (time_recursive, sectors_recursive). The "Total"
// summary lines yield nothing.
struct BlkioLine {
  uint64_t major = 0;
  uint64_t minor = 0;
  std::string op;
  uint64_t value = 0;
};
Result<std::vector<BlkioLine>> ParseBlkio(std::string_view content);

// /proc/partitions -> {major, minor, "/dev/<name>"}.
struct Partition {
  uint64_t major = 0;
  uint64_t minor = 0;
  std::string device;
};
std::vector<Partition> ParsePartitions(std::string_view content);

// A hugetlb page size label from a cgroup file name ("2MB", "1GB", "64KB")
// in bytes, for ordering.
std::optional<uint64_t> PageSizeBytes(std::string_view label);

// Checks a cgroup path from /proc or a caller: absolute, and no "." or ".."
// component. InvalidArgument otherwise.
Status ValidateCgroupPath(std::string_view path);

}  // namespace hull::cgroups::internal
