// Backend: what runs the containers of one pod. One small interface, chosen
// once per pod by the shim (shim/backend/make_backend.h, from its config) and
// made by a factory the shim core receives (tests pass a fake), and used as
// well by hull-agent in a VM's guest: the OCI CLI runtimes (runc, crun,
// runsc; runtime/oci_cli/) and the shim's vm backend. A backend serves every
// container of its pod: the pod-level calls (PrepareSandbox, TeardownSandbox)
// frame the container and process calls. Nothing outside the backends asks
// which backend it is talking to. No runtime or VM options here: each
// backend's constructor takes its own.
// Every call is asynchronous on the shim's event loop: it returns at once and
// calls `done` exactly once, later, on the loop -- also when the backend is
// destroyed first: a call still running then is answered NotFound
// "container deleted", from the destructor itself. Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "base/status.h"
#include "oci/sizing.h"
#include "oci/spec.h"

namespace google::protobuf {
class Any;
}

namespace hull::runtime {

// What the container process gets as stdio. Descriptors are borrowed: the
// caller keeps them open until `done` of the call that uses them.
struct ProcessStdio {
  int stdin_fd = -1;  // -1: /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::string console_socket;  // set for terminal processes instead of fds
};

// The pod as the backend sees it when the pod is prepared: for the vm
// backend, what the VM is booted with. Everything a backend needs of the pod
// is here, so no backend reads a bundle or works out a cgroup of its own.
struct SandboxRequest {
  std::string id;      // the pod (the pause container's id, or the sandbox id)
  std::string bundle;  // the pause container's (or sandbox's) bundle
  std::optional<oci::PodSize> size;
  // The pod's spec: the pause container's config.json (or the first
  // container's, for a pod of one), or the one the Sandbox API built
  // (oci::BuildPauseSpec). Hostname, network namespace, sysctls, annotations.
  oci::Spec spec;
  // The pod cgroup (docs/sizing.md) that the spec's cgroupsPath lies in, as
  // the cgroup path of the spec's kind (absolute for cgroupfs paths); nullopt
  // when the spec names none or it has no parent.
  std::optional<std::string> pod_cgroup;
  // Set by the Sandbox API (containerd 2.x, sandboxer "shim") only: the pod
  // gets no pause container through the Task API, so a backend whose pod
  // runs in a sandbox process of its own (RunsSandboxProcess: runsc's gVisor
  // sandbox) creates it from `spec`; the others ignore it.
  bool create_sandbox_process = false;
};

struct CreateRequest {
  std::string id;
  std::string bundle;  // holds config.json; pid file and runtime log go here
  // The spec says this container joins a pod's sandbox (CRI container type
  // "container"); the core reads the spec once and tells the backend.
  bool joins_sandbox = false;
  std::string pid_file;  // where the runtime writes the init's pid
  ProcessStdio stdio;
  std::string checkpoint;  // non-empty: restore from this image dir at Start
};

struct ExecRequest {
  std::string id;
  std::string exec_id;
  std::string process_json;  // path of the OCI Process JSON file
  std::string pid_file;
  ProcessStdio stdio;
};

struct CheckpointRequest {
  std::string id;
  std::string image_path;
  std::string work_path;
  std::string parent_path;
  bool exit = false;  // leave the container stopped
  bool open_tcp = false;
  bool external_unix_sockets = false;
  bool terminal = false;
  bool file_locks = false;
  std::vector<std::string> empty_namespaces;
  std::string cgroups_mode;
};

using Done = std::function<void(Status)>;

class Backend {
 public:
  virtual ~Backend() = default;

  // The pod, before its first container is created (the vm backend boots
  // its VM here; the OCI CLI runtimes have nothing to do: their sandbox is
  // the pause container), or at CreateSandbox (`req.spec` set; runsc
  // creates the pod's gVisor sandbox from it).
  virtual void PrepareSandbox(const SandboxRequest& req, Done done) = 0;
  // The pod, after its last container is deleted (or at ShutdownSandbox):
  // nothing of the sandbox is left after it.
  virtual void TeardownSandbox(Done done) = 0;

  // ---- the Sandbox API's sandbox process ----
  // True when the pod's sandbox is a process of the backend's own that
  // PrepareSandbox created from SandboxRequest::spec (runsc: the gVisor
  // sandbox, with hull-pause as its PID 1): SandboxService then starts and
  // stops it with the two calls below. False (runc, crun): hull's pause
  // process holds the pod's namespaces and the two calls are never made.
  virtual bool RunsSandboxProcess() const { return false; }
  // Starts the sandbox: `done(pid of the sandbox process)`, and later
  // `on_exit(exit status)` once, when it ends.
  virtual void StartSandbox(std::function<void(int exit_status)> on_exit,
                            std::function<void(Result<pid_t>)> done);
  // Ends the sandbox's processes (SIGKILL); the exit still reaches
  // StartSandbox's `on_exit`. `done` once the signal is sent.
  virtual void StopSandbox(Done done);
  // Forgets what the backend keeps for container `id` (deleted). Calls for it
  // still running are answered as they finish.
  virtual void Release(const std::string& id) = 0;

  // Creates the container (runtime `create`): on success the init's pid is in
  // `pid_file`. A runtime failure carries the runtime's own error message.
  // With `checkpoint` set nothing runs yet (the backend keeps its own copies
  // of the stdio descriptors): Start restores, and the pid file appears then.
  virtual void Create(const CreateRequest& req, Done done) = 0;
  // Starts the init (runtime `start`), or restores it when Create was given a
  // checkpoint.
  virtual void Start(const std::string& id, Done done) = 0;
  // Starts an exec'd process (runtime `exec --detach`); its pid is in pid_file.
  virtual void Exec(const ExecRequest& req, Done done) = 0;
  // Signals the init (or every process when `all`).
  virtual void Kill(const std::string& id, int signal, bool all, Done done) = 0;
  // Removes the container from the runtime; "does not exist" is success.
  virtual void Delete(const std::string& id, bool force, Done done) = 0;
  virtual void Pause(const std::string& id, Done done) = 0;
  virtual void Resume(const std::string& id, Done done) = 0;
  // `resources_json` is OCI LinuxResources JSON.
  virtual void Update(const std::string& id, const std::string& resources_json, Done done) = 0;
  // Pids of every process in the container.
  virtual void Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) = 0;
  // FailedPrecondition, with the reason, where checkpointing cannot work.
  virtual void Checkpoint(const CheckpointRequest& req, Done done) = 0;
  // Container metrics as containerd expects them: an Any of
  // io.containerd.cgroups.v1.Metrics or io.containerd.cgroups.v2.Metrics.
  virtual void Stats(const std::string& id, pid_t init_pid,
                     std::function<void(Result<google::protobuf::Any>)> done) = 0;
  // Calls `on_oom` each time the container's cgroup records an OOM kill, until
  // the returned handle is dropped.
  virtual Result<EventHandle> WatchOom(const std::string& id, pid_t init_pid,
                                       std::function<void()> on_oom) = 0;

  // How many OOM kills the container's cgroup has recorded so far. Read when
  // the init exits, so that TaskOOM is published before TaskExit; works after
  // the init is gone once WatchOom has run. Unimplemented where unknown.
  virtual Result<uint64_t> OomKillCount(const std::string& id) = 0;

  // Calls `on_exit(exit status)` once, when the container's init exits. For
  // runc and crun the pid file names the init itself and the shim reaps it;
  // runsc's names the gVisor sandbox, so runsc asks `runsc wait <id>`; the
  // vm backend's pid is a guest pid, and the agent reports the exit.
  // Dropping the backend drops the watch.
  virtual void WatchInitExit(const std::string& id, pid_t pid,
                             std::function<void(int exit_status)> on_exit) = 0;

  // The same for exec `exec_id` of container `id`, whose pid file said
  // `pid`. The OCI CLI runtimes' execs are the shim's children (the reaper
  // reports them); a vm backend's are guest processes, which the host's
  // reaper must never watch (a guest pid may be a host child's too).
  virtual void WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                             std::function<void(int exit_status)> on_exit) = 0;
  // Drops the exit watch of a process deleted before its exit was reported
  // (`exec_id` empty: the init), and whatever exit was kept for it.
  virtual void ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) = 0;
  // Sends `signal` to exec `exec_id` (pid `pid`, from its pid file). NotFound
  // "process already finished" when it is gone.
  virtual void SignalExec(const std::string& id, const std::string& exec_id, pid_t pid, int signal,
                          Done done) = 0;
  // The terminal of process `exec_id` (empty: the init) was resized to
  // `width` x `height` on the host side. The OCI CLI runtimes' processes use
  // that terminal itself: nothing to do.
  virtual void ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t width,
                              uint32_t height) = 0;

  // Short name for logs ("runc", "crun").
  virtual std::string name() const = 0;
};

}  // namespace hull::runtime
