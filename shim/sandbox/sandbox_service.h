// SandboxService: containerd's Sandbox API (containerd.runtime.sandbox.v1.
// Sandbox, containerd 2.x with CRI `sandboxer = "shim"`) for the one pod this
// server serves. It routes: CreateSandbox builds the pause spec from the
// PodSandboxConfig containerd passes (oci::BuildPauseSpec), records the pod's
// size (oci::SizeFromPodSandboxConfig) and has the Pod admit it as it admits
// a pause container (cgroup placement, backend, PrepareSandbox);
// StartSandbox starts the pause process (PauseRunner), or the backend's own
// sandbox process where it has one (runsc's gVisor sandbox, created by
// PrepareSandbox from the pause spec); the pod's app
// containers then arrive through the TaskService into the same Pod. The
// sandbox's life is SandboxState's transition table. Every call answers
// through a callback (the ttrpc registration wraps them). Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "containerd/runtime/sandbox/v1/sandbox.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "oci/spec.h"
#include "shim/config/config.h"
#include "shim/context.h"
#include "shim/pod/pod.h"
#include "shim/sandbox/pause_process.h"
#include "shim/sandbox/sandbox_state.h"
#include "shim/server_lifetime.h"
#include "ttrpc/server.h"

namespace hull::shim {

class SandboxService {
 public:
  // The config of the sandbox in `bundle` (what `start` stored there). A
  // seam: the server reads the bundle and hull's config file.
  using ResolveConfig = std::function<Result<ShimConfig>(const std::string& bundle)>;
  template <typename T>
  using Reply = std::function<void(Result<T>)>;

  // CreateSandbox and ShutdownSandbox are reported to `lifetime`, which
  // decides when the server ends.
  SandboxService(ShimContext& ctx, Pod& pod, ResolveConfig resolve,
                 std::unique_ptr<PauseRunner> pause, ServerLifetime& lifetime);
  ~SandboxService();
  SandboxService(const SandboxService&) = delete;
  SandboxService& operator=(const SandboxService&) = delete;

  void RegisterWith(ttrpc::Server& server);

  SandboxState state() const { return state_; }

  void Create(const containerd::runtime::sandbox::v1::CreateSandboxRequest& r,
              Reply<containerd::runtime::sandbox::v1::CreateSandboxResponse> done);
  void Start(const containerd::runtime::sandbox::v1::StartSandboxRequest& r,
             Reply<containerd::runtime::sandbox::v1::StartSandboxResponse> done);
  void Platform(const containerd::runtime::sandbox::v1::PlatformRequest& r,
                Reply<containerd::runtime::sandbox::v1::PlatformResponse> done);
  void Stop(const containerd::runtime::sandbox::v1::StopSandboxRequest& r,
            Reply<containerd::runtime::sandbox::v1::StopSandboxResponse> done);
  void Wait(const containerd::runtime::sandbox::v1::WaitSandboxRequest& r,
            Reply<containerd::runtime::sandbox::v1::WaitSandboxResponse> done);
  void Status(const containerd::runtime::sandbox::v1::SandboxStatusRequest& r,
              Reply<containerd::runtime::sandbox::v1::SandboxStatusResponse> done);
  void Ping(const containerd::runtime::sandbox::v1::PingRequest& r,
            Reply<containerd::runtime::sandbox::v1::PingResponse> done);
  void Shutdown(const containerd::runtime::sandbox::v1::ShutdownSandboxRequest& r,
                Reply<containerd::runtime::sandbox::v1::ShutdownSandboxResponse> done);
  void Metrics(const containerd::runtime::sandbox::v1::SandboxMetricsRequest& r,
               Reply<containerd::runtime::sandbox::v1::SandboxMetricsResponse> done);

 private:
  // NotFound unless `id` is the sandbox this server created.
  hull::Status Check(const std::string& id) const;
  hull::Status MoveTo(SandboxState to);
  // The pause process exited (or, never started, the sandbox was stopped).
  void Exited(int exit_status);
  // StartSandbox's answer once the pause process or the backend's sandbox
  // started (or failed to).
  void Started(Result<pid_t> pid,
               const Reply<containerd::runtime::sandbox::v1::StartSandboxResponse>& done);
  // Ends what holds the pod: the pause process or the backend's sandbox.
  void Kill();
  // Kills the pause process (if it runs) and calls `then` once stopped.
  void StopThen(std::function<void()> then);

  // What holds the pod's namespaces once started: hull's pause process, or
  // the backend's own sandbox process (runsc). Chosen once, at CreateSandbox
  // (sandbox_service.cc); the service never asks which.
  class SandboxProcess;
  class PauseSandbox;
  class BackendSandbox;

  ShimContext& ctx_;
  Pod& pod_;
  ResolveConfig resolve_;
  std::unique_ptr<PauseRunner> pause_;
  std::unique_ptr<SandboxProcess> process_;  // from CreateSandbox on
  ServerLifetime& lifetime_;

  SandboxState state_ = SandboxState::kNone;
  bool creating_ = false;
  bool starting_ = false;  // the backend's StartSandbox runs
  std::string id_;
  std::string bundle_;
  std::optional<oci::Spec> spec_;
  Backend* backend_ = nullptr;  // the pod's
  pid_t pid_ = 0;
  bool kill_sent_ = false;  // StopThen signalled the pause process
  uint32_t exit_status_ = 0;
  google::protobuf::Timestamp created_at_;
  google::protobuf::Timestamp exited_at_;
  // Called when the sandbox reaches kStopped (WaitSandbox, StopSandbox).
  std::vector<std::function<void()>> on_stopped_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
