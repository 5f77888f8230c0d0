// TaskService: containerd's Task API (served as containerd.task.v2.Task and
// containerd.task.v3.Task, same messages) for every container of this
// shim's pod. It only routes: it finds the container a call names in the Pod
// and hands the call to it; the pod, its containers and their processes keep
// their own state. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "google/protobuf/empty.pb.h"
#include "shim/container.h"
#include "shim/context.h"
#include "shim/pod/pod.h"
#include "shim/server_lifetime.h"
#include "ttrpc/server.h"

namespace hull::shim {

class TaskService {
 public:
  // Turns CreateTaskRequest.options (may be empty) into the container's
  // options, given its bundle. A seam: the server passes hull's config loader.
  using ResolveOptions = std::function<Result<ShimConfig>(const google::protobuf::Any& options,
                                                          const std::string& bundle)>;

  // Shutdown calls and deletes are reported to `lifetime`, which decides
  // when the server ends.
  TaskService(ShimContext& ctx, Pod& pod, ResolveOptions resolve, ServerLifetime& lifetime);
  ~TaskService();

  void RegisterWith(ttrpc::Server& server);

 private:
  template <typename Req, typename Resp>
  void Handle(ttrpc::Server& server, const char* method,
              void (TaskService::*handler)(const Req&, ttrpc::TypedResponder<Resp>));

  // Finds a container that is fully created, or answers NotFound.
  Result<Container*> Find(const std::string& id) const;

  template <typename Resp>
  using Responder = ttrpc::TypedResponder<Resp>;
  using Empty = google::protobuf::Empty;

  void CreateTask(const containerd::task::v2::CreateTaskRequest& r,
                  Responder<containerd::task::v2::CreateTaskResponse> out);
  // The rest of CreateTask once the pod admitted the container.
  void CreateAdmitted(Container* c, const containerd::task::v2::CreateTaskRequest& r,
                      ttrpc::SharedResponder<containerd::task::v2::CreateTaskResponse> out);
  void StartTask(const containerd::task::v2::StartRequest& r,
                 Responder<containerd::task::v2::StartResponse> out);
  void DeleteTask(const containerd::task::v2::DeleteRequest& r,
                  Responder<containerd::task::v2::DeleteResponse> out);
  void State(const containerd::task::v2::StateRequest& r,
             Responder<containerd::task::v2::StateResponse> out);
  void Pids(const containerd::task::v2::PidsRequest& r,
            Responder<containerd::task::v2::PidsResponse> out);
  void Pause(const containerd::task::v2::PauseRequest& r, Responder<Empty> out);
  void Resume(const containerd::task::v2::ResumeRequest& r, Responder<Empty> out);
  void Checkpoint(const containerd::task::v2::CheckpointTaskRequest& r, Responder<Empty> out);
  void Kill(const containerd::task::v2::KillRequest& r, Responder<Empty> out);
  void Exec(const containerd::task::v2::ExecProcessRequest& r, Responder<Empty> out);
  void ResizePty(const containerd::task::v2::ResizePtyRequest& r, Responder<Empty> out);
  void CloseIO(const containerd::task::v2::CloseIORequest& r, Responder<Empty> out);
  void Update(const containerd::task::v2::UpdateTaskRequest& r, Responder<Empty> out);
  void Wait(const containerd::task::v2::WaitRequest& r,
            Responder<containerd::task::v2::WaitResponse> out);
  void Stats(const containerd::task::v2::StatsRequest& r,
             Responder<containerd::task::v2::StatsResponse> out);
  void Connect(const containerd::task::v2::ConnectRequest& r,
               Responder<containerd::task::v2::ConnectResponse> out);
  void Shutdown(const containerd::task::v2::ShutdownRequest& r, Responder<Empty> out);

  ShimContext& ctx_;
  Pod& pod_;
  ResolveOptions resolve_;
  ServerLifetime& lifetime_;  // decides what Shutdown and deletes mean
  EventHandle shutdown_reply_timer_;
  // Containers of the pod whose Create is still under way.
  std::set<std::string> creating_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
