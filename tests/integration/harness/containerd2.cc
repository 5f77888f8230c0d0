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

// Unpacks `tarball` into <build>/containerd-<version> unless an unpacked copy at
// least as new is there. Unpacks beside it and renames, so a test killed
// half-way leaves no half-filled directory behind.
std::string Unpack(const std::string& tarball, const std::string& version, std::string* why_not) {
  const std::string dir = BinaryDir() + "/containerd-" + version;
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
  const std::string version = Containerd2Version();
  if (version != "2.3.4" && version != "2.1.5") {
    *why_not = std::string("containerd 2.x: $") + kContainerd2VersionEnv + "=" + version +
               " is neither 2.3.4 nor 2.1.5";
    return "";
  }
  const std::string tarball = fs::path(SourceDir()).parent_path().string() + "/" +
                              (version == "2.1.5" ? kContainerd21Tarball : kContainerd23Tarball);
  if (::access(tarball.c_str(), R_OK) != 0) {
    *why_not = std::string("containerd 2.x tests skipped: no ") + tarball + " and no $" +
               kContainerd2DirEnv + " (docs/testing.md)";
    return "";
  }
  return Unpack(tarball, version, why_not);
}

}  // namespace

std::string Containerd2Version() {
  const char* v = std::getenv(kContainerd2VersionEnv);
  if (v != nullptr && *v != '\0') return v;
  const char* dir = std::getenv(kContainerd2DirEnv);
  return dir != nullptr && *dir != '\0' ? "2.x" : "2.3.4";
}

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
