// hull's version and source revision, as -v and -info report them. The build
// defines HULL_VERSION (the CMake project version) and HULL_REVISION (git
// describe/rev-parse at configure time, empty when unknown).
#pragma once

#include <string_view>

#ifndef HULL_VERSION
#define HULL_VERSION "unknown"
#endif
#ifndef HULL_REVISION
#define HULL_REVISION ""
#endif

namespace hull::shim {

inline constexpr std::string_view kRuntimeName = "io.containerd.hull.v2";
inline constexpr std::string_view kBinaryName = "containerd-shim-hull-v2";
inline constexpr std::string_view kVersion = HULL_VERSION;
inline constexpr std::string_view kRevision = HULL_REVISION;

}  // namespace hull::shim
