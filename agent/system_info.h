// What the guest kernel says about the machine it runs on: online CPUs,
// memory, kernel release. The parsers take file contents so they are tested
// without a guest; the readers look at /proc and /sys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::agent {

struct SystemInfo {
  uint32_t vcpus = 0;
  uint64_t memory_bytes = 0;            // MemTotal
  uint64_t memory_available_bytes = 0;  // MemAvailable
  std::string kernel_release;
};

// Counts the CPUs of a kernel cpu list ("0-1,4,6-7\n" → 5).
Result<uint32_t> ParseCpuList(std::string_view list);
// A "Key:   N kB" line of /proc/meminfo, in bytes.
Result<uint64_t> ParseMeminfoBytes(std::string_view meminfo, std::string_view key);

// Reads /sys/devices/system/cpu/online, /proc/meminfo and uname().
Result<SystemInfo> ReadSystemInfo();

}  // namespace hull::agent
