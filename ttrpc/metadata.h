// Metadata: the key/value pairs a ttrpc Request carries (containerd sends the
// namespace as `containerd-namespace-ttrpc`). A key may repeat; order is the
// sender's and not significant. Plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hull::ttrpc {

using Metadata = std::vector<std::pair<std::string, std::string>>;

// The first value under `key`, compared ASCII case-insensitively (Go lowercases
// keys it sets but stores wire keys as they came).
std::optional<std::string_view> FindMetadata(const Metadata& metadata, std::string_view key);

}  // namespace hull::ttrpc
