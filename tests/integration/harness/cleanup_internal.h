// Teardown for PrivateContainerd: of one instance's directory and what its
// shims, runc and CNI left outside it (instance_teardown.cc); the pieces that
// does it with (kill, unmount, remove without crossing mounts); and the host
// directories every containerd shares (SharedHostDirs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness/spawn_internal.h"

namespace hull::itest::internal {

// Every instance's private directory is kInstancePrefix + 6 random characters.
inline constexpr const char* kInstancePrefix = "/tmp/hull-itest-";

// The CNI network (and bridge) name of the instance in `dir`.
std::string CniNetworkFor(const std::string& dir);

// Removes what the instance in `dir` left, its daemon gone or not: kills
// every process naming `dir` (containerd, shims), its containers (runc
// state, init.pid), the shims' sockets outside `dir`,
// unmounts everything under it, deletes its CNI bridge and cache entries,
// and removes `dir`. Problems go to stderr.
void TearDownInstance(const std::string& dir);

// TearDownInstance for every instance directory on the host. Only while no
// instance is alive (SharedHostDirs::Join's when_alone).
void SweepStaleInstances();

// SIGKILLs each pid (skipping 0, 1, negative ones and the caller) and waits until all are gone (or
// zombies, which only their parent can reap). True when none is left alive.
bool KillAndWait(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout);

// Unmounts every mount at or under `prefix`, deepest first, falling back to a
// lazy unmount for busy ones. Returns the mount points still there.
std::vector<std::string> UnmountUnder(const std::string& prefix);

// rm -rf that never descends into another filesystem, so a mount that could
// not be removed keeps its contents (and the directories above it).
bool RemoveTree(const std::string& path, std::string* error);

// Directories outside the private dir that the stock shim, runc and the CNI
// plugins create and every containerd on the host shares: /run/containerd/
// {s,runc/<ns>} (and fifo/, for ctr run without Ctr()), /var/lib/cni/..., cgroup directories named
// after the namespaces tests use ("default", "k8s.io", "hull-itest"). No single instance may remove
// them while another still runs, so live instances hold a shared flock on /tmp/hull-itest.lock; the
// first to join records which of these directories existed, and the last to leave removes the ones
// that have appeared since, if empty (rmdir only: a directory in use stays). A record left by a run
// that died is kept: it still tells what was there before.
class SharedHostDirs {
 public:
  // Blocks while a last leaver cleans up. `when_alone` runs, under the
  // exclusive lock, when no other instance is alive. nullptr when the lock
  // file cannot be used (then nothing shared is cleaned).
  static std::unique_ptr<SharedHostDirs> Join(const std::function<void()>& when_alone);
  ~SharedHostDirs();
  SharedHostDirs(const SharedHostDirs&) = delete;
  SharedHostDirs& operator=(const SharedHostDirs&) = delete;

  static constexpr const char* kLockPath = "/tmp/hull-itest.lock";

 private:
  explicit SharedHostDirs(Fd lock) : lock_(std::move(lock)) {}
  Fd lock_;
};

}  // namespace hull::itest::internal
