// The cgroup v2 file writes that carry a Resources, in the order they are
// made. Pure: Manager::Apply opens the files.
#pragma once

#include <string>
#include <vector>

#include "cgroups/cgroups.h"

namespace hull::cgroups::internal {

struct FileWrite {
  std::string file;
  std::string value;
  friend bool operator==(const FileWrite&, const FileWrite&) = default;
};

// `has_bfq`: the cgroup has io.bfq.weight (the BFQ scheduler is in use).
std::vector<FileWrite> ResourceWrites(const Resources& resources, bool has_bfq);

}  // namespace hull::cgroups::internal
