// ContainerService: the lifecycle calls (create, start, exec, signal, wait,
// remove), exits and OOM events. The stdio and control calls are in
// container_control.cc. See container_service.h.
#include "agent/container_service.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "agent/guest_spec.h"
#include "agent/held_pause.h"
#include "base/file_util.h"
#include "base/spawn.h"
#include "runtime/oci_cli/argv.h"
#include "runtime/oci_cli/flavour.h"
#include "runtime/oci_cli/oci_cli_backend.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;
using runtime::oci_cli::ArgvBuilder;
using runtime::oci_cli::RuntimeConfig;

int64_t NowUnixNano() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

Result<pid_t> ReadPidFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return text.error();
  char* end = nullptr;
  long pid = std::strtol(text->c_str(), &end, 10);
  if (pid <= 0 || end == text->c_str()) return InternalError("pid file " + path + " holds no pid");
  return static_cast<pid_t>(pid);
}

// The terminal flag of a spec's process (or of an exec's process object).
bool WantsTerminal(const nlohmann::json& process) {
  return process.is_object() && process.value("terminal", false);
}

Status CheckTerminal(const pb::Stdio& stdio, bool spec_terminal) {
  if (stdio.terminal() != spec_terminal) {
    return InvalidArgumentError(std::string("stdio.terminal is ") +
                                (stdio.terminal() ? "true" : "false") +
                                " and the process's terminal is not");
  }
  return Status::Ok();
}

}  // namespace

// Binds the value, or fails the call with the error and returns.
#define AGENT_ASSIGN_OR_FAIL(lhs, expr, responder) \
  HULL_ASSIGN_OR_ANSWER(lhs, expr, [&](Status s) { (responder).Fail(std::move(s)); })

ContainerService::ContainerService(EventLoop& loop, Reaper& reaper, ContainerOptions options,
                                   std::unique_ptr<runtime::Backend> backend)
    : loop_(loop),
      reaper_(reaper),
      options_(std::move(options)),
      backend_(std::move(backend)),
      oom_polls_(loop) {
  if (backend_) return;
  const auto& flavour = runtime::oci_cli::FlavourFor(options_.runtime);
  RuntimeConfig config{.binary = options_.runtime, .root = options_.runtime_root};
  // The pod's pause container is the agent's own process (held_pause.h);
  // every other container is crun's.
  backend_ = std::make_unique<HeldPauseBackend>(
      loop_, reaper_,
      std::make_unique<runtime::oci_cli::OciCliBackend>(loop_, reaper_,
                                                        ArgvBuilder(flavour, std::move(config))),
      options_.cgroup_root, options_.log);
}

ContainerService::~ContainerService() {
  // The backend answers the runtime calls still running from its
  // destructor; their callbacks find no container (Still) and only answer
  // their callers.
  destroying_ = true;
  backend_.reset();
}

Result<ContainerService::Container*> ContainerService::Find(const std::string& id) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return NotFoundError("container " + id + " not found");
  return it->second.get();
}

ContainerService::Container* ContainerService::Still(const std::string& id, uint64_t generation) {
  if (destroying_) return nullptr;
  auto it = containers_.find(id);
  if (it == containers_.end() || it->second->generation != generation) return nullptr;
  return it->second.get();
}

Result<ContainerService::Process*> ContainerService::FindProcess(Container& c,
                                                                 const std::string& exec_id) {
  if (exec_id.empty()) return &c.init;
  auto it = c.execs.find(exec_id);
  if (it == c.execs.end()) {
    return NotFoundError("process " + exec_id + " of container " + c.id + " not found");
  }
  return it->second.get();
}

void ContainerService::Register(ttrpc::Server& server) {
  constexpr char kService[] = "hull.agent.v1.Agent";
  server.RegisterUnary<pb::CreateContainerRequest, pb::CreateContainerResponse>(
      kService, "CreateContainer",
      [this](const ttrpc::CallContext& ctx, pb::CreateContainerRequest req, auto r) {
        Create(ctx, std::move(req), std::move(r));
      });
  server.RegisterUnary<pb::StartContainerRequest, pb::StartContainerResponse>(
      kService, "StartContainer",
      [this](const ttrpc::CallContext&, pb::StartContainerRequest req, auto r) {
        Start(std::move(req), std::move(r));
      });
  server.RegisterUnary<pb::ExecProcessRequest, pb::ExecProcessResponse>(
      kService, "ExecProcess",
      [this](const ttrpc::CallContext&, pb::ExecProcessRequest req, auto r) {
        Exec(std::move(req), std::move(r));
      });
  server.RegisterUnary<pb::SignalProcessRequest, pb::SignalProcessResponse>(
      kService, "SignalProcess",
      [this](const ttrpc::CallContext&, pb::SignalProcessRequest req, auto r) {
        Signal(std::move(req), std::move(r));
      });
  server.RegisterUnary<pb::WaitProcessRequest, pb::WaitProcessResponse>(
      kService, "WaitProcess",
      [this](const ttrpc::CallContext&, pb::WaitProcessRequest req, auto r) {
        Wait(std::move(req), std::move(r));
      });
  server.RegisterUnary<pb::RemoveContainerRequest, pb::RemoveContainerResponse>(
      kService, "RemoveContainer",
      [this](const ttrpc::CallContext&, pb::RemoveContainerRequest req, auto r) {
        Remove(std::move(req), std::move(r));
      });
  RegisterStdio(server);
  RegisterControl(server);
}

void ContainerService::Create(const ttrpc::CallContext&, pb::CreateContainerRequest req,
                              ttrpc::TypedResponder<pb::CreateContainerResponse> r) {
  const std::string id = req.container_id();
  const std::string context = "create container " + id;
  if (Status s = CheckId("container_id", id); !s.ok()) return r.Fail(s.WithContext(context));
  if (containers_.count(id) != 0) return r.Fail(AlreadyExistsError(context + ": it exists"));
  if (req.bundle().empty() || req.bundle()[0] != '/') {
    return r.Fail(InvalidArgumentError(context + ": bundle must be an absolute guest path"));
  }
  std::string spec_json = req.spec_json();
  if (spec_json.empty()) {
    auto read = ReadFile(req.bundle() + "/config.json");
    if (!read) {
      return r.Fail(
          InvalidArgumentError(context + ": no spec_json, and " + read.error().message()));
    }
    spec_json = std::move(*read);
  }
  // The pod's containers join the pause container's namespaces by its pid.
  std::set<int> pod_pids;
  for (const auto& [other, c] : containers_) {
    if (c->init.pid > 0 && !c->init.exit_status) pod_pids.insert(c->init.pid);
  }
  auto spec = GuestSpec(spec_json, id, req.bundle(), pod_pids);
  if (!spec) return r.Fail(spec.error().WithContext(context));
  auto parsed = nlohmann::json::parse(*spec, nullptr, false);
  if (Status s = CheckTerminal(req.stdio(), WantsTerminal(parsed["process"])); !s.ok()) {
    return r.Fail(s.WithContext(context));
  }
  const std::string rootfs = parsed["root"]["path"];
  struct stat st {};
  if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return r.Fail(InvalidArgumentError(context + ": root filesystem " + rootfs +
                                       " is not a directory in the guest"));
  }

  // The pod's limit goes up before the container is made (a container made
  // after a resize counts at its new limit), and back when it fails.
  const uint64_t pod_max = req.pod_memory_max_bytes();
  const uint64_t pod_max_before = pod_memory_max_;
  const bool raise = pod_max > 0 && pod_max > pod_memory_max_;
  if (raise && !options_.set_pod_memory_max) {
    return r.Fail(FailedPreconditionError(context + ": this agent sets no pod memory limit"));
  }
  const std::string dir = options_.state_dir + "/" + id;
  RemoveTree(dir);  // a stale one from a container that failed half-way
  if (Status s = MakeDirs(dir, 0755); !s.ok()) return r.Fail(s.WithContext(context));
  if (Status s = WriteFileAtomic(dir + "/config.json", *spec); !s.ok()) {
    RemoveTree(dir);
    return r.Fail(s.WithContext(context));
  }
  auto stdio = GuestStdio::Create(loop_, req.stdio(), dir);
  if (!stdio) {
    RemoveTree(dir);
    return r.Fail(stdio.error().WithContext(context));
  }
  auto owned = std::make_unique<Container>();
  Container& c = *owned;
  c.id = id;
  c.generation = next_generation_++;
  c.dir = dir;
  c.init.stdio = std::move(*stdio);
  if (raise) {
    if (Status s = SetPodMemoryMax(pod_max); !s.ok()) {
      RemoveTree(dir);
      return r.Fail(s.WithContext(context + ": pod memory"));
    }
  }
  containers_.emplace(id, std::move(owned));

  runtime::CreateRequest create{
      .id = id, .bundle = dir, .pid_file = dir + "/init.pid", .stdio = c.init.stdio->ForRuntime()};
  const uint64_t gen = c.generation;
  // A raise whose container never came is undone (when the earlier value is
  // known, as for UpdateContainer, and nothing set another since).
  auto undo_raise = [this, raise, pod_max, pod_max_before] {
    if (raise && pod_max_before > 0 && pod_memory_max_ == pod_max && !destroying_) {
      SetPodMemoryMax(pod_max_before).IgnoreError();
    }
  };
  backend_->Create(create, [this, id, gen, pid_file = create.pid_file, context, undo_raise,
                            r = SharedResponder(std::move(r))](Status s) mutable {
    AfterSpawn(id, gen, "", pid_file, std::move(s),
               [this, id, gen, context, undo_raise,
                r = SharedResponder(std::move(r))](Result<pid_t> pid) mutable {
                 if (!pid) undo_raise();
                 Container* c = Still(id, gen);
                 if (c == nullptr) return r.Fail(NotFoundError(context + ": removed meanwhile"));
                 if (!pid) {
                   // crun may have got as far as a container (a pid file that
                   // cannot be read, a pty master that never came): delete it, so
                   // that a failed create leaves nothing behind either way.
                   Status failed = pid.error().WithContext(context);
                   Log(failed.ToString());
                   c->state = ContainerState::kRemoving;
                   return backend_->Delete(id, /*force=*/true, [this, id, gen, failed, r](Status) {
                     if (Still(id, gen) != nullptr) Forget(id);
                     r.Fail(failed);
                   });
                 }
                 c->init.pid = *pid;
                 c->state = ContainerState::kCreated;
                 backend_->WatchInitExit(id, *pid, [this, id, gen](int exit_status) {
                   OnInitExit(id, gen, exit_status);
                 });
                 auto watch = backend_->WatchOom(id, *pid, [this, id, gen] {
                   if (Container* c = Still(id, gen)) CheckOom(*c);
                 });
                 // Without the watch (no memory controller) the count is still
                 // read at exit, when the backend found it.
                 if (watch) c->oom_watch = std::move(*watch);
                 Log("container " + id + " created, init pid " + std::to_string(*pid));
                 pb::CreateContainerResponse resp;
                 resp.set_pid(static_cast<uint32_t>(*pid));
                 r.Reply(resp);
               });
  });
}

void ContainerService::AfterSpawn(const std::string& id, uint64_t generation,
                                  const std::string& exec_id, const std::string& pid_file,
                                  Status spawned, std::function<void(Result<pid_t>)> done) {
  Container* c = Still(id, generation);
  if (c == nullptr) return done(NotFoundError("container removed"));
  auto process = FindProcess(*c, exec_id);
  if (!process) return done(process.error());
  GuestStdio& io = *(*process)->stdio;
  io.ProcessStarted();
  if (!spawned.ok()) return done(std::move(spawned));
  auto pid = ReadPidFile(pid_file);
  if (!pid) return done(pid.error());
  if (!io.terminal()) return done(*pid);
  io.ReceiveMaster([done = std::move(done), pid = *pid](Status s) {
    if (!s.ok()) return done(std::move(s));
    done(pid);
  });
}

void ContainerService::Start(pb::StartContainerRequest req,
                             ttrpc::TypedResponder<pb::StartContainerResponse> r) {
  const std::string id = req.container_id();
  AGENT_ASSIGN_OR_FAIL(Container * c, Find(id), r);
  if (Status s = CheckOp(id, c->state, ContainerOp::kStart); !s.ok()) return r.Fail(s);
  c->state = ContainerState::kStarting;
  const uint64_t gen = c->generation;
  backend_->Start(id, [this, id, gen, r = SharedResponder(std::move(r))](Status s) mutable {
    Container* c = Still(id, gen);
    if (c == nullptr) return r.Fail(NotFoundError("start container " + id + ": removed"));
    if (c->state == ContainerState::kStarting) {
      c->state = s.ok() ? ContainerState::kRunning : ContainerState::kCreated;
    }
    if (!s.ok()) return r.Fail(s);
    r.Reply({});
  });
}

void ContainerService::Exec(pb::ExecProcessRequest req,
                            ttrpc::TypedResponder<pb::ExecProcessResponse> r) {
  const std::string id = req.container_id();
  const std::string exec_id = req.exec_id();
  const std::string context = "exec " + exec_id + " in container " + id;
  AGENT_ASSIGN_OR_FAIL(Container * c, Find(id), r);
  if (Status s = CheckId("exec_id", exec_id); !s.ok()) return r.Fail(s.WithContext(context));
  // An exec id may be used again once its process has exited (containerd
  // deletes an exec, then may reuse its id).
  if (auto old = c->execs.find(exec_id); old != c->execs.end()) {
    if (!old->second->exit_status) return r.Fail(AlreadyExistsError(context + ": it runs"));
    old->second->stdio->FailAll(NotFoundError(context + ": replaced by a new exec"));
    c->execs.erase(old);
  }
  if (Status s = CheckOp(id, c->state, ContainerOp::kExec); !s.ok()) return r.Fail(s);
  auto process_json = GuestProcess(req.process_json());
  if (!process_json) return r.Fail(process_json.error().WithContext(context));
  if (Status s = CheckTerminal(req.stdio(),
                               WantsTerminal(nlohmann::json::parse(*process_json, nullptr, false)));
      !s.ok()) {
    return r.Fail(s.WithContext(context));
  }
  const std::string process_file = c->dir + "/exec-" + exec_id + ".json";
  if (Status s = WriteFileAtomic(process_file, *process_json); !s.ok()) {
    return r.Fail(s.WithContext(context));
  }
  auto stdio = GuestStdio::Create(loop_, req.stdio(), c->dir);
  if (!stdio) return r.Fail(stdio.error().WithContext(context));
  auto process = std::make_unique<Process>();
  process->exec_id = exec_id;
  process->stdio = std::move(*stdio);
  runtime::ExecRequest exec{.id = id,
                            .exec_id = exec_id,
                            .process_json = process_file,
                            .pid_file = c->dir + "/exec-" + exec_id + ".pid",
                            .stdio = process->stdio->ForRuntime()};
  c->execs.emplace(exec_id, std::move(process));
  const uint64_t gen = c->generation;
  backend_->Exec(exec, [this, id, gen, exec_id, pid_file = exec.pid_file, context,
                        r = SharedResponder(std::move(r))](Status s) mutable {
    AfterSpawn(id, gen, exec_id, pid_file, std::move(s),
               [this, id, gen, exec_id, context,
                r = SharedResponder(std::move(r))](Result<pid_t> pid) mutable {
                 Container* c = Still(id, gen);
                 if (c == nullptr) return r.Fail(NotFoundError(context + ": removed meanwhile"));
                 auto it = c->execs.find(exec_id);
                 if (it == c->execs.end()) return r.Fail(NotFoundError(context + ": gone"));
                 if (!pid) {
                   // Callers parked on the process that never ran hear why.
                   Status failed = pid.error().WithContext(context);
                   for (auto& w : std::exchange(it->second->waiters, {})) w.Fail(failed);
                   it->second->stdio->FailAll(failed);
                   c->execs.erase(it);
                   return r.Fail(failed);
                 }
                 it->second->pid = *pid;
                 // crun has read them; an exec id may come again.
                 ::unlink((c->dir + "/exec-" + exec_id + ".json").c_str());
                 ::unlink((c->dir + "/exec-" + exec_id + ".pid").c_str());
                 reaper_.Watch(*pid, [this, id, gen, exec_id](int wait_status) {
                   OnExecExit(id, gen, exec_id, wait_status);
                 });
                 pb::ExecProcessResponse resp;
                 resp.set_pid(static_cast<uint32_t>(*pid));
                 r.Reply(resp);
               });
  });
}

void ContainerService::Signal(pb::SignalProcessRequest req,
                              ttrpc::TypedResponder<pb::SignalProcessResponse> r) {
  const std::string id = req.container_id();
  AGENT_ASSIGN_OR_FAIL(Container * c, Find(id), r);
  const int signal = static_cast<int>(req.signal());
  if (signal <= 0 || signal > SIGRTMAX) {
    return r.Fail(InvalidArgumentError("signal " + std::to_string(req.signal()) + " is invalid"));
  }
  if (req.exec_id().empty()) {
    // What a stopped container left behind is still signalled with `all`,
    // as the host's shim does for runc: a container that joined the pause
    // container's pid namespace leaves its init's children alive there,
    // holding its stdio, and the shim ends them (all, SIGKILL) before it
    // reports the init's exit. Nothing to signal is "already finished".
    const bool left_behind = req.all() && c->state == ContainerState::kStopped;
    if (!left_behind) {
      if (Status s = CheckOp(id, c->state, ContainerOp::kSignal); !s.ok()) return r.Fail(s);
    }
    return backend_->Kill(
        id, signal, req.all(),
        [id, left_behind, r = SharedResponder(std::move(r))](Status s) mutable {
          if (!s.ok() && left_behind) {
            return r.Fail(NotFoundError("process already finished (" + id + "): " + s.message()));
          }
          if (!s.ok()) return r.Fail(s);
          r.Reply({});
        });
  }
  AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
  if (p->exit_status || p->pid == 0) {
    return r.Fail(NotFoundError("process already finished (" + req.exec_id() + " of " + id + ")"));
  }
  if (::kill(p->pid, signal) != 0) {
    return r.Fail(ErrnoError("kill", "process " + req.exec_id() + " of " + id));
  }
  r.Reply({});
}

void ContainerService::Wait(pb::WaitProcessRequest req,
                            ttrpc::TypedResponder<pb::WaitProcessResponse> r) {
  AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
  AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
  p->waiters.push_back(std::move(r));
  if (p->exit_status) AnswerWaiters(*p);
}

void ContainerService::SetExited(Process& p, int exit_status) {
  p.exit_status = exit_status;
  p.exited_at_unix_nano = NowUnixNano();
}

void ContainerService::AnswerWaiters(Process& p) {
  pb::WaitProcessResponse resp;
  resp.set_exit_status(static_cast<uint32_t>(*p.exit_status));
  resp.set_exited_at_unix_nano(p.exited_at_unix_nano);
  resp.set_oom_kills(p.oom_kills);
  for (auto& waiter : std::exchange(p.waiters, {})) waiter.Reply(resp);
}

void ContainerService::OnExecExit(const std::string& id, uint64_t generation,
                                  const std::string& exec_id, int wait_status) {
  Container* c = Still(id, generation);
  if (c == nullptr) return;
  auto it = c->execs.find(exec_id);
  if (it == c->execs.end()) return;
  SetExited(*it->second, ExitStatusFromWait(wait_status));
  it->second->stdio->ProcessExited();
  Log("container " + id + " exec " + exec_id + " exited with status " +
      std::to_string(*it->second->exit_status));
  AnswerWaiters(*it->second);
}

void ContainerService::OnInitExit(const std::string& id, uint64_t generation, int exit_status) {
  Container* c = Still(id, generation);
  if (c == nullptr) return;
  SetExited(c->init, exit_status);
  c->init.stdio->ProcessExited();
  Log("container " + id + " exited with status " + std::to_string(exit_status));
  if (c->state != ContainerState::kRemoving) c->state = ContainerState::kStopped;
  c->oom_watch.Reset();
  // The exit carries the OOM kills counted so far: the host publishes
  // TaskOOM before TaskExit from it (its ExitTracker), whenever the
  // GetOOMEvent for the same kill arrives.
  CheckOom(*c);
  c->init.oom_kills = c->oom_reported;
  AnswerWaiters(c->init);
}

void ContainerService::CheckOom(Container& c) {
  auto count = backend_->OomKillCount(c.id);
  if (!count || *count <= c.oom_reported) return;
  c.oom_reported = *count;
  Log("container " + c.id + ": OOM kill (memory.events oom_kill " + std::to_string(*count) + ")");
  oom_events_.push_back({c.id, *count});
  DeliverOomEvents();
}

void ContainerService::DeliverOomEvents() {
  while (!oom_events_.empty()) {
    auto waiter = oom_polls_.Take();
    if (!waiter) return;
    auto [id, count] = std::move(oom_events_.front());
    oom_events_.pop_front();
    pb::GetOOMEventResponse resp;
    resp.set_container_id(id);
    resp.set_oom_kills(count);
    waiter->responder.Reply(resp);
  }
}

void ContainerService::Remove(pb::RemoveContainerRequest req,
                              ttrpc::TypedResponder<pb::RemoveContainerResponse> r) {
  const std::string id = req.container_id();
  AGENT_ASSIGN_OR_FAIL(Container * c, Find(id), r);
  if (Status s = CheckOp(id, c->state, ContainerOp::kRemove); !s.ok()) return r.Fail(s);
  c->state = ContainerState::kRemoving;
  const uint64_t gen = c->generation;
  // --force: a created container's init is still waiting to be started.
  backend_->Delete(
      id, /*force=*/true, [this, id, gen, r = SharedResponder(std::move(r))](Status s) mutable {
        Container* c = Still(id, gen);
        if (c == nullptr) return r.Fail(NotFoundError("remove container " + id + ": removed"));
        if (!s.ok()) {
          c->state = c->init.exit_status ? ContainerState::kStopped : ContainerState::kCreated;
          return r.Fail(s.WithContext("remove container " + id));
        }
        Forget(id);
        Log("container " + id + " removed");
        r.Reply({});
      });
}

void ContainerService::Forget(const std::string& id) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return;
  std::unique_ptr<Container> c = std::move(it->second);
  containers_.erase(it);
  backend_->Release(id);
  const Status gone = NotFoundError("container " + id + " removed");
  for (Process* p : {&c->init}) {
    for (auto& w : std::exchange(p->waiters, {})) w.Fail(gone);
    if (p->stdio) p->stdio->FailAll(gone);
  }
  for (auto& [exec_id, p] : c->execs) {
    for (auto& w : std::exchange(p->waiters, {})) w.Fail(gone);
    if (p->stdio) p->stdio->FailAll(gone);
  }
  RemoveTree(c->dir);
}

}  // namespace hull::agent
