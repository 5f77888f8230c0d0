#include <algorithm>

#include "cgroups/metrics_internal.h"

namespace hull::cgroups::internal {

std::vector<std::string> HugePageSizes(StatFiles& files, std::string_view suffix) {
  Result<std::vector<std::string>> names = files.dir().List();
  if (!names) {
    files.Fail(names.error());
    return {};
  }
  std::vector<std::pair<uint64_t, std::string>> sizes;
  for (const std::string& name : *names) {
    std::vector<std::string_view> parts = Split(name, '.');
    if (parts.size() != 3 || parts[0] != "hugetlb" || parts[2] != suffix) continue;
    if (auto bytes = PageSizeBytes(parts[1])) sizes.emplace_back(*bytes, std::string(parts[1]));
  }
  std::sort(sizes.begin(), sizes.end());
  std::vector<std::string> labels;
  for (auto& [bytes, label] : sizes) labels.push_back(std::move(label));
  return labels;
}

}  // namespace hull::cgroups::internal
