#include "shim/cli/socket_address.h"

#include <algorithm>
#include <vector>

#include "base/path.h"
#include "oci/annotations.h"
#include "shim/cli/sha256.h"

namespace hull::shim {

std::string GroupingId(const std::map<std::string, std::string>& annotations,
                       const std::string& id) {
  for (std::string_view key : {oci::kRuncGroup, oci::kSandboxId}) {
    auto it = annotations.find(std::string(key));
    if (it != annotations.end()) return it->second;
  }
  return id;
}

std::string SocketAddress(std::string_view socket_dir, std::string_view containerd_address,
                          std::string_view ns, std::string_view group) {
  return "unix://" + std::string(socket_dir) + "/" +
         Sha256Hex(JoinPath({containerd_address, ns, group}));
}

bool IsShimSocketName(std::string_view name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<std::string> SocketPath(std::string_view address) {
  constexpr std::string_view kScheme = "unix://";
  if (!address.starts_with(kScheme) || address.size() == kScheme.size()) {
    return InvalidArgumentError("socket address \"" + std::string(address) +
                                "\" is not unix://<path>");
  }
  return std::string(address.substr(kScheme.size()));
}

}  // namespace hull::shim
