// TempDir: a temporary directory for one test (/tmp/hull-test-XXXXXX, 0700),
// removed with everything in it when the object goes away. The one fixture
// for it: tests do not call mkdtemp themselves.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace hull::testing {

class TempDir {
 public:
  // `prefix` names the test's directories in /tmp.
  explicit TempDir(std::string prefix = "hull-test") {
    std::string templ = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty when mkdtemp failed (tests check ok()).
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace hull::testing
