// Pod: the pod one shim server serves, and the home of everything pod-wide:
// its size (computed once, from the pause container's annotations, and read
// back from <bundle>/hull-pod-size.json wherever it was written), the
// server's place in the pod cgroup and the cleanup of it, the one backend of
// the pod (made by the factory the server is given, from the first
// container's runtime options), and the pod's containers.
//
// The server owns one Pod (loop thread only). The one-shot actions, which
// run before a server exists (`start`) or after it died (`delete`), use the
// static functions below, which keep the same records in the bundles.
// Ordering and records: docs/sizing.md.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/logging.h"
#include "base/status.h"
#include "oci/sizing.h"
#include "oci/spec.h"
#include "shim/backend/make_backend.h"
#include "shim/config/config.h"
#include "shim/pod/pod_cgroup.h"
#include "shim/pod/pod_cgroup_setup.h"

namespace hull::shim {

class Container;
struct ShimContext;

class Pod {
 public:
  // `placement`: where `start` put this server (ReadStartPlacement).
  Pod(ShimContext& ctx, BackendFactory factory, std::optional<PodCgroupPlacement> placement);
  // Drops the containers first, then the backend (which answers the calls
  // still running), then leaves the pod cgroup.
  ~Pod();
  Pod(const Pod&) = delete;
  Pod& operator=(const Pod&) = delete;

  // ---- containers ----
  // Takes `container`; AlreadyExists for an id the pod has.
  Result<Container*> Add(std::unique_ptr<Container> container);
  // Null when the pod has no container `id`.
  Container* Get(const std::string& id) const;
  // Drops container `id` on a later loop turn (never inside its own
  // callback) and releases it in the backend; the sandbox is torn down
  // when the last one goes, unless the Sandbox API holds it.
  void DropLater(const std::string& id);
  size_t container_count() const { return containers_.size(); }
  // True when every container left has been deleted and none is being
  // admitted (Shutdown may stop).
  bool AllDeleted() const;

  // ---- what a container needs at Create ----
  struct Admission {
    Backend* backend = nullptr;        // the pod's, owned by the pod
    std::optional<oci::PodSize> size;  // set for the pause container
  };
  // Admits container `id` of `bundle` with `spec`: for the pause container
  // the pod's size, and the pod cgroup prepared (when `start` did not, for a
  // pause container that reached a live server); for the others, the
  // cleanup record in their bundle. Makes the backend for the first
  // container (FailedPrecondition for a later one that asks for another
  // runtime) and prepares the sandbox before the first container is
  // created. Answers on a later loop turn. `sandbox_api`: `spec` is the
  // pod's own (CreateSandbox), handed to PrepareSandbox for a backend that
  // makes the pod's sandbox from it.
  void Admit(const std::string& id, const std::string& bundle, const oci::Spec& spec,
             const ShimConfig& config, std::function<void(Result<Admission>)> done,
             bool sandbox_api = false);

  // The Sandbox API holds the pod's sandbox from CreateSandbox to
  // ShutdownSandbox: while held, the sandbox outlives the pod's last
  // container; ReleaseSandbox tears it down (if it was prepared and no
  // container is left) and answers on a later loop turn.
  void HoldSandbox() { sandbox_held_ = true; }
  void ReleaseSandbox(Done done);

  // At server exit, before the pod is destroyed: calls `done` once no
  // sandbox teardown is due or under way (a vm backend powers its VM off and
  // answers when QEMU has exited). A sandbox that still holds live
  // containers is not waited for (the backend's destructor ends it).
  void WhenTornDown(std::function<void()> done);

  // At server exit: back to where the server came from, and no cgroup of
  // hull's left (logged, never fails).
  void Leave();
  const std::optional<PodCgroupPlacement>& placement() const { return placement_; }

  // ---- the one-shot actions ----
  // The pod's size for a pause container: read back from the bundle's
  // record when there is one, else computed with `policy`, logged (prefixed
  // with `who`) and recorded. nullopt for any other container.
  static Result<std::optional<oci::PodSize>> Size(const std::string& bundle, const oci::Spec& spec,
                                                  const oci::SizingPolicy& policy,
                                                  const Logger& log, std::string_view who);
  // The placement `start` recorded in the server's bundle (its working
  // directory), read when the server starts; nullopt for none.
  static std::optional<PodCgroupPlacement> ReadStartPlacement(const Logger& log);
  // `start` of a new server for a pause container: prepares the pod cgroup
  // (SetUpPodCgroup) and records it in the bundle; PlaceServer then moves
  // the server in, and Undo removes everything again if `start` fails.
  static Result<std::optional<PodCgroupSetup>> PrepareAtStart(
      const std::string& bundle, std::string_view who, const oci::Spec& spec,
      const ShimConfig& config, const std::optional<oci::PodSize>& size,
      const std::function<Result<std::string>()>& origin, const Logger& log);
  static Status PlaceServer(const PodCgroupSetup& setup, pid_t server);
  static void UndoStart(const std::string& bundle, const PodCgroupSetup& setup);
  // `delete` after a server died: removes the leaf and the pod cgroup hull
  // created that the record in `bundle` names, unless still in use. An
  // empty `cgroupfs` means the host's cgroup2 mount.
  static void CleanUpAfterServer(const std::string& bundle, const std::string& cgroupfs,
                                 std::string_view who, const Logger& log);

 private:
  // A confined server's spawner (docs/security.md) joins the server's
  // cgroup, wherever the server has just moved itself; nothing unconfined.
  Status SpawnerFollows();
  // The pod cgroup for a pause container that `start` did not prepare, or
  // the record for another container; see Admit.
  Status JoinPodCgroup(const std::string& id, const std::string& bundle, const oci::Spec& spec,
                       const ShimConfig& config, const std::optional<oci::PodSize>& size);
  Result<Backend*> BackendFor(const ShimConfig& config);

  ShimContext& ctx_;
  BackendFactory factory_;
  std::optional<PodCgroupPlacement> placement_;
  std::unique_ptr<Backend> backend_;
  // What backend_ was made from: every container of the pod must ask for the
  // same (a pod runs one runtime).
  RuntimeOptions backend_options_;
  int admitting_ = 0;  // Admit calls not yet answered
  // The sandbox's one life: none -> preparing (the first admission's
  // PrepareSandbox) -> ready -> tearing down (after the last container, or
  // at ReleaseSandbox) -> none. Admissions during preparing wait for it;
  // during tearing down they are refused.
  enum class SandboxPhase { kNone, kPreparing, kReady, kTearingDown };
  SandboxPhase sandbox_phase_ = SandboxPhase::kNone;
  std::vector<std::function<void(Status)>> prepare_waiters_;
  std::vector<std::function<void()>> torn_down_waiters_;  // WhenTornDown
  void TornDown();
  bool sandbox_held_ = false;  // HoldSandbox
  std::map<std::string, std::unique_ptr<Container>> containers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
