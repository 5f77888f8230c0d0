// OciCliBackend: the Backend for OCI runtime CLIs (runc, crun, runsc). Each call runs
// the runtime as a child process (Command) on the shim's loop; its exit and
// output come back as loop events and become the call's Status, carrying the
// runtime's own error message. The backend owns the runtime processes in
// flight: dropping it kills them, and their `done` is never called.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/command.h"
#include "shim/backend/backend.h"
#include "shim/backend/oci_cli/argv.h"
#include "shim/backend/oci_cli/runtime_error.h"

namespace hull::shim::oci_cli {

class OciCliBackend final : public Backend {
 public:
  OciCliBackend(EventLoop& loop, Reaper& reaper, ArgvBuilder argv);
  ~OciCliBackend() override;

  // With a checkpoint, Create only records the request (duplicating its stdio
  // descriptors, so the caller may close them) and Start restores from it; the
  // init's pid is in the pid file after Start.
  void Create(const CreateRequest& req, Done done) override;
  void Start(const std::string& id, Done done) override;
  void Exec(const ExecRequest& req, Done done) override;
  // NotFound "process already finished" when the init has exited. SIGKILL
  // to `all` answers once the runtime lists no process left in the
  // container (`ps`, polled for at most kKillAllWait): a signal sent is not
  // a process gone, and callers report the container empty after it.
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
  std::string name() const override { return std::string(argv_.flavour().name); }

 private:
  // The container's cgroup OOM-kill counter, found by WatchOom.
  std::function<Result<uint64_t>()> oom_counter_;

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
  void Run(Call call, CallDone done);
  void OnExit(uint64_t key, const Call& call, const LogCursor& log, const CallDone& done,
              CommandResult r);
  Status Failure(const Call& call, const std::string& log_tail, const CommandResult& r) const;
  // Posts `done(status)` to a later loop turn (calls never finish inline).
  void PostDone(Done done, Status status);
  Result<int> DevNull();

  // What Create leaves for Start: the request with copies of its stdio
  // descriptors, for a restore (Create had a checkpoint) or for a runtime
  // that attaches stdio at `start` (runsc's containers that join a sandbox).
  struct PendingStart;
  Result<std::shared_ptr<PendingStart>> Hold(const CreateRequest& req);
  void Restore(std::shared_ptr<PendingStart> pending, Done done);
  // runsc: deletes the containers that joined sandbox `id`, then `id`.
  void DeleteSandboxLast(const std::string& id, bool force, Done done);
  void DeleteEach(std::vector<std::string> ids, Done done);
  void RunWait(const std::string& id, std::function<void(int)> on_exit);
  void EventsStats(const std::string& id, std::function<void(Result<google::protobuf::Any>)> done);

  static constexpr std::chrono::milliseconds kKillAllWait{2000};
  static constexpr std::chrono::milliseconds kKillAllPoll{10};
  void WaitUntilEmpty(const std::string& id, EventLoop::Clock::time_point deadline, Done done);

  enum class CheckpointStep { kProbeRuntime, kCheckCriu, kDump };
  void CheckpointFrom(CheckpointStep step, CheckpointRequest req, Done done);

  EventLoop& loop_;
  Reaper& reaper_;
  ArgvBuilder argv_;
  UniqueFd dev_null_;  // stdio of container processes given no descriptor
  uint64_t next_call_ = 0;
  std::map<uint64_t, std::unique_ptr<Command>> calls_;
  std::map<uint64_t, EventHandle> kill_waits_;  // WaitUntilEmpty's timers
  std::map<std::string, std::shared_ptr<PendingStart>> pending_starts_;
  std::optional<Status> can_checkpoint_;
  // runsc: containers that joined a sandbox, and their exit watchers that
  // wait for Start (`runsc wait` of an unstarted container fails).
  std::set<std::string> joined_;
  std::set<std::string> started_;
  std::map<std::string, std::function<void(int)>>
      waits_after_start_;  // result of the runtime probe
};

}  // namespace hull::shim::oci_cli
