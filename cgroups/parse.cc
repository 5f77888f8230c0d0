#include <charconv>
#include <limits>

#include "base/text.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups::internal {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t pos = s.find(sep);
    std::string_view piece = s.substr(0, pos);
    if (!piece.empty()) out.push_back(piece);
    if (pos == std::string_view::npos) break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  constexpr std::string_view kSpace = " \t\n";
  size_t i = 0;
  while (true) {
    i = s.find_first_not_of(kSpace, i);
    if (i == std::string_view::npos) break;
    size_t end = s.find_first_of(kSpace, i);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t value = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> ParseUintOrMax(std::string_view s, uint64_t max_value) {
  s = TrimSpace(s);
  if (s == "max") return max_value;
  return ParseUint(s);
}

FlatKeyed ParseFlatKeyed(std::string_view content) {
  FlatKeyed out;
  for (std::string_view line : Split(content, '\n')) {
    std::vector<std::string_view> f = Fields(line);
    if (f.size() != 2) continue;
    if (auto v = ParseUint(f[1])) out.emplace_back(std::string(f[0]), *v);
  }
  return out;
}

std::optional<uint64_t> Lookup(const FlatKeyed& keyed, std::string_view key) {
  for (const auto& [k, v] : keyed) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::optional<std::string_view> NestedLine::Get(std::string_view key) const {
  for (const auto& [k, v] : values) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

std::vector<NestedLine> ParseNestedKeyed(std::string_view content) {
  std::vector<NestedLine> out;
  for (std::string_view line : Split(content, '\n')) {
    std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    NestedLine parsed{.name = std::string(f[0])};
    for (size_t i = 1; i < f.size(); ++i) {
      size_t eq = f[i].find('=');
      if (eq == std::string_view::npos) continue;
      parsed.values.emplace_back(std::string(f[i].substr(0, eq)), std::string(f[i].substr(eq + 1)));
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

std::optional<std::pair<uint64_t, uint64_t>> ParseDevice(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto major = ParseUint(s.substr(0, colon));
  auto minor = ParseUint(s.substr(colon + 1));
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

Result<std::vector<BlkioLine>> ParseBlkio(std::string_view content) {
  std::vector<BlkioLine> out;
  for (std::string_view line : Split(content, '\n')) {
    std::vector<std::string_view> f = Fields(line);
    if (f.empty() || f[0] == "Total") continue;
    auto device = ParseDevice(f[0]);
    std::optional<uint64_t> value;
    BlkioLine parsed;
    if (f.size() == 3) {
      parsed.op = std::string(f[1]);
      value = ParseUint(f[2]);
    } else if (f.size() == 2) {
      value = ParseUint(f[1]);
    }
    if (!device || !value) return InvalidArgumentError("bad blkio line: " + std::string(line));
    parsed.major = device->first;
    parsed.minor = device->second;
    parsed.value = *value;
    out.push_back(std::move(parsed));
  }
  return out;
}

std::vector<Partition> ParsePartitions(std::string_view content) {
  std::vector<Partition> out;
  for (std::string_view line : Split(content, '\n')) {
    std::vector<std::string_view> f = Fields(line);
    if (f.size() != 4) continue;
    auto major = ParseUint(f[0]);
    auto minor = ParseUint(f[1]);
    if (!major || !minor) continue;  // the header line
    out.push_back({*major, *minor, "/dev/" + std::string(f[3])});
  }
  return out;
}

std::optional<uint64_t> PageSizeBytes(std::string_view label) {
  if (label.size() < 3 || label.substr(label.size() - 1) != "B") return std::nullopt;
  uint64_t shift = 0;
  switch (label[label.size() - 2]) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return std::nullopt;
  }
  auto n = ParseUint(label.substr(0, label.size() - 2));
  if (!n || *n > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
  return *n << shift;
}

Status ValidateCgroupPath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError("cgroup path is not absolute: " + std::string(path));
  }
  for (std::string_view component : Split(path, '/')) {
    if (component == "." || component == "..") {
      return InvalidArgumentError("cgroup path has a '" + std::string(component) +
                                  "' component: " + std::string(path));
    }
  }
  return Status::Ok();
}

}  // namespace hull::cgroups::internal
