// Container: one container served by this shim: its backend, its init and
// exec processes, its rootfs, and the rules that order its events (exit after
// start; the init's exit after every exec's). Owned by the TaskService, which
// routes calls to it. Every operation answers through a callback on the loop.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "containerd/task/v2/shim.pb.h"
#include "oci/sizing.h"
#include "oci/spec.h"
#include "shim/backend/backend.h"
#include "shim/config/config.h"
#include "shim/context.h"
#include "shim/process.h"

namespace hull::shim {

class Container {
 public:
  template <typename T>
  using Reply = std::function<void(Result<T>)>;
  using Done = std::function<void(Status)>;

  Container(ShimContext& ctx, std::string id, std::string bundle, ShimConfig options);
  ~Container();

  // Mounts the rootfs, sets up the init's stdio and runs the backend's
  // create; answers the init's pid. On failure nothing is left: no mount,
  // fd, socket or process, and the owner drops the container.
  void Create(const containerd::task::v2::CreateTaskRequest& request, Reply<pid_t> done);

  const std::string& id() const { return id_; }
  const std::string& bundle() const { return bundle_; }
  pid_t init_pid() const { return init_->pid(); }
  bool init_exited() const { return init_->exited(); }

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

  // Set by Delete of the init: the TaskService drops the container.
  bool deleted() const { return deleted_; }

 private:
  void OnCreated(Status status, Reply<pid_t> done);
  // For a pause container whose `start` did not prepare the pod cgroup (it
  // joined a live server): prepares it now and moves this server into its
  // leaf (docs/sizing.md). For the pod's other containers: the record, for
  // `delete`, when hull created the pod cgroup.
  Status JoinPodCgroup(const oci::Spec& spec, const std::optional<oci::PodSize>& size);
  void FailCreate(Status status, Reply<pid_t> done);
  // A failed start of the init: the runtime's container is ended (force
  // delete) and the init reported stopped, so that containerd can delete the
  // task (it refuses a created task that has a pid).
  void FailStart(Status status, Reply<pid_t> done);
  // Ends a created init through the runtime's force delete and, unless its
  // exit is known already, records and publishes it as killed (137); then
  // `then` with the delete's status.
  void EndCreatedInit(Done then);
  void StartExec(Process* process, Reply<pid_t> done);
  void WatchExit(Process* process);
  // Publishes /tasks/oom for every OOM kill in the container's cgroup.
  void WatchOom();
  void PublishNewOomKills(bool notified);
  void OnExit(Process* process, int wait_status);
  void PublishExit(Process* process);
  void MaybePublishInitExit();
  // The init of a container without its own pid namespace has exited:
  // SIGKILL to every process left (runtime `kill --all`), then the held
  // init exit is published.
  void KillRestOfContainer();
  void DeleteInit(Reply<containerd::task::v2::DeleteResponse> done);
  Result<pid_t> ReadPidFile(const std::string& path) const;
  std::string ExecPath(const std::string& exec_id, std::string_view suffix) const;
  Status Unmount();

  ShimContext& ctx_;
  std::string id_;
  std::string bundle_;
  ShimConfig options_;
  bool rootfs_mounted_ = false;
  bool shares_pid_namespace_ = false;  // no pid namespace of its own
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Process> init_;
  std::map<std::string, std::unique_ptr<Process>> execs_;
  EventHandle oom_watch_;
  uint64_t oom_kills_published_ = 0;
  // The init exited; its exit waits for running execs and for
  // KillRestOfContainer.
  std::optional<int> init_exit_pending_;
  bool kill_rest_in_flight_ = false;
  bool deleted_ = false;
  // Guards callbacks that may outlive the container (backend calls).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
