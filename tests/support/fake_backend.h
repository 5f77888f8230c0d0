// FakeBackend: the one Backend of the unit tests (shim core, Sandbox API,
// agent), in tests/support/. It records every call
// and answers each one when the test says so: a method the test holds keeps
// its calls pending until Complete(); every other call succeeds on a later
// loop turn. Create writes the init's pid (chosen by the test) to the pid
// file; Exec forks a real child of the test process (so the shim's reaper
// sees its exit) that exits when the test says, and writes its pid. The
// init's exit is fired by the test (WatchInitExit only records the
// callback), as are OOM notifications. Destroying the fake answers its
// pending calls NotFound, as the Backend contract says. With `runs_sandbox`
// the pod's sandbox is a process of the backend's own (as runsc's):
// StartSandbox answers pid 777 and StopSandbox ends it with status 137.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/unique_fd.h"
#include "shim/backend/make_backend.h"

namespace hull::shim::testing {

// One call the fake received, with its arguments.
struct FakeCall {
  std::string method;                     // "Create", "Start", "Kill", ... as in Backend
  std::string id;                         // container id (the sandbox id for PrepareSandbox)
  std::string exec_id;                    // WatchExecExit, SignalExec, ResizeTerminal
  int signal = 0;                         // Kill
  bool all = false;                       // Kill
  bool force = false;                     // Delete
  std::string resources_json;             // Update
  std::optional<SandboxRequest> sandbox;  // PrepareSandbox
  std::optional<CreateRequest> create;    // Create
  std::optional<ExecRequest> exec;        // Exec
};

class FakeBackend final : public Backend {
 public:
  FakeBackend(EventLoop& loop, Reaper& reaper, RuntimeOptions options);
  // Answers every pending call NotFound "container deleted" and ends the
  // exec children still running.
  ~FakeBackend() override;

  // ---- what the test controls ----
  // Calls of `method` stay pending until Complete().
  void Hold(const std::string& method) { held_.insert(method); }
  // Completes the oldest pending call of `method` with `status` (Ps answers
  // pids(), Stats an empty Any). False when none is pending.
  bool Complete(const std::string& method, Status status = Status::Ok());
  size_t pending(const std::string& method) const;

  // The pid Create writes for container `id` (default: a made-up pid; the
  // init's exit comes from FireInitExit, never from the reaper).
  void SetInitPid(const std::string& id, pid_t pid) { init_pids_[id] = pid; }
  // Simulates the exit of container `id`'s init; false if nobody watches.
  bool FireInitExit(const std::string& id, int exit_status);
  // The exec child of `exec_id` (forked at the Exec call): its pid, and
  // making it exit with `code`.
  pid_t ExecPid(const std::string& exec_id) const;
  void ExitExec(const std::string& exec_id, int code);
  // OOM: the count OomKillCount answers (Unimplemented until set), and a
  // notification to the watcher.
  void SetOomKills(const std::string& id, uint64_t count) { oom_kills_[id] = count; }
  void FireOom(const std::string& id);
  void set_pids(std::vector<pid_t> pids) { pids_ = std::move(pids); }

  const std::vector<FakeCall>& calls() const { return calls_; }
  // The last PrepareSandbox's request (the test asserts there was one).
  const SandboxRequest& last_sandbox() const;
  bool runs_sandbox = false;
  // How many calls of `method` were made.
  size_t count(const std::string& method) const;
  // The calls of `method`, oldest first.
  std::vector<FakeCall> calls_of(const std::string& method) const;
  const RuntimeOptions& options() const { return options_; }

  // ---- Backend ----
  void PrepareSandbox(const SandboxRequest& req, Done done) override;
  void TeardownSandbox(Done done) override;
  bool RunsSandboxProcess() const override { return runs_sandbox; }
  void StartSandbox(std::function<void(int exit_status)> on_exit,
                    std::function<void(Result<pid_t>)> done) override;
  void StopSandbox(Done done) override;
  void Release(const std::string& id) override;
  void Create(const CreateRequest& req, Done done) override;
  void Start(const std::string& id, Done done) override;
  void Exec(const ExecRequest& req, Done done) override;
  void Kill(const std::string& id, int signal, bool all, Done done) override;
  void Delete(const std::string& id, bool force, Done done) override;
  void Pause(const std::string& id, Done done) override;
  void Resume(const std::string& id, Done done) override;
  void Update(const std::string& id, const std::string& resources_json, Done done) override;
  void Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) override;
  void Checkpoint(const CheckpointRequest& req, Done done) override;
  void Stats(const std::string& id, pid_t init_pid,
             std::function<void(Result<google::protobuf::Any>)> done) override;
  Result<EventHandle> WatchOom(const std::string& id, pid_t init_pid,
                               std::function<void()> on_oom) override;
  Result<uint64_t> OomKillCount(const std::string& id) override;
  void WatchInitExit(const std::string& id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  // Execs are real children here: the reaper reports them, kill(2) signals.
  void WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) override;
  void SignalExec(const std::string& id, const std::string& exec_id, pid_t pid, int signal,
                  Done done) override;
  void ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t width,
                      uint32_t height) override;
  std::string name() const override { return "fake"; }

 private:
  struct Pending {
    std::string method;
    // Runs the call's side effects for `status` and answers it.
    std::function<void(Status)> answer;
  };
  struct ExecChild {
    pid_t pid = 0;
    UniqueFd control;  // write end: one byte is the exit code
  };
  // Records `call`, then holds `answer` or posts it with OK.
  void Take(FakeCall call, std::function<void(Status)> answer);

  EventLoop& loop_;
  Reaper& reaper_;
  RuntimeOptions options_;
  std::set<std::string> held_;
  std::vector<FakeCall> calls_;
  std::deque<Pending> pending_;
  std::map<std::string, pid_t> init_pids_;
  std::map<std::string, std::function<void(int)>> init_watchers_;
  std::map<std::string, ExecChild> exec_children_;
  std::map<std::string, uint64_t> oom_kills_;
  std::map<std::string, std::function<void()>> oom_watchers_;
  std::vector<pid_t> pids_;
  std::function<void(int)> sandbox_exit_;  // StartSandbox's, until StopSandbox
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// A BackendFactory that makes FakeBackends and remembers the last one made.
struct FakeBackendFactory {
  EventLoop* loop = nullptr;
  Reaper* reaper = nullptr;
  int made = 0;
  FakeBackend* last = nullptr;  // owned by the Pod
  // Runs on each backend made, before the Pod uses it (the first container's
  // Create makes it: Hold or SetInitPid for that Create go here).
  std::function<void(FakeBackend&)> configure;

  BackendFactory Make() {
    return [this](const RuntimeOptions& options) -> Result<std::unique_ptr<Backend>> {
      auto backend = std::make_unique<FakeBackend>(*loop, *reaper, options);
      ++made;
      last = backend.get();
      if (configure) configure(*backend);
      return std::unique_ptr<Backend>(std::move(backend));
    };
  }
};

}  // namespace hull::shim::testing
