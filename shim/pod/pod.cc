#include "shim/pod/pod.h"

#include <unistd.h>

#include <utility>

#include "cgroups/cgroups.h"
#include "oci/annotations.h"
#include "shim/container.h"
#include "shim/context.h"
#include "shim/pod/pod_size.h"

namespace hull::shim {

Pod::Pod(ShimContext& ctx, BackendFactory factory, std::optional<PodCgroupPlacement> placement)
    : ctx_(ctx), factory_(std::move(factory)), placement_(std::move(placement)) {}

Pod::~Pod() {
  *alive_ = false;
  containers_.clear();
  backend_.reset();
}

// ---- containers ----

Result<Container*> Pod::Add(std::unique_ptr<Container> container) {
  const std::string id = container->id();
  auto [it, added] = containers_.emplace(id, std::move(container));
  if (!added) return AlreadyExistsError("container " + id + " already exists");
  return it->second.get();
}

Container* Pod::Get(const std::string& id) const {
  auto it = containers_.find(id);
  return it == containers_.end() ? nullptr : it->second.get();
}

bool Pod::AllDeleted() const {
  if (admitting_ > 0) return false;
  for (const auto& [id, container] : containers_) {
    if (!container->deleted()) return false;
  }
  return true;
}

void Pod::DropLater(const std::string& id) {
  std::weak_ptr<bool> alive = alive_;
  ctx_.loop.Post([this, alive, id] {
    if (alive.expired()) return;
    containers_.erase(id);
    if (backend_) backend_->Release(id);
    if (!containers_.empty() || admitting_ > 0 || sandbox_held_) return;
    if (sandbox_phase_ != SandboxPhase::kReady) return;
    sandbox_phase_ = SandboxPhase::kTearingDown;
    backend_->TeardownSandbox([this, alive](Status status) {
      if (alive.expired()) return;
      if (!status.ok()) ctx_.log.Warn("pod: tear down the sandbox: {}", status.ToString());
      TornDown();
    });
  });
}

void Pod::TornDown() {
  sandbox_phase_ = SandboxPhase::kNone;
  std::vector<std::function<void()>> waiters;
  waiters.swap(torn_down_waiters_);
  for (auto& done : waiters) done();
}

void Pod::WhenTornDown(std::function<void()> done) {
  // Due: the sandbox is up and every container is deleted (DropLater tears
  // it down on a later loop turn).
  const bool due = sandbox_phase_ == SandboxPhase::kReady && !sandbox_held_ && AllDeleted();
  if (sandbox_phase_ != SandboxPhase::kTearingDown && !due) {
    return ctx_.loop.Post(std::move(done));
  }
  torn_down_waiters_.push_back(std::move(done));
}

void Pod::ReleaseSandbox(Done done) {
  sandbox_held_ = false;
  if (!containers_.empty() || sandbox_phase_ != SandboxPhase::kReady) {
    return ctx_.loop.Post([done = std::move(done)] { done(Status::Ok()); });
  }
  sandbox_phase_ = SandboxPhase::kTearingDown;
  std::weak_ptr<bool> alive = alive_;
  backend_->TeardownSandbox([this, alive, done = std::move(done)](Status status) {
    if (!alive.expired()) TornDown();
    done(std::move(status));
  });
}

// ---- admission ----

Result<Backend*> Pod::BackendFor(const ShimConfig& config) {
  if (backend_) {
    if (config.runtime != backend_options_) {
      return FailedPreconditionError("the pod runs its containers with " + backend_->name() +
                                     "; a container of it cannot use runtime " +
                                     config.runtime.binary_name + " or other runtime options");
    }
    return backend_.get();
  }
  HULL_ASSIGN_OR_RETURN(backend_, factory_(config.runtime));
  backend_options_ = config.runtime;
  return backend_.get();
}

void Pod::Admit(const std::string& id, const std::string& bundle, const oci::Spec& spec,
                const ShimConfig& config, std::function<void(Result<Admission>)> done,
                bool sandbox_api) {
  // Counted until answered: a container being admitted is not deleted.
  ++admitting_;
  done = [this, alive = std::weak_ptr<bool>(alive_),
          done = std::move(done)](Result<Admission> admission) {
    if (!alive.expired()) --admitting_;
    done(std::move(admission));
  };
  auto fail = [this, &done](Status status) {
    ctx_.loop.Post([done = std::move(done), status = std::move(status)] { done(status); });
  };
  Result<std::optional<oci::PodSize>> size =
      Size(bundle, spec, config.sizing.policy, ctx_.log, "create " + id);
  if (!size) return fail(size.error());
  Status joined = JoinPodCgroup(id, bundle, spec, config, *size);
  if (!joined.ok()) return fail(joined);
  Result<Backend*> backend = BackendFor(config);
  if (!backend) return fail(backend.error());
  Admission admission{.backend = *backend, .size = std::move(*size)};
  switch (sandbox_phase_) {
    case SandboxPhase::kReady:
      return ctx_.loop.Post([done = std::move(done), admission = std::move(admission)] {
        done(std::move(admission));
      });
    case SandboxPhase::kPreparing:
      // Another container's admission prepares it: this one waits for that.
      prepare_waiters_.push_back(
          [done = std::move(done), admission = std::move(admission)](Status status) mutable {
            if (!status.ok()) return done(status);
            done(std::move(admission));
          });
      return;
    case SandboxPhase::kTearingDown:
      return fail(FailedPreconditionError("the pod's sandbox is being torn down"));
    case SandboxPhase::kNone: break;
  }
  // A pod that is one container (no sandbox annotations: `ctr run`) gets
  // the policy's default size for its sandbox (a VM backend boots with it).
  SandboxRequest req{.id = id,
                     .bundle = bundle,
                     .size = admission.size ? admission.size
                                            : oci::ComputePodSize(oci::SizeSource::kNone, {},
                                                                  nullptr, config.sizing.policy)};
  req.spec = spec;
  Result<std::optional<std::string>> pod_cgroup =
      PodCgroupPath(spec.CgroupsPath(), config.runtime.systemd_cgroup);
  if (pod_cgroup) req.pod_cgroup = *pod_cgroup;
  req.create_sandbox_process = sandbox_api;
  std::weak_ptr<bool> alive = alive_;
  sandbox_phase_ = SandboxPhase::kPreparing;
  (*backend)->PrepareSandbox(req, [this, alive, admission = std::move(admission),
                                   done = std::move(done)](Status status) mutable {
    if (alive.expired()) return done(NotFoundError("pod deleted"));
    if (!status.ok()) status = status.WithContext("prepare the pod's sandbox");
    sandbox_phase_ = status.ok() ? SandboxPhase::kReady : SandboxPhase::kNone;
    std::vector<std::function<void(Status)>> waiters;
    waiters.swap(prepare_waiters_);
    if (status.ok()) {
      done(std::move(admission));
    } else {
      done(status);
    }
    for (auto& waiter : waiters) waiter(status);
  });
}

Status Pod::JoinPodCgroup(const std::string& id, const std::string& bundle, const oci::Spec& spec,
                          const ShimConfig& config, const std::optional<oci::PodSize>& size) {
  if (!size) {
    // Another container of the pod: its bundle gets the server's record too,
    // so that whichever `delete` runs last after a crash removes the pod
    // cgroup hull created (the pause container's may run first).
    if (placement_ && placement_->created_pod) {
      Status written = WritePodCgroupFile(bundle, *placement_, ctx_.reaper.spawner());
      if (!written.ok()) ctx_.log.Warn("create {}: {}", id, written.ToString());
    }
    return Status::Ok();
  }
  // `start` prepared it when it spawned this server for this bundle.
  if (::access((bundle + "/" + std::string(kPodCgroupFile)).c_str(), F_OK) == 0) {
    return Status::Ok();
  }
  if (placement_) {
    ctx_.log.Warn("create {}: pod cgroup left alone: this server is in pod cgroup {} already", id,
                  placement_->pod);
    return Status::Ok();
  }
  auto own_cgroup = []() -> Result<std::string> {
    HULL_ASSIGN_OR_RETURN(cgroups::ProcessCgroups own, cgroups::ReadProcessCgroups(::getpid()));
    if (!own.unified) return FailedPreconditionError("this process has no cgroup v2 path");
    return *own.unified;
  };
  HULL_ASSIGN_OR_RETURN(
      std::optional<PodCgroupSetup> setup,
      SetUpPodCgroup("create " + id, spec.CgroupsPath(), config, size, own_cgroup, ctx_.log));
  if (!setup) return Status::Ok();
  auto undo = [&] {
    LeavePodCgroup(setup->placement, ::getpid(), setup->cgroupfs, [this] {
      return SpawnerFollows();
    }).IgnoreError();
  };
  if (!setup->placement.shim_leaf.empty()) {
    Status placed = PlaceShim(setup->placement, ::getpid(), setup->cgroupfs);
    if (placed.ok()) placed = SpawnerFollows();
    if (!placed.ok()) {
      undo();
      return placed.WithContext("place the shim in the pod cgroup");
    }
  }
  // `delete` cleans up from it if this server is killed.
  Status written = WritePodCgroupFile(bundle, setup->placement, ctx_.reaper.spawner());
  if (!written.ok()) {
    undo();
    return written;
  }
  placement_ = std::move(setup->placement);
  return Status::Ok();
}

Status Pod::SpawnerFollows() {
  SpawnerClient* spawner = ctx_.reaper.spawner();
  if (spawner == nullptr) return Status::Ok();
  Result<SpawnerReply> followed = spawner->Call(kFollowCgroupSpawnerEntry, "", {});
  return followed ? Status::Ok() : followed.error();
}

void Pod::Leave() {
  if (!placement_) return;
  Result<cgroups::Host> host = cgroups::DetectHost();
  if (!host || !host->unified) {
    ctx_.log.Warn("pod cgroup {}: cannot find the cgroup2 mount to leave it", placement_->pod);
    return;
  }
  Status left = LeavePodCgroup(*placement_, ::getpid(), host->unified->mount_point,
                               [this] { return SpawnerFollows(); });
  if (!left.ok()) {
    ctx_.log.Warn("pod cgroup {}: {}", placement_->pod, left.ToString());
  } else {
    ctx_.log.Info("pod cgroup {}: left{}", placement_->pod,
                  placement_->created_pod ? " and removed" : "");
  }
  placement_.reset();
}

// ---- the one-shot actions ----

Result<std::optional<oci::PodSize>> Pod::Size(const std::string& bundle, const oci::Spec& spec,
                                              const oci::SizingPolicy& policy, const Logger& log,
                                              std::string_view who) {
  std::map<std::string, std::string> annotations = spec.Annotations();
  if (!IsSandboxContainer(annotations)) return std::optional<oci::PodSize>();
  Result<oci::PodSize> recorded = ReadPodSizeFile(bundle + "/" + std::string(kPodSizeFile));
  if (recorded) return std::optional<oci::PodSize>(std::move(*recorded));
  if (recorded.error().code() != Code::kNotFound) {
    log.Warn("{}: {}; computing the pod size again", who, recorded.error().ToString());
  }
  return RecordPodSize(bundle, annotations, policy, log, who);
}

std::optional<PodCgroupPlacement> Pod::ReadStartPlacement(const Logger& log) {
  Result<PodCgroupPlacement> placement = ReadPodCgroupFile(std::string(kPodCgroupFile));
  if (placement) return *placement;
  if (placement.error().code() != Code::kNotFound) {
    log.Warn("pod cgroup: {}", placement.error().ToString());
  }
  return std::nullopt;
}

Result<std::optional<PodCgroupSetup>> Pod::PrepareAtStart(
    const std::string& bundle, std::string_view who, const oci::Spec& spec,
    const ShimConfig& config, const std::optional<oci::PodSize>& size,
    const std::function<Result<std::string>()>& origin, const Logger& log) {
  HULL_ASSIGN_OR_RETURN(std::optional<PodCgroupSetup> setup,
                        SetUpPodCgroup(who, spec.CgroupsPath(), config, size, origin, log));
  if (!setup) return setup;
  // Before the server starts: it reads the record to leave at exit.
  Status written = WritePodCgroupFile(bundle, setup->placement);
  if (!written.ok()) {
    UndoStart(bundle, *setup);
    return written;
  }
  return setup;
}

Status Pod::PlaceServer(const PodCgroupSetup& setup, pid_t server) {
  if (setup.placement.shim_leaf.empty()) return Status::Ok();
  return PlaceShim(setup.placement, server, setup.cgroupfs)
      .WithContext("place the shim in the pod cgroup");
}

void Pod::UndoStart(const std::string& bundle, const PodCgroupSetup& setup) {
  // The server is gone: only the leaf and a pod cgroup hull made remain.
  RemovePlacementCgroups(setup.placement, setup.cgroupfs).IgnoreError();
  ::unlink((bundle + "/" + std::string(kPodCgroupFile)).c_str());
}

void Pod::CleanUpAfterServer(const std::string& bundle, const std::string& cgroupfs_in,
                             std::string_view who, const Logger& log) {
  const std::string record = bundle + "/" + std::string(kPodCgroupFile);
  Result<PodCgroupPlacement> placement = ReadPodCgroupFile(record);
  if (!placement) {
    if (placement.error().code() != Code::kNotFound) {
      log.Warn("{}: {}", who, placement.error().ToString());
    }
    return;
  }
  std::string cgroupfs = cgroupfs_in;
  if (cgroupfs.empty()) {
    Result<cgroups::Host> host = cgroups::DetectHost();
    if (!host || !host->unified) {
      log.Warn("{}: pod cgroup {}: no cgroup2 mount to clean it up", who, placement->pod);
      return;
    }
    cgroupfs = host->unified->mount_point;
  }
  Status removed = RemoveLeftPodCgroups(*placement, cgroupfs);
  if (removed.code() == Code::kFailedPrecondition) {
    log.Info("{}: {}", who, removed.message());
  } else if (!removed.ok()) {
    log.Warn("{}: {}", who, removed.ToString());
  } else {
    log.Info("{}: pod cgroup {}: {} removed", who, placement->pod,
             placement->created_pod ? "shim leaf and pod cgroup" : "shim leaf");
  }
}

}  // namespace hull::shim
