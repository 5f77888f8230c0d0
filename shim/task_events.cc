#include "shim/task_events.h"

#include "containerd/events/task.pb.h"

namespace hull::shim {
namespace ev = containerd::events;

void TaskEvents::Create(const containerd::task::v2::CreateTaskRequest& request, pid_t pid) {
  ev::TaskCreate event;
  event.set_container_id(request.id());
  event.set_bundle(request.bundle());
  *event.mutable_rootfs() = request.rootfs();
  event.mutable_io()->set_stdin(request.stdin());
  event.mutable_io()->set_stdout(request.stdout());
  event.mutable_io()->set_stderr(request.stderr());
  event.mutable_io()->set_terminal(request.terminal());
  event.set_checkpoint(request.checkpoint());
  event.set_pid(static_cast<uint32_t>(pid));
  publisher_.Publish("/tasks/create", "containerd.events.TaskCreate", event);
}

void TaskEvents::Start(const std::string& container_id, pid_t pid) {
  ev::TaskStart event;
  event.set_container_id(container_id);
  event.set_pid(static_cast<uint32_t>(pid));
  publisher_.Publish("/tasks/start", "containerd.events.TaskStart", event);
}

void TaskEvents::ExecAdded(const std::string& container_id, const std::string& exec_id) {
  ev::TaskExecAdded event;
  event.set_container_id(container_id);
  event.set_exec_id(exec_id);
  publisher_.Publish("/tasks/exec-added", "containerd.events.TaskExecAdded", event);
}

void TaskEvents::ExecStarted(const std::string& container_id, const std::string& exec_id,
                             pid_t pid) {
  ev::TaskExecStarted event;
  event.set_container_id(container_id);
  event.set_exec_id(exec_id);
  event.set_pid(static_cast<uint32_t>(pid));
  publisher_.Publish("/tasks/exec-started", "containerd.events.TaskExecStarted", event);
}

void TaskEvents::Exit(const Process& process) {
  ev::TaskExit event;
  event.set_container_id(process.container_id());
  event.set_id(process.event_id());
  event.set_pid(static_cast<uint32_t>(process.pid()));
  event.set_exit_status(process.exit_status());
  *event.mutable_exited_at() = process.exited_at();
  publisher_.Publish("/tasks/exit", "containerd.events.TaskExit", event);
}

void TaskEvents::Oom(const std::string& container_id) {
  ev::TaskOOM event;
  event.set_container_id(container_id);
  publisher_.Publish("/tasks/oom", "containerd.events.TaskOOM", event);
}

void TaskEvents::Paused(const std::string& container_id) {
  ev::TaskPaused event;
  event.set_container_id(container_id);
  publisher_.Publish("/tasks/paused", "containerd.events.TaskPaused", event);
}

void TaskEvents::Resumed(const std::string& container_id) {
  ev::TaskResumed event;
  event.set_container_id(container_id);
  publisher_.Publish("/tasks/resumed", "containerd.events.TaskResumed", event);
}

void TaskEvents::Delete(const Process& init) {
  ev::TaskDelete event;
  event.set_container_id(init.container_id());
  event.set_pid(static_cast<uint32_t>(init.pid()));
  event.set_exit_status(init.exit_status());
  *event.mutable_exited_at() = init.exited_at();
  publisher_.Publish("/tasks/delete", "containerd.events.TaskDelete", event);
}

}  // namespace hull::shim
