// For unit tests that mount as root through a real spawner: a private mount
// namespace of the test process, so nothing they mount reaches the host, the
// mounts at or below a path, and the spawner's end. Test code only.
#pragma once

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/mountinfo.h"
#include "base/spawner.h"

namespace hull::testing {

// "" once the process is in a mount namespace of its own with every mount
// private; why not otherwise (the test skips).
inline std::string EnterPrivateMountNamespace() {
  if (::geteuid() != 0) return "needs root (mount(2))";
  if (::unshare(CLONE_NEWNS) != 0) return "cannot unshare the mount namespace";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return "cannot make / private";
  }
  return "";
}

inline std::vector<std::string> MountsBelow(const std::string& path) {
  std::vector<std::string> out;
  auto table = ReadMountInfo();
  EXPECT_TRUE(table.has_value());
  if (!table) return out;
  for (const auto& m : *table) {
    if (m.mount_point == path || m.mount_point.starts_with(path + "/")) {
      out.push_back(m.mount_point);
    }
  }
  return out;
}

// Closes the spawner's channel (it exits on EOF) and reaps it.
inline void StopSpawner(std::unique_ptr<SpawnerClient>& spawner) {
  if (!spawner) return;
  pid_t pid = spawner->pid();
  spawner.reset();
  ::waitpid(pid, nullptr, 0);
}

}  // namespace hull::testing
