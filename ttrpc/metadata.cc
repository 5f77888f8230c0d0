#include "ttrpc/metadata.h"

#include <algorithm>
#include <cctype>

namespace hull::ttrpc {

std::optional<std::string_view> FindMetadata(const Metadata& metadata, std::string_view key) {
  auto equal = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  for (const auto& [k, v] : metadata) {
    if (std::ranges::equal(k, key, equal)) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace hull::ttrpc
