// TaskEvents: every task event hull publishes, built in one place from the
// container's and process's state and queued on the EventPublisher (topics
// and type names as containerd expects them). Cheap; one per Container.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <string>

#include "containerd/task/v2/shim.pb.h"
#include "shim/process.h"
#include "shim/publisher.h"

namespace hull::shim {

class TaskEvents {
 public:
  explicit TaskEvents(EventPublisher& publisher) : publisher_(publisher) {}

  // /tasks/create, with the request's rootfs, stdio and checkpoint.
  void Create(const containerd::task::v2::CreateTaskRequest& request, pid_t pid);
  void Start(const std::string& container_id, pid_t pid);
  void ExecAdded(const std::string& container_id, const std::string& exec_id);
  void ExecStarted(const std::string& container_id, const std::string& exec_id, pid_t pid);
  // /tasks/exit for `process`, from its recorded exit.
  void Exit(const Process& process);
  void Oom(const std::string& container_id);
  void Paused(const std::string& container_id);
  void Resumed(const std::string& container_id);
  // /tasks/delete for the container, from its init's exit.
  void Delete(const Process& init);

 private:
  EventPublisher& publisher_;
};

}  // namespace hull::shim
