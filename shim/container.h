// Container: one container of the pod this shim serves: its init and exec
// processes, its rootfs, and the calls containerd makes on them. Owned by its
// Pod, made once the Pod has admitted it (Pod::Admit), with the pod's
// backend, and with no reference back to the Pod; the TaskService routes
// calls to it. The backend runs it; the
// ExitTracker orders its exits; TaskEvents builds its events. Multi-step
// calls (Create, the start of an exec, the delete of the init) are step
// objects in container_steps.cc. Every operation answers through a callback
// on the loop -- also when the container is deleted meanwhile: a runtime
// call that outlives it is answered NotFound "container deleted".
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "containerd/task/v2/shim.pb.h"
#include "oci/spec.h"
#include "shim/backend/make_backend.h"
#include "shim/config/config.h"
#include "shim/context.h"
#include "shim/exit_tracker.h"
#include "shim/process.h"
#include "shim/task_events.h"

namespace hull::shim {

// What a container's spec says about how it lives in its pod, read once at
// Create (ContainerTraits::Of).
struct ContainerTraits {
  // CRI container type "container": it joins the pod's sandbox.
  bool joins_sandbox = false;
  // No pid namespace of its own (shared with the host or the pod): its
  // processes do not die with its init.
  bool shares_pid_namespace = true;
  static ContainerTraits Of(const oci::Spec& spec);
};

class Container {
 public:
  template <typename T>
  using Reply = std::function<void(Result<T>)>;
  using Done = std::function<void(Status)>;

  // `init_stdio`: what CreateTaskRequest names for the init's stdio;
  // `backend`: the pod's, which outlives the container.
  Container(ShimContext& ctx, std::string id, std::string bundle, StdioConfig init_stdio,
            ShimConfig options, Backend& backend, ContainerTraits traits);
  ~Container();

  // Mounts the rootfs, sets up the init's stdio and runs the backend's
  // create; answers the init's pid. On failure nothing is left: no mount,
  // fd, socket or process, and the owner drops the container.
  void Create(const containerd::task::v2::CreateTaskRequest& request, Reply<pid_t> done);

  const std::string& id() const { return id_; }
  const std::string& bundle() const { return bundle_; }
  pid_t init_pid() const { return init_->pid(); }

  // Looks a process up: the init for an empty exec id. NotFound otherwise.
  Result<Process*> Find(const std::string& exec_id) const;

  void Start(const std::string& exec_id, Reply<pid_t> done);
  Status AddExec(const containerd::task::v2::ExecProcessRequest& request);
  void Kill(const std::string& exec_id, uint32_t signal, bool all, Done done);
  void Delete(const std::string& exec_id, Reply<containerd::task::v2::DeleteResponse> done);
  Result<containerd::task::v2::StateResponse> State(const std::string& exec_id) const;
  void Wait(const std::string& exec_id,
            ttrpc::TypedResponder<containerd::task::v2::WaitResponse> responder);
  void Pause(Done done);
  void Resume(Done done);
  void Update(const std::string& resources_json, Done done);
  void Pids(Reply<containerd::task::v2::PidsResponse> done);
  void Stats(Reply<google::protobuf::Any> done);
  void Checkpoint(const CheckpointRequest& request, Done done);
  Status CloseIO(const std::string& exec_id, bool stdin);
  Status ResizePty(const std::string& exec_id, uint32_t width, uint32_t height);

  // Set by Delete of the init: the Pod drops the container.
  bool deleted() const { return deleted_; }

 private:
  class CreateSteps;
  class ExecStartSteps;
  class DeleteInitSteps;

  // A token the callbacks of backend calls hold: expired once the container
  // is gone.
  std::weak_ptr<bool> Alive() const { return alive_; }

  // The steps of an exec's start (ExecStartSteps).
  void StartExec(Process* process, Reply<pid_t> done);
  // The init's runtime start, then its start event (and an exit reaped
  // meanwhile, after it).
  void StartInit(Reply<pid_t> done);
  // A failed start of the init: the runtime's container is ended (force
  // delete) and the init reported stopped, so that containerd can delete the
  // task (it refuses a created task that has a pid).
  void FailStart(Status status, Reply<pid_t> done);
  // Kill of the init: a created init that the runtime cannot signal (runsc)
  // is ended instead; a stopped one is signalled only with `all`, where
  // processes may be left (no pid namespace of its own).
  void KillInit(uint32_t signal, bool all, Done done);
  // Ends a created, never-started init (the runtime's force delete) and
  // reports it killed (137).
  void EndCreatedInit(Done done);
  void DeleteExec(const std::string& exec_id, Reply<containerd::task::v2::DeleteResponse> done);
  // Watches for the exit of a process whose pid is known.
  void WatchExit(Process* process);
  // Publishes /tasks/oom for every OOM kill in the container's cgroup (the
  // ExitTracker orders it).
  void WatchOom();
  // The ExitTracker's hooks.
  void PublishExit(Process* process);
  void EndTheRest(std::function<void()> then);
  Result<pid_t> ReadPidFile(const std::string& path) const;
  std::string ExecPath(const std::string& exec_id, std::string_view suffix) const;
  StdioContext StdioFor() const;
  Status Unmount();

  ShimContext& ctx_;
  std::string id_;
  std::string bundle_;
  ShimConfig options_;
  TaskEvents events_;
  Backend* backend_;  // the pod's
  ContainerTraits traits_;
  bool rootfs_mounted_ = false;
  std::unique_ptr<Process> init_;
  std::map<std::string, std::unique_ptr<Process>> execs_;
  ExitTracker exits_;
  EventHandle oom_watch_;  // WatchOom; the ExitTracker orders what it notices
  bool deleted_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
