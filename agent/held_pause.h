// HeldPauseBackend: the pod's pause container started by the agent itself,
// without crun (docs/vm.md, "The pause container"). Under TCG every new
// process pays the dynamic loader and the translation of its code, and
// crun's create and start of the pause container took 1.1-1.5 s of a
// template clone's 1.7 s to ready (docs/benchmarks.md). The pause container
// only holds the pod's namespaces for the other containers to join, so the
// agent clones it: new IPC, UTS and (shareProcessNamespace) PID namespaces
// as its spec asks, the spec's hostname and namespaced sysctls set in them,
// its oom_score_adj, its stdio, chroot into its root filesystem, its
// capability bounding set, user and groups, NoNewPrivs as asked, and exec
// of its process (the pause image's /pause), in its own guest cgroup
// (GuestCgroupPath). crun's mount namespace, masked paths and seccomp
// filter are not applied: the pause makes no system call but pause(2), and
// no other container joins its mount namespace.
//
// Every call for another container goes to `inner` (crun), and so does a
// pause spec this cannot give exactly (a terminal, a user or time
// namespace, a namespace joined by path, a sysctl outside the IPC and UTS
// namespaces, ambient or unknown capabilities, a command that is not an
// absolute path, a checkpoint).
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/status.h"
#include "oci/spec.h"
#include "runtime/backend.h"

namespace hull::agent {

// What the pause's child does, worked out from its spec before the clone.
// nullopt (and `why`) when the spec asks for something it cannot give.
struct PausePlan {
  int clone_flags = 0;
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> sysctls;  // /proc/sys path, value
  std::optional<int> oom_score_adj;
  std::string root;  // absolute
  std::string cwd = "/";
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // process.capabilities.bounding (bit n: capability n): what is left of
  // the bounding set, and so what a root pause has after its exec, as with
  // runc and crun.
  uint64_t bounding = 0;
  bool no_new_privs = false;
  std::vector<std::string> argv;  // argv[0] absolute
  std::vector<std::string> env;
};
std::optional<PausePlan> PlanPause(const oci::Spec& spec, std::string* why);

class HeldPauseBackend final : public runtime::Backend {
 public:
  // `cgroup_root`: the guest's cgroup2 mount, below which the pause gets
  // GuestCgroupPath(id); empty: no cgroup of its own (tests).
  HeldPauseBackend(EventLoop& loop, Reaper& reaper, std::unique_ptr<runtime::Backend> inner,
                   std::string cgroup_root, std::function<void(const std::string&)> log = {});
  ~HeldPauseBackend() override;

  void PrepareSandbox(const runtime::SandboxRequest& req, runtime::Done done) override;
  void TeardownSandbox(runtime::Done done) override;
  bool RunsSandboxProcess() const override;
  void StartSandbox(std::function<void(int exit_status)> on_exit,
                    std::function<void(Result<pid_t>)> done) override;
  void StopSandbox(runtime::Done done) override;
  void Release(const std::string& id) override;
  void Create(const runtime::CreateRequest& req, runtime::Done done) override;
  void Start(const std::string& id, runtime::Done done) override;
  void Exec(const runtime::ExecRequest& req, runtime::Done done) override;
  void Kill(const std::string& id, int signal, bool all, runtime::Done done) override;
  void Delete(const std::string& id, bool force, runtime::Done done) override;
  void Pause(const std::string& id, runtime::Done done) override;
  void Resume(const std::string& id, runtime::Done done) override;
  void Update(const std::string& id, const std::string& resources_json,
              runtime::Done done) override;
  void Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) override;
  void Checkpoint(const runtime::CheckpointRequest& req, runtime::Done done) override;
  void Stats(const std::string& id, pid_t init_pid,
             std::function<void(Result<google::protobuf::Any>)> done) override;
  Result<EventHandle> WatchOom(const std::string& id, pid_t init_pid,
                               std::function<void()> on_oom) override;
  Result<uint64_t> OomKillCount(const std::string& id) override;
  void WatchInitExit(const std::string& id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) override;
  void SignalExec(const std::string& id, const std::string& exec_id, pid_t pid, int signal,
                  runtime::Done done) override;
  void ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t width,
                      uint32_t height) override;
  std::string name() const override;

 private:
  struct Held {
    std::string id;
    pid_t pid = 0;
    std::string cgroup;  // its directory; empty: none
    std::optional<int> exit_status;
    std::function<void(int)> on_exit;
    std::function<Result<uint64_t>()> oom_counter;
    std::vector<runtime::Done> deleted;  // Delete calls waiting for its exit
  };
  bool IsHeld(const std::string& id) const { return held_ && held_->id == id; }
  Result<pid_t> ClonePause(const PausePlan& plan, const runtime::ProcessStdio& stdio);
  Status PlaceInCgroup(const std::string& id, pid_t pid, std::string* dir);
  void OnExit(pid_t pid, int exit_status);
  void RemoveCgroup(const Held& held);
  // SIGKILLs a running pause; its cgroup is removed when its exit is reaped.
  void KillAndRemoveCgroupAtExit(const Held& held);
  void Post(runtime::Done done, Status status);

  EventLoop& loop_;
  Reaper& reaper_;
  std::unique_ptr<runtime::Backend> inner_;
  std::string cgroup_root_;
  std::function<void(const std::string&)> log_;
  std::optional<Held> held_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::agent
