#include "agent/system_info.h"

#include <sys/utsname.h>

#include <charconv>

#include "base/file_util.h"
#include "base/text.h"

namespace hull::agent {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<uint32_t> ParseCpuList(std::string_view list) {
  list = TrimSpace(list);
  if (list.empty()) return InvalidArgumentError("empty cpu list");
  uint32_t count = 0;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    size_t dash = range.find('-');
    uint32_t first = 0;
    uint32_t last = 0;
    bool ok = dash == std::string_view::npos
                  ? ParseNumber(range, &first) && ParseNumber(range, &last)
                  : ParseNumber(range.substr(0, dash), &first) &&
                        ParseNumber(range.substr(dash + 1), &last);
    if (!ok || last < first) {
      return InvalidArgumentError("bad cpu list range \"" + std::string(range) + "\"");
    }
    count += last - first + 1;
  }
  return count;
}

Result<uint64_t> ParseMeminfoBytes(std::string_view meminfo, std::string_view key) {
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t end = meminfo.find('\n', pos);
    std::string_view line = meminfo.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? meminfo.size() : end + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.substr(0, colon) != key) continue;
    std::string_view value = TrimSpace(line.substr(colon + 1));
    uint64_t scale = 1;
    if (value.ends_with(" kB")) {
      value.remove_suffix(3);
      scale = 1024;
    }
    uint64_t n = 0;
    if (!ParseNumber(TrimSpace(value), &n)) {
      return InvalidArgumentError("bad meminfo value for " + std::string(key));
    }
    return n * scale;
  }
  return NotFoundError("no " + std::string(key) + " in meminfo");
}

Result<SystemInfo> ReadSystemInfo() {
  SystemInfo info;
  HULL_ASSIGN_OR_RETURN(std::string online, ReadFile("/sys/devices/system/cpu/online"));
  HULL_ASSIGN_OR_RETURN(info.vcpus, ParseCpuList(online));
  HULL_ASSIGN_OR_RETURN(std::string meminfo, ReadFile("/proc/meminfo"));
  HULL_ASSIGN_OR_RETURN(info.memory_bytes, ParseMeminfoBytes(meminfo, "MemTotal"));
  HULL_ASSIGN_OR_RETURN(info.memory_available_bytes, ParseMeminfoBytes(meminfo, "MemAvailable"));
  struct utsname uts {};
  if (::uname(&uts) != 0) return ErrnoError("uname");
  info.kernel_release = uts.release;
  return info;
}

}  // namespace hull::agent
