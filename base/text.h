// Small string helpers shared by the parsers of kernel files and of the
// runtimes' output. Pure string work.
#pragma once

#include <string_view>

namespace hull {

// `s` without its leading and trailing whitespace (space, tab, newline,
// carriage return, vertical tab, form feed).
std::string_view TrimSpace(std::string_view s);

}  // namespace hull
