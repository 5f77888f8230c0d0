#include "shim/container.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/file_util.h"
#include "base/spawn.h"
#include "cgroups/cgroups.h"
#include "containerd/events/task.pb.h"
#include "containerd/runc/v1/options.pb.h"
#include "oci/spec.h"
#include "shim/mount/mount.h"
#include "shim/pod/pod_cgroup.h"
#include "shim/pod/pod_cgroup_setup.h"
#include "shim/pod/pod_size.h"

namespace hull::shim {
namespace tv2 = containerd::task::v2;
namespace ev = containerd::events;

namespace {

// How long Delete waits for a process's output to be copied out.
constexpr std::chrono::milliseconds kDrainTimeout(10000);

containerd::v1::types::Status StatusEnum(ProcessState state) {
  switch (state) {
    case ProcessState::kCreated: return containerd::v1::types::CREATED;
    case ProcessState::kRunning: return containerd::v1::types::RUNNING;
    case ProcessState::kPausing: return containerd::v1::types::PAUSING;
    case ProcessState::kPaused: return containerd::v1::types::PAUSED;
    case ProcessState::kStopped:
    case ProcessState::kDeleted: return containerd::v1::types::STOPPED;
  }
  return containerd::v1::types::UNKNOWN;
}

// `done`, answered with `fallback` if it is dropped uncalled: the backend,
// and with it the callbacks of runtime calls still running, goes when a
// deleted container is dropped. A Kill whose `runc kill` is still running
// when the killed init's exit has led containerd to delete the container
// must still get its answer (CRI's StopPodSandbox failed on "ttrpc: no
// reply" otherwise).
Container::Done AnswerIfDropped(Container::Done done, Status fallback) {
  struct Guard {
    Container::Done done;
    Status fallback;
    ~Guard() {
      if (done) done(std::move(fallback));
    }
  };
  auto guard = std::make_shared<Guard>();
  guard->done = std::move(done);
  guard->fallback = std::move(fallback);
  return [guard](Status status) {
    Container::Done answer = std::exchange(guard->done, nullptr);
    if (answer) answer(std::move(status));
  };
}

}  // namespace

Container::Container(ShimContext& ctx, std::string id, std::string bundle, ShimConfig options)
    : ctx_(ctx), id_(std::move(id)), bundle_(std::move(bundle)), options_(std::move(options)) {}

Container::~Container() {
  *alive_ = false;
}

Result<Process*> Container::Find(const std::string& exec_id) const {
  if (exec_id.empty()) return init_.get();
  auto it = execs_.find(exec_id);
  if (it == execs_.end()) return NotFoundError("process " + exec_id + " does not exist in " + id_);
  return it->second.get();
}

std::string Container::ExecPath(const std::string& exec_id, std::string_view suffix) const {
  return bundle_ + "/" + exec_id + std::string(suffix);
}

Result<pid_t> Container::ReadPidFile(const std::string& path) const {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  char* end = nullptr;
  long pid = std::strtol(text.c_str(), &end, 10);
  if (pid <= 0 || end == text.c_str()) return InternalError("pid file " + path + ": no pid in it");
  return static_cast<pid_t>(pid);
}

Status Container::Unmount() {
  if (!rootfs_mounted_) return Status::Ok();
  HULL_RETURN_IF_ERROR(UnmountAll(bundle_ + "/rootfs"));
  rootfs_mounted_ = false;
  return Status::Ok();
}

// ---- Create ----

void Container::Create(const tv2::CreateTaskRequest& request, Reply<pid_t> done) {
  auto spec = oci::Spec::Load(bundle_ + "/config.json");
  if (!spec) return FailCreate(spec.error(), std::move(done));
  // A pause container: the pod's size, for the log and the VM backend.
  auto pod_size = RecordPodSize(bundle_, spec->Annotations(), options_.sizing.policy, ctx_.log,
                                "create " + id_);
  if (!pod_size) return FailCreate(pod_size.error(), std::move(done));
  Status pod_cgroup = JoinPodCgroup(*spec, *pod_size);
  if (!pod_cgroup.ok()) return FailCreate(pod_cgroup, std::move(done));
  // Only a pid namespace of its own (no path to join) dies with the init.
  shares_pid_namespace_ = true;
  for (const auto& ns : spec->Namespaces()) {
    if (ns.type == "pid" && ns.path.empty()) shares_pid_namespace_ = false;
  }

  auto backend = MakeBackend(ctx_.loop, ctx_.reaper, options_.runtime, ctx_.ns, bundle_);
  if (!backend) return FailCreate(backend.error(), std::move(done));
  backend_ = std::move(*backend);

  Status mounted = MountRootfs(request.rootfs(), bundle_ + "/rootfs");
  if (!mounted.ok()) return FailCreate(mounted.WithContext("mount rootfs"), std::move(done));
  rootfs_mounted_ = !request.rootfs().empty();

  init_ = std::make_unique<Process>(id_, "",
                                    StdioConfig{.stdin_path = request.stdin(),
                                                .stdout_path = request.stdout(),
                                                .stderr_path = request.stderr(),
                                                .terminal = request.terminal()});
  ev::TaskCreate event;
  event.set_container_id(id_);
  event.set_bundle(bundle_);
  *event.mutable_rootfs() = request.rootfs();
  event.mutable_io()->set_stdin(request.stdin());
  event.mutable_io()->set_stdout(request.stdout());
  event.mutable_io()->set_stderr(request.stderr());
  event.mutable_io()->set_terminal(request.terminal());
  event.set_checkpoint(request.checkpoint());

  std::weak_ptr<bool> alive = alive_;
  ProcessIo::Create(
      ctx_.loop, ctx_.reaper, init_->stdio(),
      StdioContext{.container_id = id_,
                   .ns = ctx_.ns,
                   .io_uid = options_.io_uid,
                   .io_gid = options_.io_gid,
                   .work_dir = bundle_,
                   .on_output_error = LogOutputErrors(ctx_.log)},
      [this, alive, event = std::move(event), checkpoint = request.checkpoint(),
       done = std::move(done)](Result<std::unique_ptr<ProcessIo>> io) mutable {
        if (alive.expired()) return;
        if (!io) return FailCreate(io.error().WithContext("stdio"), std::move(done));
        init_->set_io(std::move(*io));
        CreateRequest req{.id = id_,
                          .bundle = bundle_,
                          .pid_file = bundle_ + "/init.pid",
                          .stdio = init_->io()->runtime_stdio(),
                          .checkpoint = checkpoint};
        backend_->Create(req, [this, alive, event = std::move(event), restore = !checkpoint.empty(),
                               done = std::move(done)](Status status) mutable {
          if (alive.expired()) return;
          if (!status.ok()) {
            init_->io()->RuntimeFailed();
            init_->set_io(nullptr);
            return FailCreate(status, std::move(done));
          }
          init_->io()->RuntimeStarted();
          if (!restore) {
            // A restored init gets its pid at Start.
            auto pid = ReadPidFile(bundle_ + "/init.pid");
            if (!pid) {
              backend_->Delete(id_, true, [](Status) {});
              return FailCreate(pid.error(), std::move(done));
            }
            init_->set_pid(*pid);
            WatchExit(init_.get());
            WatchOom();
          }
          event.set_pid(static_cast<uint32_t>(init_->pid()));
          ctx_.publisher.Publish("/tasks/create", "containerd.events.TaskCreate", event);
          done(init_->pid());
        });
      });
}

Status Container::JoinPodCgroup(const oci::Spec& spec, const std::optional<oci::PodSize>& size) {
  if (ctx_.pod_cgroup == nullptr) return Status::Ok();
  if (!size) {
    // Another container of the pod: its bundle gets the server's record too,
    // so that whichever `delete` runs last after a crash removes the pod
    // cgroup hull created (the pause container's may run first).
    if (ctx_.pod_cgroup->has_value() && (*ctx_.pod_cgroup)->created_pod) {
      Status written = WritePodCgroupFile(bundle_, **ctx_.pod_cgroup);
      if (!written.ok()) ctx_.log.Warn("create {}: {}", id_, written.ToString());
    }
    return Status::Ok();
  }
  // `start` prepared it when it spawned this server for this bundle.
  if (::access((bundle_ + "/" + std::string(kPodCgroupFile)).c_str(), F_OK) == 0) {
    return Status::Ok();
  }
  if (ctx_.pod_cgroup->has_value()) {
    ctx_.log.Warn("create {}: pod cgroup left alone: this server is in pod cgroup {} already", id_,
                  (*ctx_.pod_cgroup)->pod);
    return Status::Ok();
  }
  auto own_cgroup = []() -> Result<std::string> {
    HULL_ASSIGN_OR_RETURN(cgroups::ProcessCgroups own, cgroups::ReadProcessCgroups(::getpid()));
    if (!own.unified) return FailedPreconditionError("this process has no cgroup v2 path");
    return *own.unified;
  };
  HULL_ASSIGN_OR_RETURN(
      std::optional<PodCgroupSetup> setup,
      SetUpPodCgroup("create " + id_, spec.CgroupsPath(), options_, size, own_cgroup, ctx_.log));
  if (!setup) return Status::Ok();
  auto undo = [&] { LeavePodCgroup(setup->placement, ::getpid(), setup->cgroupfs).IgnoreError(); };
  if (!setup->placement.shim_leaf.empty()) {
    Status placed = PlaceShim(setup->placement, ::getpid(), setup->cgroupfs);
    if (!placed.ok()) {
      undo();
      return placed.WithContext("place the shim in the pod cgroup");
    }
  }
  // `delete` cleans up from it if this server is killed.
  Status written = WritePodCgroupFile(bundle_, setup->placement);
  if (!written.ok()) {
    undo();
    return written;
  }
  *ctx_.pod_cgroup = std::move(setup->placement);
  return Status::Ok();
}

void Container::FailCreate(Status status, Reply<pid_t> done) {
  Status unmounted = Unmount();
  if (!unmounted.ok())
    ctx_.log.Error("create {}: undo rootfs mount: {}", id_, unmounted.ToString());
  done(status.WithContext("create " + id_));
}

// ---- Exits ----

void Container::WatchExit(Process* process) {
  std::weak_ptr<bool> alive = alive_;
  auto on_exit = [this, alive, process](int exit_status) {
    if (alive.expired()) return;
    OnExit(process, exit_status);
  };
  // The backend knows how its init exits (runsc's pid file names the
  // sandbox); an exec's pid is always a process the shim reaps.
  if (process->is_init()) return backend_->WatchInitExit(id_, process->pid(), std::move(on_exit));
  ctx_.reaper.Watch(process->pid(), [on_exit = std::move(on_exit)](int wait_status) {
    on_exit(ExitStatusFromWait(wait_status));
  });
}

void Container::WatchOom() {
  std::weak_ptr<bool> alive = alive_;
  auto watch = backend_->WatchOom(id_, init_->pid(), [this, alive] {
    if (alive.expired()) return;
    PublishNewOomKills(/*notified=*/true);
  });
  if (!watch) {
    ctx_.log.Warn("container {}: cannot watch for OOM kills: {}", id_, watch.error().ToString());
    return;
  }
  oom_watch_ = std::move(*watch);
  oom_kills_published_ = backend_->OomKillCount(id_).value_or(0);
}

void Container::PublishNewOomKills(bool notified) {
  // The watcher and the init's exit both come here; the counter keeps them
  // from publishing one kill twice. Without a counter, trust a notification.
  auto count = backend_->OomKillCount(id_);
  if (count) {
    if (*count <= oom_kills_published_) return;
    oom_kills_published_ = *count;
  } else if (!notified) {
    return;
  }
  ctx_.log.Info("container {} had an OOM kill", id_);
  ev::TaskOOM event;
  event.set_container_id(id_);
  ctx_.publisher.Publish("/tasks/oom", "containerd.events.TaskOOM", event);
}

void Container::OnExit(Process* process, int exit_status) {
  if (!process->start_published) {
    // Ordering: the exit must follow the start event. Start replays it.
    process->exit_before_start = exit_status;
    return;
  }
  process->RecordExit(exit_status);
  if (process->is_init()) {
    // An OOM kill is counted before the victim dies; the notification may
    // still be on its way. TaskOOM must precede TaskExit.
    if (oom_watch_.active()) PublishNewOomKills(/*notified=*/false);
    bool execs_live = std::any_of(execs_.begin(), execs_.end(), [](const auto& e) {
      return e.second->live() || e.second->start_in_flight;
    });
    if (execs_live) {
      // The init's exit is published after every exec's. Without a pid
      // namespace of its own the execs do not die with the init: kill them.
      init_exit_pending_ = exit_status;
      if (shares_pid_namespace_) backend_->Kill(id_, SIGKILL, true, [](Status) {});
      return;
    }
    PublishExit(process);
    return;
  }
  PublishExit(process);
  MaybePublishInitExit();
}

void Container::MaybePublishInitExit() {
  if (!init_exit_pending_) return;
  for (const auto& [exec_id, exec] : execs_) {
    if (exec->live() || exec->start_in_flight) return;
  }
  init_exit_pending_.reset();
  PublishExit(init_.get());
}

void Container::PublishExit(Process* process) {
  ev::TaskExit event;
  event.set_container_id(id_);
  event.set_id(process->event_id());
  event.set_pid(static_cast<uint32_t>(process->pid()));
  event.set_exit_status(process->exit_status());
  *event.mutable_exited_at() = process->exited_at();
  ctx_.publisher.Publish("/tasks/exit", "containerd.events.TaskExit", event);
  process->exit_published = true;
  process->AnswerWaiters();
}

// ---- Start / Exec ----

void Container::Start(const std::string& exec_id, Reply<pid_t> done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (!process->is_init()) return StartExec(process, std::move(done));
  Status can = CheckTransition(process->state(), ProcessState::kRunning);
  if (!can.ok()) return done(can.WithContext("start " + id_));
  std::weak_ptr<bool> alive = alive_;
  backend_->Start(id_, [this, alive, done = std::move(done)](Status status) {
    if (alive.expired()) return;
    if (!status.ok()) return FailStart(std::move(status), std::move(done));
    if (init_->pid() == 0) {  // restored from a checkpoint: the pid is known now
      auto pid = ReadPidFile(bundle_ + "/init.pid");
      if (!pid) return done(pid.error().WithContext("start " + id_));
      init_->set_pid(*pid);
      WatchExit(init_.get());
      WatchOom();
    }
    init_->TransitionTo(ProcessState::kRunning).IgnoreError();
    ev::TaskStart event;
    event.set_container_id(id_);
    event.set_pid(static_cast<uint32_t>(init_->pid()));
    ctx_.publisher.Publish("/tasks/start", "containerd.events.TaskStart", event);
    init_->start_published = true;
    if (auto early = std::exchange(init_->exit_before_start, std::nullopt))
      OnExit(init_.get(), *early);
    done(init_->pid());
  });
}

void Container::FailStart(Status status, Reply<pid_t> done) {
  // runsc creates the sandbox (and loads nothing) at `create`, so a missing
  // executable fails `start` and leaves a created container with a live
  // sandbox process behind; runc's `start` can fail the same way, rarely.
  std::weak_ptr<bool> alive = alive_;
  backend_->Delete(
      id_, /*force=*/true,
      [this, alive, status = std::move(status), done = std::move(done)](Status deleted) mutable {
        if (alive.expired()) return;
        if (!deleted.ok()) {
          ctx_.log.Warn("start {} failed, and ending it in the runtime failed too: {}", id_,
                        deleted.ToString());
        } else if (init_->state() == ProcessState::kCreated) {
          // Ended by the force delete: reported as killed. A later reaper
          // notification of the same process finds start_published unset and
          // is only stored.
          init_->RecordExit(128 + SIGKILL);
          PublishExit(init_.get());
        }
        done(status.WithContext("start " + id_));
      });
}

Status Container::AddExec(const tv2::ExecProcessRequest& request) {
  const std::string& exec_id = request.exec_id();
  if (exec_id.empty()) return InvalidArgumentError("exec id must not be empty");
  if (execs_.contains(exec_id)) {
    return AlreadyExistsError("exec " + exec_id + " already exists in " + id_);
  }
  if (init_->exited()) return FailedPreconditionError("container " + id_ + " has exited");
  auto process = nlohmann::json::parse(request.spec().value(), nullptr, false);
  if (process.is_discarded() || !process.is_object()) {
    return InvalidArgumentError("exec " + exec_id + ": spec is not an OCI process JSON object");
  }
  process["terminal"] = request.terminal();
  auto exec = std::make_unique<Process>(id_, exec_id,
                                        StdioConfig{.stdin_path = request.stdin(),
                                                    .stdout_path = request.stdout(),
                                                    .stderr_path = request.stderr(),
                                                    .terminal = request.terminal()});
  exec->spec_json = process.dump();
  execs_.emplace(exec_id, std::move(exec));
  ev::TaskExecAdded event;
  event.set_container_id(id_);
  event.set_exec_id(exec_id);
  ctx_.publisher.Publish("/tasks/exec-added", "containerd.events.TaskExecAdded", event);
  return Status::Ok();
}

void Container::StartExec(Process* process, Reply<pid_t> done) {
  std::string what = "start exec " + process->exec_id();
  if (init_->exited())
    return done(FailedPreconditionError(what + ": container " + id_ + " has exited"));
  Status can = CheckTransition(process->state(), ProcessState::kRunning);
  if (!can.ok()) return done(can.WithContext(what));
  std::string json_path = ExecPath(process->exec_id(), ".process.json");
  Status written = WriteFileAtomic(json_path, process->spec_json, 0600);
  if (!written.ok()) return done(written.WithContext(what));

  std::weak_ptr<bool> alive = alive_;
  std::string exec_id = process->exec_id();
  // Every answer from here on goes through `done`, which ends the start.
  process->start_in_flight = true;
  done = [this, alive, exec_id, done = std::move(done)](Result<pid_t> result) {
    if (alive.expired()) return;
    if (auto found = Find(exec_id)) {
      (*found)->start_in_flight = false;
      // The init exited while this exec was starting: a started exec dies
      // with it unless the pid namespace is shared; a failed one is done.
      if (init_exit_pending_ && (*found)->live() && shares_pid_namespace_) {
        backend_->Kill(id_, SIGKILL, true, [](Status) {});
      }
    }
    done(std::move(result));
    if (!alive.expired()) MaybePublishInitExit();
  };
  ProcessIo::Create(ctx_.loop, ctx_.reaper, process->stdio(),
                    StdioContext{.container_id = id_,
                                 .ns = ctx_.ns,
                                 .io_uid = options_.io_uid,
                                 .io_gid = options_.io_gid,
                                 .work_dir = bundle_,
                                 .on_output_error = LogOutputErrors(ctx_.log)},
                    [this, alive, exec_id, json_path, what,
                     done = std::move(done)](Result<std::unique_ptr<ProcessIo>> io) mutable {
                      if (alive.expired()) return;
                      auto found = Find(exec_id);
                      if (!found) return done(found.error().WithContext(what));
                      Process* process = *found;
                      if (!io) {
                        ::unlink(json_path.c_str());
                        return done(io.error().WithContext(what + ": stdio"));
                      }
                      process->set_io(std::move(*io));
                      ExecRequest req{.id = id_,
                                      .exec_id = exec_id,
                                      .process_json = json_path,
                                      .pid_file = ExecPath(exec_id, ".pid"),
                                      .stdio = process->io()->runtime_stdio()};
                      backend_->Exec(req, [this, alive, exec_id, json_path, what,
                                           done = std::move(done)](Status status) mutable {
                        if (alive.expired()) return;
                        ::unlink(json_path.c_str());
                        auto found = Find(exec_id);
                        if (!found) return done(found.error().WithContext(what));
                        Process* process = *found;
                        if (!status.ok()) {
                          process->io()->RuntimeFailed();
                          process->set_io(nullptr);
                          return done(status.WithContext(what));
                        }
                        process->io()->RuntimeStarted();
                        auto pid = ReadPidFile(ExecPath(exec_id, ".pid"));
                        if (!pid) return done(pid.error().WithContext(what));
                        process->set_pid(*pid);
                        process->TransitionTo(ProcessState::kRunning).IgnoreError();
                        ev::TaskExecStarted event;
                        event.set_container_id(id_);
                        event.set_exec_id(exec_id);
                        event.set_pid(static_cast<uint32_t>(*pid));
                        ctx_.publisher.Publish("/tasks/exec-started",
                                               "containerd.events.TaskExecStarted", event);
                        process->start_published = true;
                        // Registered after the event is queued; an exit reaped meanwhile
                        // was kept by the reaper and arrives on a later turn.
                        WatchExit(process);
                        done(*pid);
                      });
                    });
}

// ---- Kill / Wait / State ----

void Container::Kill(const std::string& exec_id, uint32_t signal, bool all, Done done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (process->exited()) return done(NotFoundError("process already finished"));
  if (process->is_init()) {
    // Dropped with the container: the init is gone, which is what was asked.
    backend_->Kill(id_, static_cast<int>(signal), all,
                   AnswerIfDropped(std::move(done), Status::Ok()));
    return;
  }
  if (process->state() == ProcessState::kCreated) {
    return done(FailedPreconditionError("exec " + exec_id + " has not been started"));
  }
  if (::kill(process->pid(), static_cast<int>(signal)) != 0) {
    if (errno == ESRCH) return done(NotFoundError("process already finished"));
    return done(ErrnoError("kill", "exec " + exec_id));
  }
  done(Status::Ok());
}

void Container::Wait(const std::string& exec_id,
                     ttrpc::TypedResponder<tv2::WaitResponse> responder) {
  auto process = Find(exec_id);
  if (!process) return responder.Fail(process.error());
  (*process)->AddWaiter(std::move(responder));
  if ((*process)->exit_published) (*process)->AnswerWaiters();
}

Result<tv2::StateResponse> Container::State(const std::string& exec_id) const {
  HULL_ASSIGN_OR_RETURN(Process * process, Find(exec_id));
  tv2::StateResponse r;
  r.set_id(process->event_id());
  r.set_bundle(bundle_);
  r.set_pid(static_cast<uint32_t>(process->pid()));
  ProcessState state = process->state();
  // An exec is as paused as its container.
  if (!process->is_init() && process->live() &&
      (init_->state() == ProcessState::kPaused || init_->state() == ProcessState::kPausing)) {
    state = init_->state();
  }
  r.set_status(StatusEnum(state));
  r.set_stdin(process->stdio().stdin_path);
  r.set_stdout(process->stdio().stdout_path);
  r.set_stderr(process->stdio().stderr_path);
  r.set_terminal(process->stdio().terminal);
  r.set_exit_status(process->exit_status());
  *r.mutable_exited_at() = process->exited_at();
  r.set_exec_id(process->exec_id());
  return r;
}

// ---- Delete ----

void Container::Delete(const std::string& exec_id, Reply<tv2::DeleteResponse> done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (process->live()) {
    return done(FailedPreconditionError(
        "cannot delete " +
        std::string(process->is_init() ? "container " + id_ : "exec " + exec_id) + ": it is " +
        std::string(ProcessStateName(process->state()))));
  }
  if (process->is_init()) return DeleteInit(std::move(done));
  auto finish = [this, alive = std::weak_ptr<bool>(alive_), exec_id, done = std::move(done)]() {
    if (alive.expired()) return;
    auto found = Find(exec_id);
    if (!found) return done(found.error());
    Process* p = *found;
    tv2::DeleteResponse r;
    r.set_pid(static_cast<uint32_t>(p->pid()));
    r.set_exit_status(p->exit_status());
    *r.mutable_exited_at() = p->exited_at();
    ::unlink(ExecPath(exec_id, ".pid").c_str());
    if (p->pid() > 0 && !p->exited()) ctx_.reaper.Discard(p->pid());
    execs_.erase(exec_id);
    done(r);
  };
  if (process->io() != nullptr) {
    process->io()->Drain(kDrainTimeout, std::move(finish));
  } else {
    finish();
  }
}

void Container::DeleteInit(Reply<tv2::DeleteResponse> done) {
  std::weak_ptr<bool> alive = alive_;
  const bool never_started = init_->state() == ProcessState::kCreated;
  // The runtime's delete, then `finish` (with the delete's status).
  auto runtime_delete = [this, alive, never_started](std::function<void(Status)> finish) {
    if (alive.expired()) return;
    backend_->Delete(id_, never_started, std::move(finish));
  };
  // The output copied out (at most kDrainTimeout), then `next`.
  auto drain = [this, alive](std::function<void()> next) {
    if (alive.expired()) return;
    if (init_->io() == nullptr) return next();
    init_->io()->Drain(kDrainTimeout, std::move(next));
  };
  auto finish = [this, alive, done = std::move(done)](Status status) mutable {
    if (alive.expired()) return;
    if (!status.ok()) return done(status.WithContext("delete " + id_));
    init_->set_io(nullptr);
    oom_watch_.Reset();
    Status unmounted = Unmount();
    if (!unmounted.ok()) return done(unmounted.WithContext("delete " + id_));
    if (!init_->exited() && init_->pid() > 0) {
      // A created init that never ran: the runtime has killed it.
      ctx_.reaper.Discard(init_->pid());
      init_->RecordExit(128 + SIGKILL);
    }
    for (auto& [exec_id, exec] : execs_) {
      if (exec->pid() > 0 && !exec->exited()) ctx_.reaper.Discard(exec->pid());
    }
    init_->TransitionTo(ProcessState::kDeleted).IgnoreError();
    deleted_ = true;
    ev::TaskDelete event;
    event.set_container_id(id_);
    event.set_pid(static_cast<uint32_t>(init_->pid()));
    event.set_exit_status(init_->exit_status());
    *event.mutable_exited_at() = init_->exited_at();
    ctx_.publisher.Publish("/tasks/delete", "containerd.events.TaskDelete", event);
    tv2::DeleteResponse r;
    r.set_pid(static_cast<uint32_t>(init_->pid()));
    r.set_exit_status(init_->exit_status());
    *r.mutable_exited_at() = init_->exited_at();
    done(r);
  };
  if (never_started) {
    // A created init that never ran has written nothing, and its process
    // holds the output open until the runtime ends it (runsc's sandbox
    // holds it from `create`, before a failed `start`): draining first would
    // only wait out kDrainTimeout. End it, then collect what is left.
    return runtime_delete([drain, finish = std::move(finish)](Status status) mutable {
      drain([finish = std::move(finish), status = std::move(status)]() mutable {
        finish(std::move(status));
      });
    });
  }
  // An exited init: its output is complete once copied out; delete after.
  drain([runtime_delete, finish = std::move(finish)]() mutable {
    runtime_delete(std::move(finish));
  });
}

// ---- Pause / Resume / Update / Pids / Stats / Checkpoint / IO ----

void Container::Pause(Done done) {
  Status can = init_->TransitionTo(ProcessState::kPausing);
  if (!can.ok()) return done(can.WithContext("pause " + id_));
  std::weak_ptr<bool> alive = alive_;
  backend_->Pause(id_, [this, alive, done = std::move(done)](Status status) {
    if (alive.expired()) return;
    if (init_->state() != ProcessState::kPausing) return done(status);  // exited meanwhile
    if (!status.ok()) {
      init_->TransitionTo(ProcessState::kRunning).IgnoreError();
      return done(status.WithContext("pause " + id_));
    }
    init_->TransitionTo(ProcessState::kPaused).IgnoreError();
    ev::TaskPaused event;
    event.set_container_id(id_);
    ctx_.publisher.Publish("/tasks/paused", "containerd.events.TaskPaused", event);
    done(Status::Ok());
  });
}

void Container::Resume(Done done) {
  if (init_->state() != ProcessState::kPaused) {
    return done(FailedPreconditionError("resume " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  std::weak_ptr<bool> alive = alive_;
  backend_->Resume(id_, [this, alive, done = std::move(done)](Status status) {
    if (alive.expired()) return;
    if (!status.ok()) return done(status.WithContext("resume " + id_));
    init_->TransitionTo(ProcessState::kRunning).IgnoreError();
    ev::TaskResumed event;
    event.set_container_id(id_);
    ctx_.publisher.Publish("/tasks/resumed", "containerd.events.TaskResumed", event);
    done(Status::Ok());
  });
}

void Container::Update(const std::string& resources_json, Done done) {
  if (!init_->live()) {
    return done(FailedPreconditionError("update " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  auto parsed = nlohmann::json::parse(resources_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return done(
        InvalidArgumentError("update " + id_ + ": resources are not a LinuxResources JSON object"));
  }
  backend_->Update(id_, resources_json, std::move(done));
}

void Container::Pids(Reply<tv2::PidsResponse> done) {
  std::weak_ptr<bool> alive = alive_;
  backend_->Ps(id_, [this, alive, done = std::move(done)](Result<std::vector<pid_t>> pids) {
    if (alive.expired()) return;
    if (!pids) return done(pids.error().WithContext("pids " + id_));
    tv2::PidsResponse r;
    for (pid_t pid : *pids) {
      auto* info = r.add_processes();
      info->set_pid(static_cast<uint32_t>(pid));
      for (const auto& [exec_id, exec] : execs_) {
        if (exec->pid() != pid) continue;
        containerd::runc::v1::ProcessDetails details;
        details.set_exec_id(exec_id);
        info->mutable_info()->set_type_url("containerd.runc.v1.ProcessDetails");
        details.SerializeToString(info->mutable_info()->mutable_value());
      }
    }
    done(r);
  });
}

void Container::Stats(Reply<google::protobuf::Any> done) {
  if (init_->pid() == 0 || init_->exited()) {
    return done(NotFoundError("stats " + id_ + ": container is not running"));
  }
  backend_->Stats(id_, init_->pid(), std::move(done));
}

void Container::Checkpoint(const CheckpointRequest& request, Done done) {
  if (!init_->live()) {
    return done(FailedPreconditionError("checkpoint " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  backend_->Checkpoint(request, std::move(done));
}

Status Container::CloseIO(const std::string& exec_id, bool stdin) {
  HULL_ASSIGN_OR_RETURN(Process * process, Find(exec_id));
  if (stdin && process->io() != nullptr) process->io()->CloseStdin();
  return Status::Ok();
}

Status Container::ResizePty(const std::string& exec_id, uint32_t width, uint32_t height) {
  HULL_ASSIGN_OR_RETURN(Process * process, Find(exec_id));
  if (process->io() == nullptr) return Status::Ok();
  return process->io()->Resize(width, height);
}

}  // namespace hull::shim
