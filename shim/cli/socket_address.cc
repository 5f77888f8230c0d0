#include "shim/cli/socket_address.h"

#include <vector>

#include "oci/annotations.h"
#include "shim/cli/sha256.h"

namespace hull::shim {

std::string CleanPath(std::string_view path) {
  if (path.empty()) return ".";
  const bool rooted = path.front() == '/';
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(pos, end - pos);
    pos = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!rooted) {
        parts.push_back(part);  // a relative path may climb; "/.." is "/"
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string out = rooted ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.push_back('/');
    out += parts[i];
  }
  return out.empty() ? "." : out;
}

std::string JoinPath(std::initializer_list<std::string_view> elements) {
  std::string joined;
  bool any = false;
  for (std::string_view e : elements) {
    if (e.empty()) continue;
    if (any) joined.push_back('/');
    joined += e;
    any = true;
  }
  return any ? CleanPath(joined) : std::string();
}

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

Result<std::string> SocketPath(std::string_view address) {
  constexpr std::string_view kScheme = "unix://";
  if (!address.starts_with(kScheme) || address.size() == kScheme.size()) {
    return InvalidArgumentError("socket address \"" + std::string(address) +
                                "\" is not unix://<path>");
  }
  return std::string(address.substr(kScheme.size()));
}

}  // namespace hull::shim
