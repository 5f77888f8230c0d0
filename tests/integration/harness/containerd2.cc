#include "tests/integration/harness/containerd2.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "tests/integration/harness/command.h"
#include "tests/integration/harness/host.h"

namespace hull::itest {

namespace fs = std::filesystem;

namespace {

bool HasBinaries(const std::string& dir) {
  return ::access((dir + "/bin/containerd").c_str(), X_OK) == 0 &&
         ::access((dir + "/bin/ctr").c_str(), X_OK) == 0;
}

// Unpacks `tarball` into <build>/containerd-2.1.5 unless an unpacked copy at
// least as new is there. Unpacks beside it and renames, so a test killed
// half-way leaves no half-filled directory behind.
std::string Unpack(const std::string& tarball, std::string* why_not) {
  const std::string dir = BinaryDir() + "/containerd-2.1.5";
  std::error_code ec;
  if (HasBinaries(dir) &&
      fs::last_write_time(dir + "/bin/containerd", ec) >= fs::last_write_time(tarball, ec)) {
    return dir;
  }
  const std::string staging = dir + ".unpack-" + std::to_string(::getpid());
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  CommandResult r =
      RunCommand({"tar", "-xzf", tarball, "-C", staging, "--touch"}, std::chrono::minutes(2));
  if (!r.ok() || !HasBinaries(staging)) {
    fs::remove_all(staging, ec);
    *why_not = "containerd 2.x: could not unpack " + tarball + ": " + r.Describe();
    return "";
  }
  fs::remove_all(dir, ec);
  fs::rename(staging, dir, ec);
  if (ec) {
    *why_not = "containerd 2.x: rename " + staging + ": " + ec.message();
    return "";
  }
  return dir;
}

std::string Find(std::string* why_not) {
  if (const char* env = std::getenv(kContainerd2DirEnv); env != nullptr && *env != '\0') {
    if (HasBinaries(env)) return env;
    *why_not = std::string("containerd 2.x: $") + kContainerd2DirEnv + "=" + env +
               " has no executable bin/containerd and bin/ctr";
    return "";
  }
  const std::string tarball =
      fs::path(SourceDir()).parent_path().string() + "/" + kContainerd2Tarball;
  if (::access(tarball.c_str(), R_OK) != 0) {
    *why_not = std::string("containerd 2.x tests skipped: no ") + tarball + " and no $" +
               kContainerd2DirEnv + " (docs/testing.md)";
    return "";
  }
  return Unpack(tarball, why_not);
}

}  // namespace

std::string Containerd2Dir(std::string* why_not) {
  static std::string why;
  static const std::string dir = Find(&why);
  if (dir.empty()) *why_not = why;
  return dir;
}

bool FullMatrix() {
  const char* v = std::getenv("HULL_TEST_FULL");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace hull::itest
