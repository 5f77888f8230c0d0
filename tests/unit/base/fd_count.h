// Counts this process's open descriptors, for leak checks in tests.
#pragma once

#include <dirent.h>

namespace hull::testing {

inline int CountOpenFds() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

}  // namespace hull::testing
