// The `delete` action (docs/start-delete.md): clean up after a task whose
// server is gone or done — force-delete the container in the runtime, unmount
// the rootfs, remove the pod cgroup leftovers of a killed server — and report
// it as killed. containerd runs it after every task
// deletion and after a shim dies, so it is idempotent, quick, and quiet:
// stdout carries only the DeleteResponse, and stderr stays empty on success.
// Blocking; runs once in a short-lived process.
#pragma once

#include <ctime>
#include <functional>
#include <string>

#include "base/logging.h"
#include "base/status.h"
#include "shim/backend/make_backend.h"
#include "shim/cli/flags.h"

namespace hull::shim {

struct DeleteRequest {
  CommandLine cmd;  // ApplyEnvironmentDefaults already applied
  Environment env;
  std::string bundle;  // -bundle, else the working directory
  // The backend's blocking force-delete (a seam: main passes ForceDelete).
  std::function<Status(const RuntimeOptions&, const std::string& ns, const std::string& bundle,
                       const std::string& id)>
      force_delete;
  // The clock for exited_at (a seam for tests).
  std::function<timespec()> now;
  // The cgroup2 mount for the pod cgroup record; empty: found through
  // /proc/self/mountinfo (a seam for tests).
  std::string cgroupfs;
};

// The serialized containerd.task.v2.DeleteResponse{pid from init.pid (0 if
// none), exit_status 137, exited_at now}. When the bundle holds a pod cgroup
// record (a pause container's, docs/sizing.md), the empty <pod>/hull-shim
// leaf and a pod cgroup hull created and nothing uses any more are removed;
// a live server's are left to it. Failures to force-delete or to remove
// cgroups are only logged; a bundle that is already gone is success. Fails only on bad flags
// or when the rootfs stays mounted.
Result<std::string> RunDelete(const DeleteRequest& req, const Logger& log);

}  // namespace hull::shim
