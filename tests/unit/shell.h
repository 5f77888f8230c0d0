// A shell command's combined stdout and stderr, for unit tests that set up
// or inspect the machine (network namespaces, links) with ip and tc.
#pragma once

#include <cstdio>
#include <string>

namespace hull::test_util {

inline std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace hull::test_util
