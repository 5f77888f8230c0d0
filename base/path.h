// Path strings with Go's path.Clean / path.Join / path.Base semantics, which
// containerd uses when it names sockets and cgroups, so hull computes the same
// strings. Pure string work: nothing here touches the filesystem.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace hull {

// Lexically cleaned: no "//", ".", or ".." that can be resolved; "" is ".".
std::string CleanPath(std::string_view path);
// The non-empty elements joined with "/" and cleaned; "" when all are empty.
std::string JoinPath(std::initializer_list<std::string_view> elements);
// The last element, trailing slashes ignored; "" is ".", "/" is "/".
std::string BasePath(std::string_view path);

}  // namespace hull
