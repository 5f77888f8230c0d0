#include "shim/task_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "containerd/linux/runc/runctypes.pb.h"
#include "containerd/runc/v1/options.pb.h"
#include "oci/annotations.h"
#include "oci/spec.h"

namespace hull::shim {
namespace tv2 = containerd::task::v2;

namespace {

constexpr const char* kServices[] = {"containerd.task.v2.Task", "containerd.task.v3.Task"};
// How long a Shutdown after the last delete waits for the pod's sandbox to be
// torn down before it answers anyway: under containerd's own 3 s
// (io.containerd.timeout.shim.shutdown).
constexpr std::chrono::milliseconds kShutdownReplyWait{2500};

// Responders are move-only; the callbacks that carry them are std::function,
// which must be copyable, so they carry a shared handle instead.
template <typename Resp>
ttrpc::SharedResponder<Resp> Share(ttrpc::TypedResponder<Resp> out) {
  return ttrpc::SharedResponder<Resp>(std::move(out));
}

// A callback answering a Responder<Empty> from a Status.
template <typename Resp>
auto Answer(ttrpc::TypedResponder<Resp> responder) {
  return [out = Share(std::move(responder))](Status status) {
    if (status.ok()) {
      out.Reply(Resp());
    } else {
      out.Fail(std::move(status));
    }
  };
}

}  // namespace

TaskService::TaskService(ShimContext& ctx, Pod& pod, ResolveOptions resolve,
                         ServerLifetime& lifetime)
    : ctx_(ctx), pod_(pod), resolve_(std::move(resolve)), lifetime_(lifetime) {}

TaskService::~TaskService() {
  *alive_ = false;
}

template <typename Req, typename Resp>
void TaskService::Handle(ttrpc::Server& server, const char* method,
                         void (TaskService::*handler)(const Req&, ttrpc::TypedResponder<Resp>)) {
  for (const char* service : kServices) {
    server.RegisterUnary<Req, Resp>(
        service, method,
        [this, handler](const ttrpc::CallContext&, Req request, ttrpc::TypedResponder<Resp> out) {
          (this->*handler)(request, std::move(out));
        });
  }
}

void TaskService::RegisterWith(ttrpc::Server& server) {
  Handle(server, "Create", &TaskService::CreateTask);
  Handle(server, "Start", &TaskService::StartTask);
  Handle(server, "Delete", &TaskService::DeleteTask);
  Handle(server, "State", &TaskService::State);
  Handle(server, "Pids", &TaskService::Pids);
  Handle(server, "Pause", &TaskService::Pause);
  Handle(server, "Resume", &TaskService::Resume);
  Handle(server, "Checkpoint", &TaskService::Checkpoint);
  Handle(server, "Kill", &TaskService::Kill);
  Handle(server, "Exec", &TaskService::Exec);
  Handle(server, "ResizePty", &TaskService::ResizePty);
  Handle(server, "CloseIO", &TaskService::CloseIO);
  Handle(server, "Update", &TaskService::Update);
  Handle(server, "Wait", &TaskService::Wait);
  Handle(server, "Stats", &TaskService::Stats);
  Handle(server, "Connect", &TaskService::Connect);
  Handle(server, "Shutdown", &TaskService::Shutdown);
}

Result<Container*> TaskService::Find(const std::string& id) const {
  Container* c = pod_.Get(id);
  if (c == nullptr || creating_.contains(id) || c->deleted()) {
    return NotFoundError("container " + id + " not created: not found");
  }
  return c;
}

void TaskService::CreateTask(const tv2::CreateTaskRequest& r,
                             Responder<tv2::CreateTaskResponse> out) {
  const std::string& id = r.id();
  if (id.empty()) return out.Fail(InvalidArgumentError("create: container id must not be empty"));
  if (r.bundle().empty()) return out.Fail(InvalidArgumentError("create " + id + ": no bundle"));
  if (pod_.Get(id) != nullptr || creating_.contains(id)) {
    return out.Fail(AlreadyExistsError("container " + id + " already exists"));
  }
  auto options = resolve_(r.options(), r.bundle());
  if (!options) return out.Fail(options.error().WithContext("create " + id));
  auto spec = oci::Spec::Load(r.bundle() + "/" + std::string(oci::kConfigFileName));
  if (!spec) return out.Fail(spec.error().WithContext("create " + id));
  creating_.insert(id);
  std::weak_ptr<bool> alive = alive_;
  // The pod admits the container (size, cgroup, backend, the sandbox
  // prepared) before the Container exists.
  pod_.Admit(id, r.bundle(), *spec, *options,
             [this, alive, r, options = *options, traits = ContainerTraits::Of(*spec),
              out = Share(std::move(out))](Result<Pod::Admission> admission) mutable {
               if (alive.expired()) return out.Fail(UnavailableError("shim is shutting down"));
               if (!admission) {
                 creating_.erase(r.id());
                 ctx_.log.Error("create {}: {}", r.id(), admission.error().ToString());
                 return out.Fail(admission.error().WithContext("create " + r.id()));
               }
               StdioConfig stdio{.stdin_path = r.stdin(),
                                 .stdout_path = r.stdout(),
                                 .stderr_path = r.stderr(),
                                 .terminal = r.terminal()};
               auto added = pod_.Add(
                   std::make_unique<Container>(ctx_, r.id(), r.bundle(), std::move(stdio),
                                               std::move(options), *admission->backend, traits));
               if (!added) {
                 creating_.erase(r.id());
                 return out.Fail(added.error());
               }
               CreateAdmitted(*added, r, std::move(out));
             });
}

void TaskService::CreateAdmitted(Container* c, const tv2::CreateTaskRequest& r,
                                 ttrpc::SharedResponder<tv2::CreateTaskResponse> out) {
  std::weak_ptr<bool> alive = alive_;
  c->Create(r, [this, alive, id = r.id(), out = std::move(out)](Result<pid_t> pid) {
    if (alive.expired()) return out.Fail(UnavailableError("shim is shutting down"));
    creating_.erase(id);
    if (!pid) {
      ctx_.log.Error("{}", pid.error().ToString());
      pod_.DropLater(id);
      return out.Fail(pid.error());
    }
    ctx_.log.Info("created container {} with pid {}", id, *pid);
    tv2::CreateTaskResponse response;
    response.set_pid(static_cast<uint32_t>(*pid));
    out.Reply(response);
  });
}

void TaskService::StartTask(const tv2::StartRequest& r, Responder<tv2::StartResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Start(r.exec_id(), [out = Share(std::move(out))](Result<pid_t> pid) {
    if (!pid) return out.Fail(pid.error());
    tv2::StartResponse response;
    response.set_pid(static_cast<uint32_t>(*pid));
    out.Reply(response);
  });
}

void TaskService::DeleteTask(const tv2::DeleteRequest& r, Responder<tv2::DeleteResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  std::weak_ptr<bool> alive = alive_;
  c->Delete(r.exec_id(), [this, alive, c, id = r.id(),
                          out = Share(std::move(out))](Result<tv2::DeleteResponse> response) {
    if (!response) return out.Fail(response.error());
    if (!alive.expired() && c->deleted()) {
      ctx_.log.Info("deleted container {}", id);
      pod_.DropLater(id);
      lifetime_.ContainerDeleted();
    }
    out.Reply(*response);
  });
}

void TaskService::State(const tv2::StateRequest& r, Responder<tv2::StateResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  auto state = c->State(r.exec_id());
  if (!state) return out.Fail(state.error());
  out.Reply(*state);
}

void TaskService::Pids(const tv2::PidsRequest& r, Responder<tv2::PidsResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Pids([out = Share(std::move(out))](Result<tv2::PidsResponse> response) {
    if (!response) return out.Fail(response.error());
    out.Reply(*response);
  });
}

void TaskService::Pause(const tv2::PauseRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Pause(Answer(std::move(out)));
}

void TaskService::Resume(const tv2::ResumeRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Resume(Answer(std::move(out)));
}

void TaskService::Checkpoint(const tv2::CheckpointTaskRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  CheckpointRequest req{.id = r.id(), .image_path = r.path()};
  if (!r.options().value().empty() || !r.options().type_url().empty()) {
    // containerd.runc.v1.CheckpointOptions, or the older runctypes form
    // (containerd.linux.runc.CheckpointOptions): the same fields, but
    // image_path and work_path have swapped numbers, and no parent_path.
    containerd::runc::v1::CheckpointOptions o;
    containerd::linux::runc::CheckpointOptions old;
    const std::string& type = r.options().type_url();
    bool parsed = false;
    if (type == "containerd.runc.v1.CheckpointOptions") {
      parsed = o.ParseFromString(r.options().value());
    } else if (type == "containerd.linux.runc.CheckpointOptions" &&
               old.ParseFromString(r.options().value())) {
      parsed = true;
      o.set_exit(old.exit());
      o.set_open_tcp(old.open_tcp());
      o.set_external_unix_sockets(old.external_unix_sockets());
      o.set_terminal(old.terminal());
      o.set_file_locks(old.file_locks());
      *o.mutable_empty_namespaces() = old.empty_namespaces();
      o.set_cgroups_mode(old.cgroups_mode());
      o.set_image_path(old.image_path());
      o.set_work_path(old.work_path());
    }
    if (!parsed) {
      return out.Fail(InvalidArgumentError("checkpoint " + r.id() + ": unsupported options " +
                                           r.options().type_url()));
    }
    req.exit = o.exit();
    req.open_tcp = o.open_tcp();
    req.external_unix_sockets = o.external_unix_sockets();
    req.terminal = o.terminal();
    req.file_locks = o.file_locks();
    req.empty_namespaces.assign(o.empty_namespaces().begin(), o.empty_namespaces().end());
    req.cgroups_mode = o.cgroups_mode();
    if (!o.image_path().empty()) req.image_path = o.image_path();
    req.work_path = o.work_path();
    req.parent_path = o.parent_path();
  }
  if (req.image_path.empty()) {
    return out.Fail(InvalidArgumentError("checkpoint " + r.id() + ": no image path"));
  }
  c->Checkpoint(req, Answer(std::move(out)));
}

void TaskService::Kill(const tv2::KillRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Kill(r.exec_id(), r.signal(), r.all(), Answer(std::move(out)));
}

void TaskService::Exec(const tv2::ExecProcessRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  Answer(std::move(out))(c->AddExec(r));
}

void TaskService::ResizePty(const tv2::ResizePtyRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  Answer(std::move(out))(c->ResizePty(r.exec_id(), r.width(), r.height()));
}

void TaskService::CloseIO(const tv2::CloseIORequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  Answer(std::move(out))(c->CloseIO(r.exec_id(), r.stdin()));
}

void TaskService::Update(const tv2::UpdateTaskRequest& r, Responder<Empty> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Update(r.resources().value(), Answer(std::move(out)));
}

void TaskService::Wait(const tv2::WaitRequest& r, Responder<tv2::WaitResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Wait(r.exec_id(), std::move(out));
}

void TaskService::Stats(const tv2::StatsRequest& r, Responder<tv2::StatsResponse> out) {
  HULL_ASSIGN_OR_ANSWER(Container * c, Find(r.id()), out.Fail);
  c->Stats([out = Share(std::move(out))](Result<google::protobuf::Any> stats) {
    if (!stats) return out.Fail(stats.error());
    tv2::StatsResponse response;
    *response.mutable_stats() = std::move(*stats);
    out.Reply(response);
  });
}

void TaskService::Connect(const tv2::ConnectRequest& r, Responder<tv2::ConnectResponse> out) {
  tv2::ConnectResponse response;
  response.set_shim_pid(static_cast<uint32_t>(::getpid()));
  if (auto c = Find(r.id())) response.set_task_pid(static_cast<uint32_t>((*c)->init_pid()));
  out.Reply(response);
}

void TaskService::Shutdown(const tv2::ShutdownRequest&, Responder<Empty> out) {
  // Whether it ends the server is the ServerLifetime's to say.
  if (!lifetime_.TaskShutdown()) return out.Reply(Empty());
  // The answer waits for the pod's sandbox to be torn down (a VM pod's guest
  // powered off and QEMU reaped), at most kShutdownReplyWait: containerd
  // closes the shim's log with the connection once Shutdown answers, and the
  // teardown's last lines would be lost.
  auto reply = [out = Share(std::move(out))] { out.Reply(Empty()); };
  shutdown_reply_timer_ = ctx_.loop.AddTimer(kShutdownReplyWait, reply);
  std::weak_ptr<bool> alive = alive_;
  pod_.WhenTornDown([this, alive, reply] {
    reply();
    if (alive.expired()) return;
    shutdown_reply_timer_.Reset();
    lifetime_.ShutdownAnswered();
  });
}

}  // namespace hull::shim
