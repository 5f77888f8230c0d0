// OciCliBackend: the Backend for OCI runtime CLIs (runc, crun, runsc), one per
// pod. Each call runs the runtime as a child process (Command) on the shim's
// loop; its exit and output come back as loop events and become the call's
// Status, carrying the runtime's own error message. What differs between the
// pod's containers (the runtime log in each bundle, held stdio, runsc's
// joined containers, the OOM counter) is kept per container until Release.
// The backend owns the runtime processes in flight: dropping it kills them
// and answers their `done` with NotFound "container deleted".
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/command.h"
#include "cgroups/cgroups.h"
#include "runtime/backend.h"
#include "runtime/oci_cli/argv.h"
#include "runtime/oci_cli/runtime_error.h"

namespace hull::runtime::oci_cli {

// runsc keeps `<container>_sandbox:<sandbox>.state` and a `.lock` beside it
// under its root, and takes the lock by creating the file. A runsc command
// that lists the sandbox's containers while another deletes one (two
// containers of a pod deleted at once) can create the lock of a container
// whose state is already gone, and nothing removes it again. Once the
// sandbox itself is deleted, every lock of it without its state is such a
// leftover.
void RemoveOrphanRunscLocks(const std::string& root, const std::string& sandbox);

class OciCliBackend final : public Backend {
 public:
  // `argv` carries the pod's runtime config; each container's calls log to
  // its own bundle.
  OciCliBackend(EventLoop& loop, Reaper& reaper, ArgvBuilder argv);
  ~OciCliBackend() override;

  // What the backend writes besides the runtime's own calls. Each is done
  // in this process unless replaced (LocalHostWrites); a confined server,
  // whose bundles and runtime root are read-only to it, replaces them all
  // with its spawner's (shim/mount/spawner_bundle_files.h).
  struct HostWrites {
    // Fits a bundle's config.json to the runtime's runtime-spec version
    // (`runtime_max`; FitBundleSpecVersion).
    std::function<Status(const std::string& config_json, std::string_view runtime_max,
                         std::string_view runtime)>
        fit_spec;
    // Fits a bundle's config.json to a sandbox kernel (runsc;
    // FitBundleToSandboxKernel).
    std::function<Status(const std::string& config_json, bool joins_sandbox)> fit_kernel;
    // Removes the lock files runsc leaves of a deleted sandbox in `root`
    // (RemoveOrphanRunscLocks).
    std::function<void(const std::string& root, const std::string& sandbox)> remove_locks;
    // Removes a file hull keeps in a bundle: an exec's internal pid file.
    std::function<void(const std::string& path)> remove_file;
  };
  static HostWrites LocalHostWrites();
  void set_host_writes(HostWrites writes) { writes_ = std::move(writes); }

  // Nothing to prepare or tear down when the pause container is the sandbox.
  // For the Sandbox API (`req.spec` set) a runtime with a sandbox process
  // (runsc) gets its sandbox container created here, in
  // <bundle>/hull-sandbox, and deleted with everything of it at Teardown
  // (oci_cli_sandbox.cc).
  void PrepareSandbox(const SandboxRequest& req, Done done) override;
  void TeardownSandbox(Done done) override;
  bool RunsSandboxProcess() const override { return argv_.flavour().sandbox_process; }
  void StartSandbox(std::function<void(int)> on_exit,
                    std::function<void(Result<pid_t>)> done) override;
  void StopSandbox(Done done) override;
  void Release(const std::string& id) override;

  // With a checkpoint, Create only records the request (duplicating its stdio
  // descriptors, so the caller may close them) and Start restores from it; the
  // init's pid is in the pid file after Start.
  void Create(const CreateRequest& req, Done done) override;
  void Start(const std::string& id, Done done) override;
  void Exec(const ExecRequest& req, Done done) override;
  // NotFound "process already finished" when the init has exited. SIGKILL
  // to `all` answers once no process is left in the container (its cgroup,
  // else `<runtime> ps`; see WaitUntilEmpty), or after kKillAllWait: a
  // signal sent is not a process gone, and callers report the container
  // empty after it.
  void Kill(const std::string& id, int signal, bool all, Done done) override;
  void Delete(const std::string& id, bool force, Done done) override;
  void Pause(const std::string& id, Done done) override;
  void Resume(const std::string& id, Done done) override;
  void Update(const std::string& id, const std::string& resources_json, Done done) override;
  void Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) override;
  // Checks, in order, that the runtime can checkpoint (`<runtime> checkpoint
  // --help`, remembered) and that criu works (`criu check`), then dumps.
  void Checkpoint(const CheckpointRequest& req, Done done) override;
  void Stats(const std::string& id, pid_t init_pid,
             std::function<void(Result<google::protobuf::Any>)> done) override;
  Result<EventHandle> WatchOom(const std::string& id, pid_t init_pid,
                               std::function<void()> on_oom) override;
  Result<uint64_t> OomKillCount(const std::string& id) override;
  // The reaper reports the init, except for a runsc container that joined
  // a sandbox: `runsc wait <id>`, run once Start has succeeded.
  void WatchInitExit(const std::string& id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  // Execs are the shim's children: the reaper reports them, kill(2) signals.
  void WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) override;
  void SignalExec(const std::string& id, const std::string& exec_id, pid_t pid, int signal,
                  Done done) override;
  void ResizeTerminal(const std::string&, const std::string&, uint32_t, uint32_t) override {}
  std::string name() const override { return std::string(argv_.flavour().name); }

 private:
  struct PendingStart;
  // What the backend keeps for one container, from Create to Release.
  struct Entry {
    explicit Entry(ArgvBuilder a) : argv(std::move(a)) {}
    ArgvBuilder argv;  // logs to the container's bundle
    // The container's cgroup OOM-kill counter, found by WatchOom.
    std::function<Result<uint64_t>()> oom_counter;
    // The container's own cgroup, found from the init's pid when its exit
    // is watched (at Create, or at Start for a restore), while it lives:
    // kill --all watches it empty after the init is gone.
    std::optional<cgroups::Manager> cgroup;
    // What Create leaves for Start (see Hold).
    std::shared_ptr<PendingStart> pending_start;
    // runsc: the container joined a sandbox; its exit comes from `runsc
    // wait`, which must wait for Start (a wait of an unstarted container
    // fails).
    bool joined = false;
    bool started = false;
    // runsc: each running exec's pid in the sandbox, by exec id
    // (Flavour::exec_internal_pid_flag), which its signals go to.
    std::map<std::string, pid_t> exec_internal_pids;
    std::function<void(int)> wait_after_start;
  };
  // The container's argv builder; the pod's for a container never created
  // here (its calls log nowhere).
  const ArgvBuilder& ArgvFor(const std::string& id) const;

  // One runtime invocation.
  struct Call {
    std::string what;  // "create", "kill", ... for messages
    std::string id;    // container id, for messages and "{state}"
    Argv argv;
    // The container's stdio, for calls that start container processes
    // (create, restore, exec): mapped to the runtime's 0/1/2, not captured.
    const ProcessStdio* stdio = nullptr;
    std::string stdin_data;
    bool reads_log = true;  // the call writes the runtime's JSON log
  };
  // `done(status, result)`: status is OK for exit 0, else the runtime's
  // message with its code and "<runtime> <what> <id>: " in front.
  using CallDone = std::function<void(Status, CommandResult)>;
  struct Running {
    std::unique_ptr<Command> command;
    std::string id;
    CallDone done;  // answered by the destructor if the command outlives us
  };
  void Run(Call call, CallDone done);
  void OnExit(uint64_t key, const Call& call, const LogCursor& log, CommandResult r);
  Status Failure(const Call& call, const std::string& log_tail, const CommandResult& r) const;
  // Posts `done(status)` to a later loop turn (calls never finish inline).
  void PostDone(Done done, Status status);
  Result<int> DevNull();

  // What Create leaves for Start: the request with copies of its stdio
  // descriptors, for a restore (Create had a checkpoint) or for a runtime
  // that attaches stdio at `start` (runsc's containers that join a sandbox).
  Result<std::shared_ptr<PendingStart>> Hold(const CreateRequest& req);
  void Restore(std::shared_ptr<PendingStart> pending, Done done);
  // runsc: deletes the containers that joined sandbox `id`, then `id`.
  void DeleteSandboxLast(const std::string& id, bool force, Done done);
  void DeleteEach(std::vector<std::string> ids, Done done);
  void RunWait(const std::string& id, std::function<void(int)> on_exit);
  void EventsStats(const std::string& id, std::function<void(Result<google::protobuf::Any>)> done);

  // After `kill --all` with SIGKILL: answers `done(OK)` once no process is
  // left in container `id`, or after kKillAllWait. Best effort: a wait that
  // cannot be made answers OK (the kill was sent). The cgroup the
  // container's init was found in is watched (cgroups::Manager::
  // WaitEmptyAsync: cgroup.events on v2, cgroup.procs re-read on v1), with
  // no process spawned; `<runtime> ps` is polled, every kKillAllPsPoll, only
  // where there is no such cgroup (runsc, or one never found) or it cannot
  // be read.
  //
  // The deadline: SIGKILL cannot be caught or ignored, so what is left dies
  // as soon as the kernel runs it; it stays only while it cannot run (in
  // uninterruptible sleep on a hung NFS or FUSE mount, or in a frozen v1
  // cgroup). The exit is then published all the same rather than held, and
  // Delete's stdio drain (10 s) deals with what holds the output. 10 s, not
  // less: under load (a TCG guest runs everything ten times slower) dying
  // processes may take seconds to be scheduled, and an exit reported while
  // they live costs that same 10 s drain.
  static constexpr std::chrono::milliseconds kKillAllWait{10000};
  static constexpr std::chrono::milliseconds kKillAllPsPoll{50};
  void WaitUntilEmpty(const std::string& id, Done done);
  void PollUntilEmpty(const std::string& id, EventLoop::Clock::time_point deadline, Done done);
  struct KillWait {
    EventHandle timer;           // the next `ps`
    cgroups::AsyncOp cgroup_op;  // or the cgroup's wait
    Done done;
  };
  // Create in steps: learn the newest spec version the runtime takes (once
  // per backend, for a flavour with spec_version_max), fit the bundle's
  // config.json to it (spec_version.h), then run `create`.
  enum class CreateStep { kProbeSpecVersion, kFitSpec, kRuntimeCreate };
  void CreateFrom(CreateStep step, std::shared_ptr<PendingStart> held, Done done);
  void RuntimeCreate(const CreateRequest& req, Done done);

  enum class CheckpointStep { kProbeRuntime, kCheckCriu, kDump };
  void CheckpointFrom(CheckpointStep step, CheckpointRequest req, Done done);

  // The Sandbox API's sandbox container (runsc), from PrepareSandbox to
  // TeardownSandbox: its id (the sandbox id) and its bundle directory.
  struct SandboxContainer {
    std::string id;
    std::string dir;
  };
  std::optional<SandboxContainer> sandbox_;
  // From the destructor: the server ends with the pod's sandbox still there
  // (SIGTERM before ShutdownSandbox). Blocks, with the loop no longer
  // running: `delete --force` of its containers and of it, and its bundle.
  void DestroySandboxNow();

  EventLoop& loop_;
  Reaper& reaper_;
  ArgvBuilder argv_;   // the pod's: no runtime log of its own
  UniqueFd dev_null_;  // stdio of container processes given no descriptor
  uint64_t next_call_ = 0;
  std::map<uint64_t, Running> calls_;
  std::map<uint64_t, KillWait> kill_waits_;  // WaitUntilEmpty's waits
  std::map<std::string, Entry> containers_;
  // Expires with the backend: reaper callbacks that outlive it check it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::optional<Status> can_checkpoint_;  // result of the runtime probe
  // The newest runtime-spec version the runtime takes, once probed; ""
  // when the runtime could not say (the spec then goes as it is).
  std::optional<std::string> spec_version_max_;
  HostWrites writes_ = LocalHostWrites();
  bool destroying_ = false;
};

}  // namespace hull::runtime::oci_cli
