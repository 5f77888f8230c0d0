// VmBackend's container calls: each one agent call (vm_backend.h). Guest
// pids go into the pid files, never to the host's reaper or kill(2).
#include "shim/backend/vm/vm_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "google/protobuf/any.pb.h"
#include "shim/mount/spawner_bundle_files.h"

namespace hull::shim::vm {

namespace pb = ::hull::agent::v1;

namespace {

// A process's exit status when the VM (or the agent) lost it: 128 + SIGKILL,
// what a container killed with its machine reports (QEMU killed, the guest
// crashed), and what kubelet reads as "killed".
constexpr int kLostExitStatus = 128 + SIGKILL;

UniqueFd Dup(int fd) {
  if (fd < 0) return UniqueFd();
  return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
}

pb::Stdio StdioFlags(const ProcessStdio& stdio, bool terminal) {
  pb::Stdio flags;
  flags.set_terminal(terminal);
  flags.set_stdin(terminal || stdio.stdin_fd >= 0);
  flags.set_stdout(terminal || stdio.stdout_fd >= 0);
  flags.set_stderr(!terminal && stdio.stderr_fd >= 0);
  return flags;
}

// The container's memory limit in its config.json (linux.resources.memory),
// bytes; 0: none.
int64_t SpecMemoryLimit(const std::string& spec_json) {
  const nlohmann::json spec = nlohmann::json::parse(spec_json, nullptr, false);
  if (!spec.is_object() || !spec.contains("linux") || !spec["linux"].is_object() ||
      !spec["linux"].contains("resources")) {
    return 0;
  }
  return MemoryLimitIn(spec["linux"]["resources"]).value_or(0);
}

}  // namespace

void VmBackend::Post(Done done, Status status) {
  loop_.Post([done = std::move(done), status = std::move(status)] { done(status); });
}

template <typename Resp>
std::function<void(Result<Resp>)> VmBackend::Answer(std::string what, Done done) {
  std::weak_ptr<bool> alive = alive_;
  return [alive, what = std::move(what), done = std::move(done)](Result<Resp> r) {
    if (alive.expired()) return done(NotFoundError("container deleted"));
    done(r ? Status::Ok() : r.error().WithContext(what));
  };
}

void VmBackend::Release(const std::string& id) {
  containers_.erase(id);
}

std::map<std::string, int64_t> VmBackend::ContainerLimits() const {
  std::map<std::string, int64_t> limits;
  for (const auto& [id, c] : containers_) {
    if (id != sandbox_id_) limits[id] = c.memory_limit;
  }
  return limits;
}

Status VmBackend::StartStdio(const std::string& id, const std::string& exec_id,
                             const ProcessStdio& stdio, bool terminal) {
  UniqueFd in, out, err;
  if (terminal) {
    HULL_ASSIGN_OR_RETURN(UniqueFd slave, HostPtyForConsoleSocket(stdio.console_socket));
    in = Dup(slave.get());
    out = std::move(slave);
  } else {
    in = Dup(stdio.stdin_fd);
    out = Dup(stdio.stdout_fd);
    err = Dup(stdio.stderr_fd);
  }
  containers_[id].stdio[exec_id] = std::make_unique<GuestStdio>(
      loop_, agent_, id, exec_id, terminal, std::move(in), std::move(out), std::move(err));
  return Status::Ok();
}

void VmBackend::Create(const CreateRequest& req, Done done) {
  if (!agent_ || !share_) {
    return Post(std::move(done),
                FailedPreconditionError("create " + req.id + ": the pod's VM is not running"));
  }
  if (!req.checkpoint.empty()) {
    return Post(
        std::move(done),
        UnimplementedError("create " + req.id +
                           ": the vm backend cannot restore a checkpoint (docs/backends.md)"));
  }
  auto spec = ReadFile(req.bundle + "/config.json");
  if (!spec) return Post(std::move(done), spec.error().WithContext("create " + req.id));
  Result<std::string> rootfs = HostRootfs(req.bundle, *spec);
  if (!rootfs) return Post(std::move(done), rootfs.error().WithContext("create " + req.id));
  // The namespaces it may join: those of the pod's container inits (the
  // agent keeps only those still running).
  std::set<int> pod_inits;
  for (const auto& [other, c] : containers_) {
    if (c.init_pid > 0) pod_inits.insert(c.init_pid);
  }
  Result<GuestContainer> guest =
      share_->AddContainer(req.id, req.bundle, *rootfs, *spec, pod_inits);
  if (!guest) return Post(std::move(done), guest.error().WithContext("create " + req.id));
  const bool terminal = !req.stdio.console_socket.empty();

  pb::CreateContainerRequest create;
  create.set_container_id(req.id);
  create.set_bundle(guest->bundle);
  create.set_spec_json(guest->spec_json);
  *create.mutable_stdio() = StdioFlags(req.stdio, terminal);
  // The stdio descriptors are the caller's until `done`: ours are dups.
  // Only headroom needs the containers' limits (Update, PodMemoryMax).
  containers_[req.id].memory_limit = capacity_.headroom_mib > 0 ? SpecMemoryLimit(*spec) : 0;
  if (capacity_.headroom_mib > 0 && req.id != sandbox_id_) {
    // A container made after a resize (a restart at its new limit) raises
    // the pod's memory as UpdateContainer would; limits beyond the VM hold
    // the pod at what the VM can give (a create is not a resize: the
    // kubelet sized the VM from these limits).
    Result<uint64_t> pod_max = PodMemoryMax(req.id, ContainerLimits(), capacity_);
    if (!pod_max) {
      log_.Warn("pod {}: create {}: the pod is held at what its VM can give ({})", sandbox_id_,
                req.id, pod_max.error().message());
    }
    create.set_pod_memory_max_bytes(pod_max ? *pod_max : ContainersCapMib(capacity_) << 20);
  }
  Status stdio = StartStdio(req.id, "", req.stdio, terminal);
  if (!stdio.ok()) {
    share_->RemoveContainer(req.id).IgnoreError();
    containers_.erase(req.id);
    return Post(std::move(done), stdio.WithContext("create " + req.id + ": terminal"));
  }
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::CreateContainerResponse>(
      "CreateContainer", create,
      [this, alive, req, done = std::move(done)](Result<pb::CreateContainerResponse> r) {
        if (alive.expired()) return done(NotFoundError("container deleted"));
        auto fail = [&](Status status) {
          containers_[req.id].stdio.erase("");
          if (share_) share_->RemoveContainer(req.id).IgnoreError();
          done(status.WithContext("create " + req.id));
        };
        if (!r) return fail(r.error());
        if (r->pid() == 0 || r->pid() > static_cast<uint32_t>(std::numeric_limits<pid_t>::max())) {
          return fail(InternalError("malformed agent answer: CreateContainer gave pid " +
                                    std::to_string(r->pid())));
        }
        Status written =
            WriteBundleFileVia(reaper_.spawner(), req.pid_file, std::to_string(r->pid()));
        if (!written.ok()) return fail(written);
        containers_[req.id].init_pid = static_cast<pid_t>(r->pid());
        containers_[req.id].stdio[""]->Start();
        done(Status::Ok());
      });
}

void VmBackend::Start(const std::string& id, Done done) {
  if (!agent_) return Post(std::move(done), FailedPreconditionError("the pod's VM is not running"));
  pb::StartContainerRequest req;
  req.set_container_id(id);
  agent_->Call<pb::StartContainerResponse>(
      "StartContainer", req, Answer<pb::StartContainerResponse>("start " + id, std::move(done)));
}

void VmBackend::Exec(const ExecRequest& req, Done done) {
  if (!agent_) return Post(std::move(done), FailedPreconditionError("the pod's VM is not running"));
  auto process = ReadFile(req.process_json);
  if (!process) return Post(std::move(done), process.error().WithContext("exec " + req.exec_id));
  const bool terminal = !req.stdio.console_socket.empty();
  pb::ExecProcessRequest exec;
  exec.set_container_id(req.id);
  exec.set_exec_id(req.exec_id);
  exec.set_process_json(*process);
  *exec.mutable_stdio() = StdioFlags(req.stdio, terminal);
  Status stdio = StartStdio(req.id, req.exec_id, req.stdio, terminal);
  if (!stdio.ok()) return Post(std::move(done), stdio.WithContext("exec " + req.exec_id));
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::ExecProcessResponse>(
      "ExecProcess", exec,
      [this, alive, req, done = std::move(done)](Result<pb::ExecProcessResponse> r) {
        if (alive.expired()) return done(NotFoundError("container deleted"));
        auto& stdio = containers_[req.id].stdio;
        if (!r) {
          stdio.erase(req.exec_id);
          return done(r.error().WithContext("exec " + req.exec_id));
        }
        if (r->pid() == 0) {
          stdio.erase(req.exec_id);
          return done(InternalError("malformed agent answer: ExecProcess gave pid 0"));
        }
        Status written =
            WriteBundleFileVia(reaper_.spawner(), req.pid_file, std::to_string(r->pid()));
        if (!written.ok()) return done(written);
        if (auto it = stdio.find(req.exec_id); it != stdio.end()) it->second->Start();
        done(Status::Ok());
      });
}

void VmBackend::Kill(const std::string& id, int signal, bool all, Done done) {
  if (!agent_) return Post(std::move(done), NotFoundError("process already finished"));
  pb::SignalProcessRequest req;
  req.set_container_id(id);
  req.set_signal(static_cast<uint32_t>(signal));
  req.set_all(all);
  agent_->Call<pb::SignalProcessResponse>(
      "SignalProcess", req, Answer<pb::SignalProcessResponse>("kill " + id, std::move(done)));
}

void VmBackend::SignalExec(const std::string& id, const std::string& exec_id, pid_t, int signal,
                           Done done) {
  if (!agent_) return Post(std::move(done), NotFoundError("process already finished"));
  pb::SignalProcessRequest req;
  req.set_container_id(id);
  req.set_exec_id(exec_id);
  req.set_signal(static_cast<uint32_t>(signal));
  agent_->Call<pb::SignalProcessResponse>(
      "SignalProcess", req,
      Answer<pb::SignalProcessResponse>("kill exec " + exec_id, std::move(done)));
}

void VmBackend::Delete(const std::string& id, bool, Done done) {
  std::weak_ptr<bool> alive = alive_;
  auto finish = [this, alive, id, done = std::move(done)](Status status) mutable {
    if (alive.expired()) return done(NotFoundError("container deleted"));
    if (!status.ok() && status.code() != Code::kNotFound) return done(status);
    if (share_) {
      Status removed = share_->RemoveContainer(id);
      if (!removed.ok()) return done(removed.WithContext("delete " + id));
    }
    done(Status::Ok());
  };
  if (!agent_) return loop_.Post([finish = std::move(finish)]() mutable { finish(Status::Ok()); });
  pb::RemoveContainerRequest req;
  req.set_container_id(id);
  agent_->Call<pb::RemoveContainerResponse>(
      "RemoveContainer", req,
      [id, finish = std::move(finish)](Result<pb::RemoveContainerResponse> r) mutable {
        finish(r ? Status::Ok() : r.error().WithContext("delete " + id));
      });
}

void VmBackend::Pause(const std::string& id, Done done) {
  if (!agent_) return Post(std::move(done), FailedPreconditionError("the pod's VM is not running"));
  pb::PauseContainerRequest req;
  req.set_container_id(id);
  agent_->Call<pb::PauseContainerResponse>(
      "PauseContainer", req, Answer<pb::PauseContainerResponse>("pause " + id, std::move(done)));
}

void VmBackend::Resume(const std::string& id, Done done) {
  if (!agent_) return Post(std::move(done), FailedPreconditionError("the pod's VM is not running"));
  pb::ResumeContainerRequest req;
  req.set_container_id(id);
  agent_->Call<pb::ResumeContainerResponse>(
      "ResumeContainer", req, Answer<pb::ResumeContainerResponse>("resume " + id, std::move(done)));
}

void VmBackend::Update(const std::string& id, const std::string& resources_json, Done done) {
  if (!agent_) return Post(std::move(done), FailedPreconditionError("the pod's VM is not running"));
  // Beyond what the VM booted with: refused before the guest changes.
  if (Status fits = CheckResizeFits(id, resources_json, capacity_); !fits.ok()) {
    log_.Warn("pod {}: {}", sandbox_id_, fits.message());
    return Post(std::move(done), std::move(fits));
  }
  pb::UpdateContainerRequest req;
  req.set_container_id(id);
  req.set_resources_json(resources_json);
  std::optional<int64_t> memory = MemoryLimitOf(resources_json);
  if (capacity_.headroom_mib > 0) {
    // With headroom the pod's containers together follow their limits.
    std::map<std::string, int64_t> limits = ContainerLimits();
    if (memory) limits[id] = *memory;
    Result<uint64_t> pod_max = PodMemoryMax(id, limits, capacity_);
    if (!pod_max) {
      log_.Warn("pod {}: {}", sandbox_id_, pod_max.error().message());
      return Post(std::move(done), pod_max.error());
    }
    req.set_pod_memory_max_bytes(*pod_max);
  }
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::UpdateContainerResponse>(
      "UpdateContainer", req,
      [this, alive, id, memory,
       answer = Answer<pb::UpdateContainerResponse>("update " + id, std::move(done))](
          Result<pb::UpdateContainerResponse> r) mutable {
        if (r && memory && !alive.expired()) {
          if (auto c = containers_.find(id); c != containers_.end())
            c->second.memory_limit = *memory;
        }
        answer(std::move(r));
      });
}

void VmBackend::Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) {
  if (!agent_) {
    return loop_.Post(
        [done = std::move(done)] { done(FailedPreconditionError("the pod's VM is not running")); });
  }
  pb::ListProcessesRequest req;
  req.set_container_id(id);
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::ListProcessesResponse>(
      "ListProcesses", req,
      [alive, id, done = std::move(done)](Result<pb::ListProcessesResponse> r) {
        if (alive.expired()) return done(NotFoundError("container deleted"));
        if (!r) return done(r.error().WithContext("ps " + id));
        std::vector<pid_t> pids(r->pids().begin(), r->pids().end());
        done(std::move(pids));
      });
}

void VmBackend::Checkpoint(const CheckpointRequest& req, Done done) {
  Post(std::move(done),
       UnimplementedError("checkpoint " + req.id +
                          ": the vm backend cannot checkpoint a container (its processes live "
                          "in the guest kernel, where criu does not run; docs/backends.md)"));
}

void VmBackend::Stats(const std::string& id, pid_t,
                      std::function<void(Result<google::protobuf::Any>)> done) {
  if (!agent_) {
    return loop_.Post(
        [done = std::move(done)] { done(FailedPreconditionError("the pod's VM is not running")); });
  }
  if (id == sandbox_id_ && !containers_.contains(id)) {
    // The Sandbox API's pod (SandboxMetrics) has no container in the guest.
    return loop_.Post([done = std::move(done)] {
      done(
          UnimplementedError("the VM pod's sandbox has no metrics of its own (its containers' "
                             "stats are per container)"));
    });
  }
  pb::StatsContainerRequest req;
  req.set_container_id(id);
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::StatsContainerResponse>(
      "StatsContainer", req,
      [alive, id, done = std::move(done)](Result<pb::StatsContainerResponse> r) {
        if (alive.expired()) return done(NotFoundError("container deleted"));
        if (!r) return done(r.error().WithContext("stats " + id));
        google::protobuf::Any any;
        any.set_type_url("io.containerd.cgroups.v2.Metrics");
        if (!r->metrics().SerializeToString(any.mutable_value())) {
          return done(InternalError("stats " + id + ": serialize metrics"));
        }
        done(std::move(any));
      });
}

// ---- OOM ----

Result<EventHandle> VmBackend::WatchOom(const std::string& id, pid_t,
                                        std::function<void()> on_oom) {
  containers_[id].on_oom = std::move(on_oom);
  // The events come from the one GetOOMEvent long-poll of the pod
  // (PollOom); the handle only has to be active. The Container drops it at
  // its delete, and Release forgets the callback.
  return loop_.AddTimer(std::chrono::hours(24 * 365), [] {});
}

Result<uint64_t> VmBackend::OomKillCount(const std::string& id) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return UnimplementedError("no OOM counter for " + id);
  return it->second.oom_kills;
}

void VmBackend::PollOom() {
  if (!agent_) return;
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::GetOOMEventResponse>(
      "GetOOMEvent", pb::GetOOMEventRequest(),
      [this, alive](Result<pb::GetOOMEventResponse> r) {
        if (alive.expired() || tearing_down_) return;
        if (!r) {
          if (r.error().code() == Code::kDeadlineExceeded) return PollOom();
          // The agent cannot (Unimplemented) or the VM is gone: no retry storm.
          if (r.error().code() != Code::kUnavailable) {
            oom_poll_ = loop_.AddTimer(std::chrono::seconds(1), [this, alive] {
              if (!alive.expired()) PollOom();
            });
          }
          return;
        }
        auto it = containers_.find(r->container_id());
        if (it != containers_.end()) {
          // An old agent sends no count: one more kill.
          const uint64_t count = r->oom_kills() > 0 ? r->oom_kills() : it->second.oom_kills + 1;
          it->second.oom_kills = std::max(it->second.oom_kills, count);
          if (it->second.on_oom) it->second.on_oom();
        }
        PollOom();
      },
      kLongPoll);
}

// ---- exits ----

void VmBackend::WatchInitExit(const std::string& id, pid_t,
                              std::function<void(int exit_status)> on_exit) {
  uint64_t generation = ++next_wait_;
  containers_[id].waits[""] = generation;
  Wait(id, "", generation, std::move(on_exit));
}

void VmBackend::WatchExecExit(const std::string& id, const std::string& exec_id, pid_t,
                              std::function<void(int exit_status)> on_exit) {
  uint64_t generation = ++next_wait_;
  containers_[id].waits[exec_id] = generation;
  Wait(id, exec_id, generation, std::move(on_exit));
}

void VmBackend::ForgetExit(const std::string& id, const std::string& exec_id, pid_t) {
  auto it = containers_.find(id);
  if (it != containers_.end()) it->second.waits.erase(exec_id);
}

void VmBackend::Wait(const std::string& id, const std::string& exec_id, uint64_t generation,
                     std::function<void(int)> on_exit) {
  auto current = [this, id, exec_id, generation] {
    auto it = containers_.find(id);
    if (it == containers_.end()) return false;
    auto w = it->second.waits.find(exec_id);
    return w != it->second.waits.end() && w->second == generation;
  };
  if (!current()) return;
  std::weak_ptr<bool> alive = alive_;
  auto report = [this, alive, id, exec_id, on_exit](int status) {
    if (alive.expired()) return;
    if (auto it = containers_.find(id); it != containers_.end()) it->second.waits.erase(exec_id);
    on_exit(status);
  };
  if (!agent_) return loop_.Post([report] { report(kLostExitStatus); });
  pb::WaitProcessRequest req;
  req.set_container_id(id);
  req.set_exec_id(exec_id);
  agent_->Call<pb::WaitProcessResponse>(
      "WaitProcess", req,
      [this, alive, id, exec_id, generation, on_exit, current,
       report](Result<pb::WaitProcessResponse> r) {
        if (alive.expired() || !current()) return;
        if (r) {
          // The OOM kills counted at the init's exit: the ExitTracker reads
          // them (OomKillCount) before it publishes the exit.
          if (auto it = containers_.find(id); it != containers_.end() && exec_id.empty()) {
            it->second.oom_kills = std::max(it->second.oom_kills, r->oom_kills());
          }
          return report(static_cast<int>(r->exit_status()));
        }
        if (r.error().code() == Code::kDeadlineExceeded) {
          return Wait(id, exec_id, generation, on_exit);
        }
        // The VM or the agent lost the process: report it gone rather than
        // leave the task running forever.
        report(kLostExitStatus);
      },
      kLongPoll);
}

void VmBackend::ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t width,
                               uint32_t height) {
  if (!agent_) return;
  pb::TtyWinResizeRequest req;
  req.set_container_id(id);
  req.set_exec_id(exec_id);
  req.set_rows(height);
  req.set_columns(width);
  agent_->Call<pb::TtyWinResizeResponse>("TtyWinResize", req,
                                         [](Result<pb::TtyWinResizeResponse>) {});
}

}  // namespace hull::shim::vm
