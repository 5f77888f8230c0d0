// Container's multi-step calls, each an object owned by its request that
// goes through its steps in order: Create (rootfs, stdio, the runtime's
// create, the pid; the Pod admitted the container before it was made), the start of an exec (its
// process JSON, stdio, the runtime's exec, the pid) and the delete of the init (the runtime's
// delete and the output drained, in the order the init's state asks for). A step whose container is
// gone answers NotFound.
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <utility>

#include "base/file_util.h"
#include "shim/container.h"
#include "shim/container_internal.h"
#include "shim/mount/spawner_bundle_files.h"
#include "shim/mount/spawner_mounts.h"

namespace hull::shim {
namespace tv2 = containerd::task::v2;
using internal::Gone;
using internal::kDrainTimeout;

// ---- Create ----

class Container::CreateSteps {
 public:
  CreateSteps(Container& c, tv2::CreateTaskRequest request, Reply<pid_t> done)
      : c_(c), alive_(c.Alive()), request_(std::move(request)), done_(std::move(done)) {}

  static void Run(std::shared_ptr<CreateSteps> self) { self->MountAndOpenStdio(self); }

 private:
  enum class Step { kMountRootfs, kStdio, kRuntimeCreate, kReadPid };

  // 1. The rootfs, then 2. the init's stdio.
  void MountAndOpenStdio(std::shared_ptr<CreateSteps> self) {
    step_ = Step::kMountRootfs;
    Status mounted =
        MountRootfsVia(c_.ctx_.reaper.spawner(), request_.rootfs(), c_.bundle_ + "/rootfs");
    if (!mounted.ok()) return Fail(mounted.WithContext("mount rootfs"));
    c_.rootfs_mounted_ = !request_.rootfs().empty();
    step_ = Step::kStdio;
    ProcessIo::Create(c_.ctx_.loop, c_.ctx_.reaper, c_.init_->stdio(), c_.StdioFor(),
                      [self](Result<std::unique_ptr<ProcessIo>> io) {
                        if (Gone(self->alive_, self->done_)) return;
                        if (!io) return self->Fail(io.error().WithContext("stdio"));
                        self->c_.init_->set_io(std::move(*io));
                        self->RuntimeCreate(self);
                      });
  }

  // 3. The runtime's create.
  void RuntimeCreate(std::shared_ptr<CreateSteps> self) {
    step_ = Step::kRuntimeCreate;
    CreateRequest req{.id = c_.id_,
                      .bundle = c_.bundle_,
                      .joins_sandbox = c_.traits_.joins_sandbox,
                      .pid_file = c_.bundle_ + "/init.pid",
                      .stdio = c_.init_->io()->runtime_stdio(),
                      .checkpoint = request_.checkpoint()};
    c_.backend_->Create(req, [self](Status status) {
      if (Gone(self->alive_, self->done_)) return;
      self->Created(std::move(status));
    });
  }

  // 4. The init's pid (a restored init gets its pid at Start).
  void Created(Status status) {
    Container& c = c_;
    if (!status.ok()) {
      c.init_->io()->RuntimeFailed();
      c.init_->set_io(nullptr);
      return Fail(status);
    }
    c.init_->io()->RuntimeStarted();
    step_ = Step::kReadPid;
    if (request_.checkpoint().empty()) {
      auto pid = c.ReadPidFile(c.bundle_ + "/init.pid");
      if (!pid) {
        c.backend_->Delete(c.id_, true, [](Status) {});
        return Fail(pid.error());
      }
      c.init_->set_pid(*pid);
      c.WatchExit(c.init_.get());
      c.WatchOom();
    }
    c.events_.Create(request_, c.init_->pid());
    done_(c.init_->pid());
  }

  void Fail(Status status) {
    Status unmounted = c_.Unmount();
    if (!unmounted.ok()) {
      c_.ctx_.log.Error("create {}: undo rootfs mount: {}", c_.id_, unmounted.ToString());
    }
    done_(status.WithContext("create " + c_.id_));
  }

  Container& c_;
  std::weak_ptr<bool> alive_;
  tv2::CreateTaskRequest request_;
  Reply<pid_t> done_;
  Step step_ = Step::kMountRootfs;
};

void Container::Create(const tv2::CreateTaskRequest& request, Reply<pid_t> done) {
  CreateSteps::Run(std::make_shared<CreateSteps>(*this, request, std::move(done)));
}

// ---- The start of an exec ----

class Container::ExecStartSteps {
 public:
  ExecStartSteps(Container& c, Process* process, Reply<pid_t> done)
      : c_(c),
        alive_(c.Alive()),
        exec_id_(process->exec_id()),
        what_("start exec " + exec_id_),
        json_path_(c.ExecPath(exec_id_, ".process.json")),
        done_(std::move(done)) {}

  static void Run(std::shared_ptr<ExecStartSteps> self) { self->Begin(self); }

 private:
  // 1. Checks, the process JSON for the runtime, then 2. stdio.
  void Begin(std::shared_ptr<ExecStartSteps> self) {
    Process* process = *c_.Find(exec_id_);
    if (c_.init_->exited()) {
      return done_(FailedPreconditionError(what_ + ": container " + c_.id_ + " has exited"));
    }
    Status can = CheckTransition(process->state(), ProcessState::kRunning);
    if (!can.ok()) return done_(can.WithContext(what_));
    Status written = WriteBundleFileVia(c_.ctx_.reaper.spawner(), json_path_, process->spec_json());
    if (!written.ok()) return done_(written.WithContext(what_));
    // From here on every answer goes through Finish, which ends the start.
    c_.exits_.StartBegun(process);
    ProcessIo::Create(c_.ctx_.loop, c_.ctx_.reaper, process->stdio(), c_.StdioFor(),
                      [self](Result<std::unique_ptr<ProcessIo>> io) {
                        if (Gone(self->alive_, self->done_)) return;
                        self->StdioOpened(self, std::move(io));
                      });
  }

  // 3. The runtime's exec.
  void StdioOpened(std::shared_ptr<ExecStartSteps> self, Result<std::unique_ptr<ProcessIo>> io) {
    auto found = c_.Find(exec_id_);
    if (!found) return Finish(found.error());
    if (!io) return Finish(io.error().WithContext("stdio"));
    Process* process = *found;
    process->set_io(std::move(*io));
    ExecRequest req{.id = c_.id_,
                    .exec_id = exec_id_,
                    .process_json = json_path_,
                    .pid_file = c_.ExecPath(exec_id_, ".pid"),
                    .stdio = process->io()->runtime_stdio()};
    c_.backend_->Exec(req, [self](Status status) {
      if (Gone(self->alive_, self->done_)) return;
      self->Executed(std::move(status));
    });
  }

  // 4. The pid, the event, then the exit watch: registered after the event
  // is queued, so an exit reaped meanwhile (kept by the reaper) follows it.
  void Executed(Status status) {
    auto found = c_.Find(exec_id_);
    if (!found) return Finish(found.error());
    Process* process = *found;
    if (!status.ok()) {
      process->io()->RuntimeFailed();
      process->set_io(nullptr);
      return Finish(status);
    }
    process->io()->RuntimeStarted();
    auto pid = c_.ReadPidFile(c_.ExecPath(exec_id_, ".pid"));
    if (!pid) return Finish(pid.error());
    process->set_pid(*pid);
    process->TransitionTo(ProcessState::kRunning).IgnoreError();
    c_.events_.ExecStarted(c_.id_, exec_id_, *pid);
    c_.exits_.StartPublished(process);
    c_.WatchExit(process);
    RemoveBundleFileVia(c_.ctx_.reaper.spawner(), json_path_).IgnoreError();
    done_(*pid);
  }

  void Finish(Status status) {
    RemoveBundleFileVia(c_.ctx_.reaper.spawner(), json_path_).IgnoreError();
    if (auto found = c_.Find(exec_id_)) c_.exits_.StartFailed(*found, std::nullopt);
    done_(status.WithContext(what_));
  }

  Container& c_;
  std::weak_ptr<bool> alive_;
  std::string exec_id_;
  std::string what_;
  std::string json_path_;
  Reply<pid_t> done_;
};

void Container::StartExec(Process* process, Reply<pid_t> done) {
  ExecStartSteps::Run(std::make_shared<ExecStartSteps>(*this, process, std::move(done)));
}

// ---- The delete of the init ----

class Container::DeleteInitSteps {
 public:
  DeleteInitSteps(Container& c, Reply<tv2::DeleteResponse> done)
      : c_(c), alive_(c.Alive()), done_(std::move(done)) {}

  static void Run(std::shared_ptr<DeleteInitSteps> self) {
    if (self->c_.init_->state() == ProcessState::kCreated) {
      // A created init that never ran has written nothing, and its process
      // holds the output open until the runtime ends it (runsc's sandbox
      // holds it from `create`, before a failed `start`): draining first
      // would only wait out kDrainTimeout. End it, then collect what is left.
      return self->RuntimeDelete(self, /*force=*/true, /*then_drain=*/true);
    }
    // An exited init: its output is complete once copied out; delete after.
    self->Drain(self, [self] { self->RuntimeDelete(self, /*force=*/false, false); });
  }

 private:
  void RuntimeDelete(std::shared_ptr<DeleteInitSteps> self, bool force, bool then_drain) {
    c_.backend_->Delete(c_.id_, force, [self, then_drain](Status status) {
      if (Gone(self->alive_, self->done_)) return;
      if (!then_drain) return self->Finish(std::move(status));
      self->Drain(self, [self, status = std::move(status)] { self->Finish(status); });
    });
  }

  void Drain(std::shared_ptr<DeleteInitSteps> self, std::function<void()> next) {
    if (c_.init_->io() == nullptr) return next();
    c_.init_->io()->Drain(kDrainTimeout, [self, next = std::move(next)] {
      if (Gone(self->alive_, self->done_)) return;
      next();
    });
  }

  void Finish(Status status) {
    Container& c = c_;
    if (!status.ok()) return done_(status.WithContext("delete " + c.id_));
    c.init_->set_io(nullptr);
    c.oom_watch_.Reset();
    c.exits_.OomUnwatched();
    Status unmounted = c.Unmount();
    if (!unmounted.ok()) return done_(unmounted.WithContext("delete " + c.id_));
    if (!c.init_->exited() && c.init_->pid() > 0) {
      // A created init that never ran: the runtime has killed it.
      c.backend_->ForgetExit(c.id_, "", c.init_->pid());
      c.exits_.OnExit(c.init_.get(), 128 + SIGKILL);
    }
    for (auto& [exec_id, exec] : c.execs_) {
      if (exec->pid() > 0 && !exec->exited()) c.backend_->ForgetExit(c.id_, exec_id, exec->pid());
    }
    c.init_->TransitionTo(ProcessState::kDeleted).IgnoreError();
    c.deleted_ = true;
    c.events_.Delete(*c.init_);
    tv2::DeleteResponse r;
    r.set_pid(static_cast<uint32_t>(c.init_->pid()));
    r.set_exit_status(c.init_->exit_status());
    *r.mutable_exited_at() = c.init_->exited_at();
    done_(r);
  }

  Container& c_;
  std::weak_ptr<bool> alive_;
  Reply<tv2::DeleteResponse> done_;
};

void Container::Delete(const std::string& exec_id, Reply<tv2::DeleteResponse> done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (process->live()) {
    return done(FailedPreconditionError(
        "cannot delete " +
        std::string(process->is_init() ? "container " + id_ : "exec " + exec_id) + ": it is " +
        std::string(ProcessStateName(process->state()))));
  }
  if (!process->is_init()) {
    // Its start is under way: the exec may be running already.
    if (exits_.start_in_flight(process)) {
      return done(FailedPreconditionError("cannot delete exec " + exec_id + ": it is starting"));
    }
    return DeleteExec(exec_id, std::move(done));
  }
  // State shows a held init exit as stopped, but deleting now would publish
  // /tasks/delete with no /tasks/exit before it (none ever: the container is
  // dropped) and fail its Wait calls "no reply". As with the runc shim, it
  // is not deletable until its exit is reported.
  // (tests/unit/shim: DeleteOfAnInitWhoseExitIsHeldWaitsForTheExit)
  if (exits_.init_exit_held()) {
    return done(FailedPreconditionError("cannot delete container " + id_ +
                                        ": its exit is not reported yet"));
  }
  DeleteInitSteps::Run(std::make_shared<DeleteInitSteps>(*this, std::move(done)));
}

}  // namespace hull::shim
