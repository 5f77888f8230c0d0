// ContainerService: the container calls of hull.agent.v1.Agent (create,
// start, exec, signal, wait, remove, stdio, processes, pause/resume,
// update, stats, OOM events), run with crun inside the guest through hull's
// OCI CLI backend (runtime/oci_cli) and hull's cgroups code, as the shim
// runs runc and crun on a host. The agent is the guest's reaper: each
// container's init and each exec are watched with the Reaper.
//
// Per container the agent keeps a directory of its own (`state_dir`/<id>:
// config.json, the runtime's log, pid files, exec process files, console
// sockets); crun's bundle is that directory, and the container's root
// filesystem stays where the host put it (in the per-pod share). Removing a
// container removes the directory, crun's state and the container's cgroup.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/container_state.h"
#include "agent/guest_stdio.h"
#include "agent/long_poll.h"
#include "base/event_loop.h"
#include "base/reaper.h"
#include "hull/agent/v1/agent.pb.h"
#include "runtime/backend.h"
#include "ttrpc/server.h"

namespace hull::agent {

struct ContainerOptions {
  std::string runtime = "/usr/bin/crun";           // binary: a path, or a name in PATH
  std::string runtime_root = "/run/hull/crun";     // crun --root
  std::string state_dir = "/run/hull/containers";  // one directory per container
  // One line per container event (created, exited, OOM, removed) for the
  // guest's console; optional.
  std::function<void(const std::string&)> log;
  // UpdateContainer's pod_memory_max_bytes (SetPodMemoryMax, guest_init.h);
  // unset: an update that carries one is refused.
  std::function<Status(uint64_t bytes)> set_pod_memory_max;
  // The guest's cgroup2 mount, where the pod's pause container, which the
  // agent runs itself (agent/held_pause.h), gets its cgroup.
  std::string cgroup_root = "/sys/fs/cgroup";
};

class ContainerService {
 public:
  // `backend` runs the containers; null (the agent's case): hull's OCI CLI
  // backend over `options.runtime` (crun). Tests and the fuzzer pass one
  // that runs nothing.
  ContainerService(EventLoop& loop, Reaper& reaper, ContainerOptions options,
                   std::unique_ptr<runtime::Backend> backend = nullptr);
  ~ContainerService();
  ContainerService(const ContainerService&) = delete;
  ContainerService& operator=(const ContainerService&) = delete;

  void Register(ttrpc::Server& server);

  size_t container_count() const { return containers_.size(); }

  // Sets the pod's containers' memory limit (options_.set_pod_memory_max)
  // and remembers it, so a later raise knows what to put back. The one
  // writer of that value: the agent's CreateSandbox calls it too.
  Status SetPodMemoryMax(uint64_t bytes);

 private:
  struct Process {
    std::string exec_id;  // empty: the init
    pid_t pid = 0;        // 0 until the runtime has started it
    std::unique_ptr<GuestStdio> stdio;
    std::optional<int> exit_status;
    int64_t exited_at_unix_nano = 0;
    uint64_t oom_kills = 0;  // the init: the container's OOM kills at its exit
    std::vector<ttrpc::TypedResponder<v1::WaitProcessResponse>> waiters;
  };
  struct Container {
    std::string id;
    uint64_t generation = 0;  // tells a container from a later one of the same id
    std::string dir;
    ContainerState state = ContainerState::kCreating;
    Process init;
    std::map<std::string, std::unique_ptr<Process>> execs;
    EventHandle oom_watch;
    uint64_t oom_reported = 0;  // the cgroup's oom_kill count last reported
  };

  // The container, or NotFound.
  Result<Container*> Find(const std::string& id);
  // The container if it is still the one of `generation` (none once the
  // service is being destroyed).
  Container* Still(const std::string& id, uint64_t generation);
  // The process of `exec_id` ("" the init), or NotFound.
  Result<Process*> FindProcess(Container& c, const std::string& exec_id);

  void Create(const ttrpc::CallContext&, v1::CreateContainerRequest req,
              ttrpc::TypedResponder<v1::CreateContainerResponse> r);
  void Start(v1::StartContainerRequest req, ttrpc::TypedResponder<v1::StartContainerResponse> r);
  void Exec(v1::ExecProcessRequest req, ttrpc::TypedResponder<v1::ExecProcessResponse> r);
  void Signal(v1::SignalProcessRequest req, ttrpc::TypedResponder<v1::SignalProcessResponse> r);
  void Wait(v1::WaitProcessRequest req, ttrpc::TypedResponder<v1::WaitProcessResponse> r);
  void Remove(v1::RemoveContainerRequest req, ttrpc::TypedResponder<v1::RemoveContainerResponse> r);
  void RegisterStdio(ttrpc::Server& server);
  void RegisterControl(ttrpc::Server& server);

  // After the runtime started a process (create or exec): reads its pid,
  // waits for the pty master when it has a terminal, then `done(pid)`.
  void AfterSpawn(const std::string& id, uint64_t generation, const std::string& exec_id,
                  const std::string& pid_file, Status spawned,
                  std::function<void(Result<pid_t>)> done);
  void OnInitExit(const std::string& id, uint64_t generation, int exit_status);
  void OnExecExit(const std::string& id, uint64_t generation, const std::string& exec_id,
                  int wait_status);
  static void SetExited(Process& p, int exit_status);
  static void AnswerWaiters(Process& p);
  // Queues an OOM event if the container's cgroup counted a new OOM kill.
  void CheckOom(Container& c);
  void DeliverOomEvents();
  // Forgets the container: directory, backend entry, parked callers.
  void Forget(const std::string& id);
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  EventLoop& loop_;
  Reaper& reaper_;
  ContainerOptions options_;
  std::unique_ptr<runtime::Backend> backend_;
  uint64_t next_generation_ = 1;
  std::map<std::string, std::unique_ptr<Container>> containers_;
  // The pod's containers' memory limit last set (CreateSandbox's, then
  // CreateContainer's and UpdateContainer's pod_memory_max_bytes); 0: none yet.
  uint64_t pod_memory_max_ = 0;
  // Containers whose OOM counter went up, with the count, for GetOOMEvent.
  std::deque<std::pair<std::string, uint64_t>> oom_events_;
  LongPolls<v1::GetOOMEventResponse> oom_polls_;
  bool destroying_ = false;
};

}  // namespace hull::agent
