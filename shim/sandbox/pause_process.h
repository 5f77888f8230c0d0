// PauseRunner: what holds a Sandbox-API pod's namespaces for runc and crun.
// containerd's shim sandboxer sends no rootfs and no pause image (CRI never
// sets CreateSandboxRequest.rootfs), so hull does not run a pause container:
// it clones a pause process of its own into the namespaces the pause spec
// asks for (joining the CNI network namespace by path), sets the spec's
// hostname and waits for SIGKILL. The app containers join it by
// /proc/<pid>/ns/*, as they would join a pause container. See
// docs/sandbox-api.md. A seam of SandboxService: unit tests pass a fake.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>

#include "base/reaper.h"
#include "base/spawner.h"
#include "base/status.h"
#include "oci/spec.h"

namespace hull::shim {

class PauseRunner {
 public:
  virtual ~PauseRunner() = default;
  // Starts the pause process for `spec` (its namespaces and hostname);
  // `on_exit(exit status)` runs once, on the loop, when it ends.
  virtual Result<pid_t> Start(const oci::Spec& spec, std::function<void(int)> on_exit) = 0;
  // Ends it (SIGKILL); its exit still reaches `on_exit`.
  virtual void Kill(pid_t pid) = 0;
};

// The pause process as a spawner entry (base/spawner.h): a confined server
// has the spawner clone it. Registered at index kPauseSpawnerEntry.
inline constexpr uint32_t kPauseSpawnerEntry = 0;
SpawnerEntry PauseSpawnerEntry();

// The production runner: clone(2) of this process (or of the reaper's
// spawner, when it has one), reaped by `reaper`.
std::unique_ptr<PauseRunner> MakeHostPauseRunner(Reaper& reaper);

}  // namespace hull::shim
