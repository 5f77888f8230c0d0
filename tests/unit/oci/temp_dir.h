// A temporary directory for one test, removed with its contents when the
// object goes away.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

namespace hull::oci::testing {

class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/hull-oci-test-XXXXXX";
    if (::mkdtemp(path) != nullptr) path_ = path;
  }
  ~TempDir() {
    if (path_.empty()) return;
    ::nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace hull::oci::testing
