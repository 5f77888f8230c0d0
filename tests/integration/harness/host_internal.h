// Small host helpers private to the harness.
#pragma once

#include <string>

namespace hull::itest::internal {

// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Writes `content` to `path` (truncating). False on failure.
bool WriteFile(const std::string& path, const std::string& content);

// `s` without trailing newlines and spaces.
std::string Trim(std::string s);

// The first executable `name` in $PATH, or "".
std::string FindInPath(const std::string& name);

// Undoes the octal escapes (\040 for space...) of /proc/*/mountinfo fields.
std::string UnescapeMountPath(const std::string& s);

// True when `path` is `prefix` or lies below it (by whole components).
bool IsAtOrUnder(const std::string& path, const std::string& prefix);

}  // namespace hull::itest::internal
