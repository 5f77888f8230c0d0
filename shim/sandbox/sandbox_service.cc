#include "shim/sandbox/sandbox_service.h"

#include <sys/utsname.h>

#include <string_view>
#include <utility>

#include "cri/runtime/v1/api.pb.h"
#include "oci/pause_spec.h"
#include "oci/sizing.h"
#include "shim/pod/pod_size.h"
#include "shim/process.h"

// Answers `done` with the Status of `expr` and returns, if it is not OK.
#define HULL_ANSWER_IF_ERROR(expr, done)  \
  do {                                    \
    ::hull::Status hull_status_ = (expr); \
    if (!hull_status_.ok()) {             \
      (done)(std::move(hull_status_));    \
      return;                             \
    }                                     \
  } while (0)

namespace hull::shim {
namespace sb = containerd::runtime::sandbox::v1;

namespace {

constexpr const char* kService = "containerd.runtime.sandbox.v1.Sandbox";
// What CRI reads SandboxStatusResponse.state as.
constexpr const char* kReady = "SANDBOX_READY";
constexpr const char* kNotReady = "SANDBOX_NOTREADY";
// containerd's typeurl name of an OCI spec (JSON in the Any's value).
constexpr const char* kSpecTypeUrl = "types.containerd.io/opencontainers/runtime-spec/1/Spec";

// CreateSandboxRequest.options: CRI marshals the PodSandboxConfig with its
// proto name, with or without a "type.googleapis.com/"-like prefix.
Result<::runtime::v1::PodSandboxConfig> PodSandboxConfigFrom(const google::protobuf::Any& options) {
  std::string_view url = options.type_url();
  if (auto slash = url.rfind('/'); slash != std::string_view::npos) url.remove_prefix(slash + 1);
  if (url != "runtime.v1.PodSandboxConfig") {
    return InvalidArgumentError(
        "options are " + (options.type_url().empty() ? std::string("empty") : options.type_url()) +
        ", not a runtime.v1.PodSandboxConfig");
  }
  ::runtime::v1::PodSandboxConfig config;
  if (!config.ParseFromString(options.value())) {
    return InvalidArgumentError("options: cannot parse the PodSandboxConfig");
  }
  return config;
}

std::string GoArch() {
  utsname u{};
  if (::uname(&u) != 0) return "amd64";
  std::string_view m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  if (m == "i686" || m == "i386") return "386";
  return std::string(m);
}

// Responders are move-only; the callbacks that carry them must be copyable.
template <typename Resp>
auto Answer(ttrpc::TypedResponder<Resp> responder) {
  return [out = ttrpc::SharedResponder<Resp>(std::move(responder))](Result<Resp> response) {
    out.Answer(response);
  };
}

template <typename Req, typename Resp>
void Register(ttrpc::Server& server, const char* method, SandboxService* self,
              void (SandboxService::*handler)(const Req&, std::function<void(Result<Resp>)>)) {
  server.RegisterUnary<Req, Resp>(
      kService, method,
      [self, handler](const ttrpc::CallContext&, Req request, ttrpc::TypedResponder<Resp> out) {
        (self->*handler)(request, Answer(std::move(out)));
      });
}

}  // namespace

// ---- what holds the pod: one seam, two kinds ----

class SandboxService::SandboxProcess {
 public:
  virtual ~SandboxProcess() = default;
  // Starts it: `done(pid)`, and later `on_exit(status)` once, when it ends.
  virtual void Start(std::function<void(int)> on_exit, std::function<void(Result<pid_t>)> done) = 0;
  // Ends it (SIGKILL); the exit still comes through `on_exit`.
  virtual void Kill(pid_t pid) = 0;
  // Ends it at the server's end (the backend's goes with its owner, the Pod).
  virtual void KillAtExit(pid_t pid) = 0;
  virtual const char* name() const = 0;
};

// hull's pause process (runc, crun): started from the pod's spec.
class SandboxService::PauseSandbox final : public SandboxProcess {
 public:
  PauseSandbox(PauseRunner& pause, const oci::Spec& spec) : pause_(pause), spec_(spec) {}
  void Start(std::function<void(int)> on_exit, std::function<void(Result<pid_t>)> done) override {
    done(pause_.Start(spec_, std::move(on_exit)));
  }
  void Kill(pid_t pid) override { pause_.Kill(pid); }
  // It must not outlive the server (it also has PR_SET_PDEATHSIG).
  void KillAtExit(pid_t pid) override { pause_.Kill(pid); }
  const char* name() const override { return "pause"; }

 private:
  PauseRunner& pause_;
  const oci::Spec& spec_;  // the service's, which outlives this
};

// The backend's own sandbox (runsc's gVisor sandbox, created at
// CreateSandbox by PrepareSandbox).
class SandboxService::BackendSandbox final : public SandboxProcess {
 public:
  BackendSandbox(Backend& backend, const Logger& log, std::string id)
      : backend_(backend), log_(log), id_(std::move(id)) {}
  void Start(std::function<void(int)> on_exit, std::function<void(Result<pid_t>)> done) override {
    backend_.StartSandbox(std::move(on_exit), std::move(done));
  }
  void Kill(pid_t) override {
    backend_.StopSandbox([log = log_, id = id_](hull::Status stopped) {
      if (!stopped.ok()) log.Warn("sandbox {}: stop: {}", id, stopped.ToString());
    });
  }
  void KillAtExit(pid_t) override {}
  const char* name() const override { return "sandbox"; }

 private:
  Backend& backend_;
  Logger log_;
  std::string id_;
};

SandboxService::SandboxService(ShimContext& ctx, Pod& pod, ResolveConfig resolve,
                               std::unique_ptr<PauseRunner> pause, ServerLifetime& lifetime)
    : ctx_(ctx),
      pod_(pod),
      resolve_(std::move(resolve)),
      pause_(std::move(pause)),
      lifetime_(lifetime),
      created_at_(ZeroTime()),
      exited_at_(ZeroTime()) {}

SandboxService::~SandboxService() {
  *alive_ = false;
  if (state_ == SandboxState::kReady && pid_ > 0) process_->KillAtExit(pid_);
}

void SandboxService::RegisterWith(ttrpc::Server& server) {
  Register(server, "CreateSandbox", this, &SandboxService::Create);
  Register(server, "StartSandbox", this, &SandboxService::Start);
  Register(server, "Platform", this, &SandboxService::Platform);
  Register(server, "StopSandbox", this, &SandboxService::Stop);
  Register(server, "WaitSandbox", this, &SandboxService::Wait);
  Register(server, "SandboxStatus", this, &SandboxService::Status);
  Register(server, "PingSandbox", this, &SandboxService::Ping);
  Register(server, "ShutdownSandbox", this, &SandboxService::Shutdown);
  Register(server, "SandboxMetrics", this, &SandboxService::Metrics);
}

hull::Status SandboxService::Check(const std::string& id) const {
  if (state_ == SandboxState::kNone || id != id_) {
    return NotFoundError("sandbox " + id + " not found");
  }
  return hull::Status::Ok();
}

hull::Status SandboxService::MoveTo(SandboxState to) {
  HULL_RETURN_IF_ERROR_CTX(CheckSandboxTransition(state_, to), "sandbox " + id_);
  state_ = to;
  return hull::Status::Ok();
}

// ---- CreateSandbox: the pause spec, the size record, the pod's admission ----

void SandboxService::Create(const sb::CreateSandboxRequest& r,
                            Reply<sb::CreateSandboxResponse> done) {
  const std::string& id = r.sandbox_id();
  const std::string what = "create sandbox " + id;
  if (id.empty()) return done(InvalidArgumentError("create sandbox: no sandbox id"));
  if (r.bundle_path().empty()) return done(InvalidArgumentError(what + ": no bundle"));
  if (state_ != SandboxState::kNone || creating_) {
    return done(
        AlreadyExistsError("sandbox " + (id_.empty() ? id : id_) + " already exists in this shim"));
  }
  if (!r.rootfs().empty()) {
    // CRI never sends one; hull's pause process needs none.
    ctx_.log.Warn("{}: rootfs mounts ignored", what);
  }
  Result<::runtime::v1::PodSandboxConfig> pod_config = PodSandboxConfigFrom(r.options());
  if (!pod_config) return done(pod_config.error().WithContext(what));
  Result<ShimConfig> config = resolve_(r.bundle_path());
  if (!config) return done(config.error().WithContext(what));

  // The size from the PodSandboxConfig itself (resources and overhead),
  // recorded where Pod::Size reads it back, unless an earlier create of this
  // bundle recorded one.
  const std::string record = r.bundle_path() + "/" + std::string(kPodSizeFile);
  if (Result<oci::PodSize> recorded = ReadPodSizeFile(record);
      !recorded && recorded.error().code() == Code::kNotFound) {
    oci::PodSize size = oci::SizeFromPodSandboxConfig(*pod_config, config->sizing.policy);
    ctx_.log.Info("{}: pod size {}", what, size.ToString());
    for (const std::string& warning : size.warnings) ctx_.log.Warn("{}: {}", what, warning);
    HULL_ANSWER_IF_ERROR(WritePodSizeFile(r.bundle_path(), size, ctx_.reaper.spawner()), done);
  }

  // hull's pause process applies no seccomp profile, so the spec asks for
  // none (a RuntimeDefault request would otherwise need containerd's
  // built-in profile).
  ::runtime::v1::PodSandboxConfig spec_config = *pod_config;
  spec_config.mutable_linux()->mutable_security_context()->clear_seccomp();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  spec_config.mutable_linux()->mutable_security_context()->clear_seccomp_profile_path();
#pragma GCC diagnostic pop
  oci::PauseSpecOptions options{
      .sandbox_id = id, .netns_path = r.netns_path(), .containerd_namespace = ctx_.ns};
  Result<oci::Spec> spec =
      oci::BuildPauseSpec(spec_config, oci::ImageConfig{.entrypoint = {"/pause"}}, options);
  if (!spec) return done(spec.error().WithContext(what + ": pause spec"));

  creating_ = true;
  id_ = id;
  bundle_ = r.bundle_path();
  spec_ = *spec;
  std::weak_ptr<bool> alive = alive_;
  pod_.Admit(
      id, bundle_, *spec, *config,
      [this, alive, what, done = std::move(done)](Result<Pod::Admission> admission) {
        if (alive.expired()) return done(UnavailableError("shim is shutting down"));
        creating_ = false;
        if (!admission) {
          id_.clear();
          spec_.reset();
          return done(admission.error().WithContext(what));
        }
        backend_ = admission->backend;
        if (backend_->RunsSandboxProcess()) {
          process_ = std::make_unique<BackendSandbox>(*backend_, ctx_.log, id_);
        } else {
          process_ = std::make_unique<PauseSandbox>(*pause_, *spec_);
        }
        pod_.HoldSandbox();
        HULL_ANSWER_IF_ERROR(MoveTo(SandboxState::kCreated), done);
        lifetime_.SandboxCreated();
        ctx_.log.Info("{}: created ({})", what, backend_->name());
        done(sb::CreateSandboxResponse());
      },
      /*sandbox_api=*/true);
}

// ---- StartSandbox: the pause process, or the backend's sandbox ----

void SandboxService::Start(const sb::StartSandboxRequest& r, Reply<sb::StartSandboxResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  if (starting_) return done(FailedPreconditionError("start sandbox " + id_ + ": starting"));
  HULL_ANSWER_IF_ERROR(
      CheckSandboxTransition(state_, SandboxState::kReady).WithContext("start sandbox " + id_),
      done);
  std::weak_ptr<bool> alive = alive_;
  auto on_exit = [this, alive](int exit_status) {
    if (alive.expired()) return;
    Exited(exit_status);
  };
  starting_ = true;
  process_->Start(on_exit, [this, alive, done = std::move(done)](Result<pid_t> pid) {
    if (alive.expired()) return done(UnavailableError("shim is shutting down"));
    starting_ = false;
    Started(std::move(pid), done);
  });
}

void SandboxService::Started(Result<pid_t> pid, const Reply<sb::StartSandboxResponse>& done) {
  if (!pid) return done(pid.error().WithContext("start sandbox " + id_));
  // A stop that came while it started: the sandbox is not ready any more.
  if (state_ != SandboxState::kCreated) {
    pid_ = *pid;
    Kill();
    return done(FailedPreconditionError("start sandbox " + id_ + ": stopped while starting"));
  }
  pid_ = *pid;
  created_at_ = NowTime();
  MoveTo(SandboxState::kReady).IgnoreError();
  ctx_.log.Info("sandbox {}: {} process {}", id_, process_->name(), pid_);
  sb::StartSandboxResponse response;
  response.set_pid(static_cast<uint32_t>(pid_));
  *response.mutable_created_at() = created_at_;
  response.mutable_spec()->set_type_url(kSpecTypeUrl);
  response.mutable_spec()->set_value(spec_->Dump());
  done(response);
}

void SandboxService::Exited(int exit_status) {
  exit_status_ = static_cast<uint32_t>(exit_status);
  exited_at_ = NowTime();
  if (state_ == SandboxState::kReady) MoveTo(SandboxState::kStopped).IgnoreError();
  ctx_.log.Info("sandbox {}: {} process {} exited with {}", id_, process_->name(), pid_,
                exit_status);
  std::vector<std::function<void()>> waiting = std::move(on_stopped_);
  on_stopped_.clear();
  for (auto& then : waiting) then();
}

void SandboxService::Kill() {
  process_->Kill(pid_);
}

void SandboxService::StopThen(std::function<void()> then) {
  if (state_ == SandboxState::kReady) {
    on_stopped_.push_back(std::move(then));
    // Once: a second stop while the first waits must not signal a pid the
    // reaper may have released meanwhile.
    if (!kill_sent_) Kill();
    kill_sent_ = true;
    return;
  }
  if (state_ == SandboxState::kCreated) {
    // Never started: stopped at once, with nothing that exited.
    exited_at_ = NowTime();
    MoveTo(SandboxState::kStopped).IgnoreError();
    std::vector<std::function<void()>> waiting = std::move(on_stopped_);
    on_stopped_.clear();
    for (auto& w : waiting) w();
  }
  then();
}

// ---- StopSandbox / WaitSandbox ----

void SandboxService::Stop(const sb::StopSandboxRequest& r, Reply<sb::StopSandboxResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  if (state_ == SandboxState::kShutdown) {
    return done(FailedPreconditionError("sandbox " + id_ + " is shut down"));
  }
  // The pause process ends at SIGKILL: timeout_secs has nothing to wait for.
  StopThen([done = std::move(done)] { done(sb::StopSandboxResponse()); });
}

void SandboxService::Wait(const sb::WaitSandboxRequest& r, Reply<sb::WaitSandboxResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  auto answer = [this, done = std::move(done)] {
    sb::WaitSandboxResponse response;
    response.set_exit_status(exit_status_);
    *response.mutable_exited_at() = exited_at_;
    done(response);
  };
  if (state_ == SandboxState::kStopped || state_ == SandboxState::kShutdown) return answer();
  on_stopped_.push_back(std::move(answer));
}

// ---- SandboxStatus / Platform / PingSandbox / SandboxMetrics ----

void SandboxService::Status(const sb::SandboxStatusRequest& r,
                            Reply<sb::SandboxStatusResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  sb::SandboxStatusResponse response;
  response.set_sandbox_id(id_);
  response.set_pid(static_cast<uint32_t>(pid_));
  response.set_state(state_ == SandboxState::kReady ? kReady : kNotReady);
  *response.mutable_created_at() = created_at_;
  *response.mutable_exited_at() = exited_at_;
  if (r.verbose()) {
    (*response.mutable_info())["state"] = SandboxStateName(state_);
    if (backend_ != nullptr) (*response.mutable_info())["backend"] = backend_->name();
    (*response.mutable_info())["bundle"] = bundle_;
  }
  done(response);
}

void SandboxService::Platform(const sb::PlatformRequest& r, Reply<sb::PlatformResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  sb::PlatformResponse response;
  response.mutable_platform()->set_os("linux");
  response.mutable_platform()->set_architecture(GoArch());
  done(response);
}

void SandboxService::Ping(const sb::PingRequest& r, Reply<sb::PingResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  done(sb::PingResponse());
}

void SandboxService::Metrics(const sb::SandboxMetricsRequest& r,
                             Reply<sb::SandboxMetricsResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  if (state_ != SandboxState::kReady) {
    return done(FailedPreconditionError("sandbox " + id_ + " is " + SandboxStateName(state_) +
                                        ": no metrics"));
  }
  // The pause process's cgroup, read as the backend reads a container's.
  backend_->Stats(id_, pid_, [id = id_, done = std::move(done)](Result<google::protobuf::Any> s) {
    if (!s) return done(s.error().WithContext("sandbox metrics " + id));
    sb::SandboxMetricsResponse response;
    *response.mutable_metrics()->mutable_timestamp() = NowTime();
    response.mutable_metrics()->set_id(id);
    *response.mutable_metrics()->mutable_data() = std::move(*s);
    done(response);
  });
}

// ---- ShutdownSandbox ----

void SandboxService::Shutdown(const sb::ShutdownSandboxRequest& r,
                              Reply<sb::ShutdownSandboxResponse> done) {
  HULL_ANSWER_IF_ERROR(Check(r.sandbox_id()), done);
  HULL_ANSWER_IF_ERROR(CheckSandboxTransition(state_, SandboxState::kShutdown)
                           .WithContext("shut down sandbox " + id_),
                       done);
  if (!pod_.AllDeleted()) {
    return done(FailedPreconditionError("shut down sandbox " + id_ + ": " +
                                        std::to_string(pod_.container_count()) +
                                        " container(s) of the pod not deleted"));
  }
  std::weak_ptr<bool> alive = alive_;
  StopThen([this, alive, done = std::move(done)] {
    if (alive.expired()) return done(UnavailableError("shim is shutting down"));
    MoveTo(SandboxState::kShutdown).IgnoreError();
    pod_.ReleaseSandbox([this, alive, done](hull::Status torn_down) {
      if (alive.expired()) return done(UnavailableError("shim is shutting down"));
      if (!torn_down.ok()) {
        ctx_.log.Warn("sandbox {}: tear down: {}", id_, torn_down.ToString());
      }
      ctx_.log.Info("sandbox {}: shut down", id_);
      done(sb::ShutdownSandboxResponse());
      lifetime_.SandboxShutDown();
    });
  });
}

}  // namespace hull::shim
