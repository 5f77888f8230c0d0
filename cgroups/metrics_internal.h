// Pieces the v1 and v2 metrics readers share: hugetlb page sizes, rdma and
// psi files. The v1 and v2 protos have separate but field-identical rdma
// messages, hence the templates.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups::internal {

// The page size labels ("2MB", "1GB") for which this directory has
// "hugetlb.<label>.<suffix>", smallest first. Reserved-page files
// ("hugetlb.2MB.rsvd.<suffix>") are not counted.
std::vector<std::string> HugePageSizes(StatFiles& files, std::string_view suffix);

// Fills rdma entries from the lines of rdma.current or rdma.max:
// "<device> hca_handle=<n|max> hca_object=<n|max>".
template <typename Entries>
void FillRdmaEntries(const std::vector<NestedLine>& lines, Entries* entries) {
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  for (const NestedLine& line : lines) {
    auto* entry = entries->Add();
    entry->set_device(line.name);
    if (auto v = line.Get("hca_handle")) {
      entry->set_hca_handles(static_cast<uint32_t>(ParseUintOrMax(*v, kMax).value_or(0)));
    }
    if (auto v = line.Get("hca_object")) {
      entry->set_hca_objects(static_cast<uint32_t>(ParseUintOrMax(*v, kMax).value_or(0)));
    }
  }
}

// rdma.current and rdma.max into a v1 or v2 RdmaStat; false if neither exists.
template <typename RdmaStat>
bool ReadRdma(StatFiles& files, RdmaStat& out) {
  auto current = files.Nested("rdma.current");
  auto max = files.Nested("rdma.max");
  if (current) FillRdmaEntries(*current, out.mutable_current());
  if (max) FillRdmaEntries(*max, out.mutable_limit());
  return current || max;
}

}  // namespace hull::cgroups::internal
