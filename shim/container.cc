#include "shim/container.h"

#include <signal.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/file_util.h"
#include "base/spawn.h"
#include "oci/annotations.h"
#include "shim/container_internal.h"
#include "shim/mount/spawner_bundle_files.h"
#include "shim/mount/spawner_mounts.h"

namespace hull::shim {
namespace tv2 = containerd::task::v2;
using internal::Gone;
using internal::kDrainTimeout;

namespace {

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

}  // namespace

ContainerTraits ContainerTraits::Of(const oci::Spec& spec) {
  ContainerTraits traits;
  auto annotations = spec.Annotations();
  auto type = annotations.find(std::string(oci::kContainerType));
  traits.joins_sandbox = type != annotations.end() && type->second == oci::kContainerTypeContainer;
  // Only a pid namespace of its own (no path to join) dies with the init.
  for (const auto& ns : spec.Namespaces()) {
    if (ns.type == "pid" && ns.path.empty()) traits.shares_pid_namespace = false;
  }
  return traits;
}

Container::Container(ShimContext& ctx, std::string id, std::string bundle, StdioConfig init_stdio,
                     ShimConfig options, Backend& backend, ContainerTraits traits)
    : ctx_(ctx),
      id_(std::move(id)),
      bundle_(std::move(bundle)),
      options_(std::move(options)),
      events_(ctx.publisher),
      backend_(&backend),
      traits_(traits),
      init_(std::make_unique<Process>(id_, "", std::move(init_stdio))),
      exits_(init_.get(),
             ExitTracker::Hooks{
                 .publish_exit = [this](Process* p) { PublishExit(p); },
                 .publish_oom =
                     [this] {
                       ctx_.log.Info("container {} had an OOM kill", id_);
                       events_.Oom(id_);
                     },
                 .oom_kill_count = [this]() -> std::optional<uint64_t> {
                   auto count = backend_->OomKillCount(id_);
                   if (!count) return std::nullopt;
                   return *count;
                 },
                 .end_the_rest =
                     [this](std::function<void()> then) { EndTheRest(std::move(then)); }}) {
  exits_.set_shares_pid_namespace(traits_.shares_pid_namespace);
}

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

StdioContext Container::StdioFor() const {
  return StdioContext{.container_id = id_,
                      .ns = ctx_.ns,
                      .io_uid = options_.io_uid,
                      .io_gid = options_.io_gid,
                      .work_dir = bundle_,
                      .on_output_error = LogOutputErrors(ctx_.log)};
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
  HULL_RETURN_IF_ERROR(UnmountRootfsVia(ctx_.reaper.spawner(), bundle_ + "/rootfs"));
  rootfs_mounted_ = false;
  return Status::Ok();
}

// ---- Exits ----

void Container::WatchExit(Process* process) {
  std::weak_ptr<bool> alive = Alive();
  auto on_exit = [this, alive, process](int exit_status) {
    if (alive.expired()) return;
    exits_.OnExit(process, exit_status);
  };
  // The backend knows how its processes exit (runsc's pid file names the
  // sandbox; a vm backend's pids are guest pids the reaper must not watch).
  if (process->is_init()) return backend_->WatchInitExit(id_, process->pid(), std::move(on_exit));
  backend_->WatchExecExit(id_, process->exec_id(), process->pid(), std::move(on_exit));
}

void Container::WatchOom() {
  std::weak_ptr<bool> alive = Alive();
  auto watch = backend_->WatchOom(id_, init_->pid(), [this, alive] {
    if (!alive.expired()) exits_.OomNoticed();
  });
  if (!watch) {
    ctx_.log.Warn("container {}: cannot watch for OOM kills: {}", id_, watch.error().ToString());
    return;
  }
  oom_watch_ = std::move(*watch);
  exits_.OomWatchStarted();
}

void Container::PublishExit(Process* process) {
  events_.Exit(*process);
  process->AnswerWaiters();
}

void Container::EndTheRest(std::function<void()> then) {
  std::weak_ptr<bool> alive = Alive();
  backend_->Kill(id_, SIGKILL, /*all=*/true, [this, alive, then = std::move(then)](Status status) {
    if (alive.expired()) return;
    // Nothing left to kill is what was wanted.
    if (!status.ok() && status.code() != Code::kNotFound) {
      ctx_.log.Warn("container {}: end its remaining processes: {}", id_, status.ToString());
    }
    then();
  });
}

// ---- Start ----

void Container::Start(const std::string& exec_id, Reply<pid_t> done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (!process->is_init()) return StartExec(process, std::move(done));
  StartInit(std::move(done));
}

void Container::StartInit(Reply<pid_t> done) {
  Status can = CheckTransition(init_->state(), ProcessState::kRunning);
  if (!can.ok()) return done(can.WithContext("start " + id_));
  exits_.StartBegun(init_.get());
  std::weak_ptr<bool> alive = Alive();
  backend_->Start(id_, [this, alive, done = std::move(done)](Status status) mutable {
    if (Gone(alive, done)) return;
    if (!status.ok()) return FailStart(std::move(status), std::move(done));
    if (init_->pid() == 0) {  // restored from a checkpoint: the pid is known now
      auto pid = ReadPidFile(bundle_ + "/init.pid");
      if (!pid) {
        exits_.StartFailed(init_.get(), std::nullopt);
        return done(pid.error().WithContext("start " + id_));
      }
      init_->set_pid(*pid);
      WatchExit(init_.get());
      WatchOom();
    }
    init_->TransitionTo(ProcessState::kRunning).IgnoreError();
    events_.Start(id_, init_->pid());
    exits_.StartPublished(init_.get());
    done(init_->pid());
  });
}

void Container::FailStart(Status status, Reply<pid_t> done) {
  // runsc creates the sandbox (and loads nothing) at `create`, so a missing
  // executable fails `start` and leaves a created container with a live
  // sandbox process behind; runc's `start` can fail the same way, rarely.
  std::weak_ptr<bool> alive = Alive();
  backend_->Delete(
      id_, /*force=*/true,
      [this, alive, status = std::move(status), done = std::move(done)](Status deleted) mutable {
        if (Gone(alive, done)) return;
        std::optional<int> ended;
        if (!deleted.ok()) {
          ctx_.log.Warn("start {} failed, and ending it in the runtime failed too: {}", id_,
                        deleted.ToString());
        } else if (init_->state() == ProcessState::kCreated) {
          ended = 128 + SIGKILL;  // ended by the force delete: reported as killed
        }
        exits_.StartFailed(init_.get(), ended);
        done(status.WithContext("start " + id_));
      });
}

// ---- Exec ----

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
  exec->set_spec_json(process.dump());
  exits_.Track(exec.get());
  execs_.emplace(exec_id, std::move(exec));
  events_.ExecAdded(id_, exec_id);
  return Status::Ok();
}

// ---- Kill / Wait / State ----

void Container::KillInit(uint32_t signal, bool all, Done done) {
  std::weak_ptr<bool> alive = Alive();
  if (init_->exited()) {
    // What a stopped container left behind (no pid namespace of its own)
    // is still signalled with `all`, as the runc shim does; a runtime that
    // finds nothing to signal means the same as "already finished".
    if (!all || deleted_) {
      return done(NotFoundError("process already finished"));
    }
    return backend_->Kill(id_, static_cast<int>(signal), /*all=*/true,
                          [alive, done = std::move(done)](Status status) mutable {
                            if (Gone(alive, done)) return;
                            done(status.ok() ? status : NotFoundError("process already finished"));
                          });
  }
  // Cancelling a created task: its init's exit is reported at once
  // (ExitTracker). runsc cannot signal a created container: end it instead.
  const bool cancel = init_->state() == ProcessState::kCreated &&
                      !exits_.start_in_flight(init_.get()) && signal == SIGKILL;
  backend_->Kill(id_, static_cast<int>(signal), all,
                 [this, alive, cancel, done = std::move(done)](Status status) mutable {
                   if (Gone(alive, done)) return;
                   if (status.ok() || !cancel || init_->exited()) return done(std::move(status));
                   EndCreatedInit(std::move(done));
                 });
}

void Container::EndCreatedInit(Done done) {
  std::weak_ptr<bool> alive = Alive();
  backend_->Delete(id_, /*force=*/true,
                   [this, alive, done = std::move(done)](Status status) mutable {
                     if (Gone(alive, done)) return;
                     if (status.ok() && init_->state() == ProcessState::kCreated) {
                       exits_.OnExit(init_.get(), 128 + SIGKILL);
                     }
                     done(std::move(status));
                   });
}

void Container::Kill(const std::string& exec_id, uint32_t signal, bool all, Done done) {
  HULL_ASSIGN_OR_ANSWER(Process * process, Find(exec_id), done);
  if (process->is_init()) return KillInit(signal, all, std::move(done));
  if (process->exited()) return done(NotFoundError("process already finished"));
  if (process->state() == ProcessState::kCreated) {
    return done(FailedPreconditionError("exec " + exec_id + " has not been started"));
  }
  backend_->SignalExec(id_, exec_id, process->pid(), static_cast<int>(signal),
                       [alive = Alive(), done = std::move(done)](Status status) mutable {
                         if (Gone(alive, done)) return;
                         done(std::move(status));
                       });
}

void Container::Wait(const std::string& exec_id,
                     ttrpc::TypedResponder<tv2::WaitResponse> responder) {
  auto process = Find(exec_id);
  if (!process) return responder.Fail(process.error());
  (*process)->AddWaiter(std::move(responder));
  if (exits_.exit_published(*process)) (*process)->AnswerWaiters();
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

void Container::DeleteExec(const std::string& exec_id, Reply<tv2::DeleteResponse> done) {
  auto finish = [this, alive = Alive(), exec_id, done = std::move(done)]() mutable {
    if (Gone(alive, done)) return;
    auto found = Find(exec_id);
    if (!found) return done(found.error());
    Process* p = *found;
    tv2::DeleteResponse r;
    r.set_pid(static_cast<uint32_t>(p->pid()));
    r.set_exit_status(p->exit_status());
    *r.mutable_exited_at() = p->exited_at();
    RemoveBundleFileVia(ctx_.reaper.spawner(), ExecPath(exec_id, ".pid")).IgnoreError();
    if (p->pid() > 0 && !p->exited()) backend_->ForgetExit(id_, exec_id, p->pid());
    exits_.Forget(p);
    execs_.erase(exec_id);
    done(r);
  };
  Process* process = *Find(exec_id);
  if (process->io() == nullptr) return finish();
  process->io()->Drain(kDrainTimeout, std::move(finish));
}

Status Container::CloseIO(const std::string& exec_id, bool stdin) {
  HULL_ASSIGN_OR_RETURN(Process * process, Find(exec_id));
  if (stdin && process->io() != nullptr) process->io()->CloseStdin();
  return Status::Ok();
}

Status Container::ResizePty(const std::string& exec_id, uint32_t width, uint32_t height) {
  HULL_ASSIGN_OR_RETURN(Process * process, Find(exec_id));
  if (process->io() == nullptr) return Status::Ok();
  HULL_RETURN_IF_ERROR(process->io()->Resize(width, height));
  if (backend_ != nullptr) backend_->ResizeTerminal(id_, exec_id, width, height);
  return Status::Ok();
}

}  // namespace hull::shim
