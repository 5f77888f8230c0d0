// ContainerService: the stdio calls (WriteStdin, CloseStdin, ReadStdout,
// ReadStderr, TtyWinResize) and the control calls (ListProcesses,
// Pause/Resume, Update, Stats, GetOOMEvent). See container_service.h.
#include <nlohmann/json.hpp>

#include "agent/container_service.h"
#include "google/protobuf/any.pb.h"
#include "io/containerd/cgroups/v2/metrics.pb.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;
constexpr char kService[] = "hull.agent.v1.Agent";

// Answers `r` with OK or the failure.
template <typename Resp>
void Answer(ttrpc::TypedResponder<Resp>& r, const Status& s) {
  if (!s.ok()) return r.Fail(s);
  r.Reply(Resp());
}
template <typename Resp>
void Answer(const SharedResponder<Resp>& r, const Status& s) {
  if (!s.ok()) return r.Fail(s);
  r.Reply(Resp());
}

}  // namespace

#define AGENT_ASSIGN_OR_FAIL(lhs, expr, responder) \
  HULL_ASSIGN_OR_ANSWER(lhs, expr, [&](Status s) { (responder).Fail(std::move(s)); })

void ContainerService::RegisterStdio(ttrpc::Server& server) {
  server.RegisterUnary<pb::WriteStdinRequest, pb::WriteStdinResponse>(
      kService, "WriteStdin",
      [this](const ttrpc::CallContext&, pb::WriteStdinRequest req,
             ttrpc::TypedResponder<pb::WriteStdinResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
        auto written = p->stdio->WriteStdin(req.data());
        if (!written) return r.Fail(written.error().WithContext("write stdin of " + c->id));
        pb::WriteStdinResponse resp;
        resp.set_written(*written);
        r.Reply(resp);
      });
  server.RegisterUnary<pb::CloseStdinRequest, pb::CloseStdinResponse>(
      kService, "CloseStdin",
      [this](const ttrpc::CallContext&, pb::CloseStdinRequest req,
             ttrpc::TypedResponder<pb::CloseStdinResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
        Answer(r, p->stdio->CloseStdin());
      });
  for (bool is_stdout : {true, false}) {
    server.RegisterUnary<pb::ReadStreamRequest, pb::ReadStreamResponse>(
        kService, is_stdout ? "ReadStdout" : "ReadStderr",
        [this, is_stdout](const ttrpc::CallContext& ctx, pb::ReadStreamRequest req,
                          ttrpc::TypedResponder<pb::ReadStreamResponse> r) {
          AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
          AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
          OutputStream& stream = is_stdout ? p->stdio->stdout_stream() : p->stdio->stderr_stream();
          stream.Read(ctx, req.max_bytes(), std::move(r));
        });
  }
  server.RegisterUnary<pb::TtyWinResizeRequest, pb::TtyWinResizeResponse>(
      kService, "TtyWinResize",
      [this](const ttrpc::CallContext&, pb::TtyWinResizeRequest req,
             ttrpc::TypedResponder<pb::TtyWinResizeResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        AGENT_ASSIGN_OR_FAIL(Process * p, FindProcess(*c, req.exec_id()), r);
        if (req.rows() > 0xffff || req.columns() > 0xffff) {
          return r.Fail(InvalidArgumentError("terminal size out of range"));
        }
        Status s = p->stdio->Resize(req.rows(), req.columns());
        Answer(r, s.ok() ? s : s.WithContext("resize terminal of " + c->id));
      });
}

void ContainerService::RegisterControl(ttrpc::Server& server) {
  server.RegisterUnary<pb::ListProcessesRequest, pb::ListProcessesResponse>(
      kService, "ListProcesses",
      [this](const ttrpc::CallContext&, pb::ListProcessesRequest req,
             ttrpc::TypedResponder<pb::ListProcessesResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        if (Status s = CheckOp(c->id, c->state, ContainerOp::kList); !s.ok()) return r.Fail(s);
        backend_->Ps(c->id,
                     [r = SharedResponder(std::move(r))](Result<std::vector<pid_t>> pids) mutable {
                       if (!pids) return r.Fail(pids.error());
                       pb::ListProcessesResponse resp;
                       for (pid_t pid : *pids) resp.add_pids(static_cast<uint32_t>(pid));
                       r.Reply(resp);
                     });
      });
  for (bool pause : {true, false}) {
    auto handler = [this, pause](const std::string& id, std::function<void(Status)> done) {
      auto c = Find(id);
      if (!c) return done(c.error());
      ContainerOp op = pause ? ContainerOp::kPause : ContainerOp::kResume;
      if (Status s = CheckOp(id, (*c)->state, op); !s.ok()) return done(s);
      const uint64_t gen = (*c)->generation;
      auto finish = [this, id, gen, pause, done = std::move(done)](Status s) {
        Container* c = Still(id, gen);
        if (s.ok() && c != nullptr) {
          ContainerState from = pause ? ContainerState::kRunning : ContainerState::kPaused;
          if (c->state == from)
            c->state = pause ? ContainerState::kPaused : ContainerState::kRunning;
        }
        done(std::move(s));
      };
      if (pause) return backend_->Pause(id, std::move(finish));
      backend_->Resume(id, std::move(finish));
    };
    if (pause) {
      server.RegisterUnary<pb::PauseContainerRequest, pb::PauseContainerResponse>(
          kService, "PauseContainer",
          [handler](const ttrpc::CallContext&, pb::PauseContainerRequest req,
                    ttrpc::TypedResponder<pb::PauseContainerResponse> r) {
            handler(req.container_id(),
                    [r = SharedResponder(std::move(r))](Status s) { Answer(r, s); });
          });
    } else {
      server.RegisterUnary<pb::ResumeContainerRequest, pb::ResumeContainerResponse>(
          kService, "ResumeContainer",
          [handler](const ttrpc::CallContext&, pb::ResumeContainerRequest req,
                    ttrpc::TypedResponder<pb::ResumeContainerResponse> r) {
            handler(req.container_id(),
                    [r = SharedResponder(std::move(r))](Status s) { Answer(r, s); });
          });
    }
  }
  server.RegisterUnary<pb::UpdateContainerRequest, pb::UpdateContainerResponse>(
      kService, "UpdateContainer",
      [this](const ttrpc::CallContext&, pb::UpdateContainerRequest req,
             ttrpc::TypedResponder<pb::UpdateContainerResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        if (Status s = CheckOp(c->id, c->state, ContainerOp::kUpdate); !s.ok()) return r.Fail(s);
        auto resources = nlohmann::json::parse(req.resources_json(), nullptr, false);
        if (!resources.is_object()) {
          return r.Fail(InvalidArgumentError("update container " + c->id +
                                             ": resources_json is not a JSON object"));
        }
        const uint64_t pod_max = req.pod_memory_max_bytes();
        if (pod_max > 0 && !options_.set_pod_memory_max) {
          return r.Fail(FailedPreconditionError("update container " + c->id +
                                                ": this agent sets no pod memory limit"));
        }
        // The pod's limit goes up before the container's, and down after; a
        // raise the runtime then refuses is undone (when the earlier value is
        // known: the first update's is CreateSandbox's).
        const bool raise = pod_max > 0 && pod_max >= pod_memory_max_;
        const uint64_t before = pod_memory_max_;
        if (raise) {
          if (Status s = SetPodMemoryMax(pod_max); !s.ok()) {
            return r.Fail(s.WithContext("update container " + c->id + ": pod memory"));
          }
        }
        backend_->Update(c->id, req.resources_json(),
                         [this, id = c->id, raise, pod_max, before,
                          r = SharedResponder(std::move(r))](Status s) mutable {
                           if (destroying_ || pod_max == 0) return Answer(r, s);
                           if (!s.ok()) {
                             if (raise && before > 0) SetPodMemoryMax(before).IgnoreError();
                             return Answer(r, s);
                           }
                           if (!raise) {
                             s = SetPodMemoryMax(pod_max);
                             if (!s.ok())
                               s = s.WithContext("update container " + id + ": pod memory");
                           }
                           Answer(r, s);
                         });
      });
  server.RegisterUnary<pb::StatsContainerRequest, pb::StatsContainerResponse>(
      kService, "StatsContainer",
      [this](const ttrpc::CallContext&, pb::StatsContainerRequest req,
             ttrpc::TypedResponder<pb::StatsContainerResponse> r) {
        AGENT_ASSIGN_OR_FAIL(Container * c, Find(req.container_id()), r);
        if (Status s = CheckOp(c->id, c->state, ContainerOp::kStats); !s.ok()) return r.Fail(s);
        const std::string id = c->id;
        backend_->Stats(
            id, c->init.pid,
            [id, r = SharedResponder(std::move(r))](Result<google::protobuf::Any> any) mutable {
              if (!any) return r.Fail(any.error());
              pb::StatsContainerResponse resp;
              if (any->type_url().find("cgroups.v2.Metrics") == std::string::npos ||
                  !resp.mutable_metrics()->ParseFromString(any->value())) {
                return r.Fail(InternalError("stats " + id + ": not cgroup v2 metrics (" +
                                            any->type_url() + ")"));
              }
              r.Reply(resp);
            });
      });
  server.RegisterUnary<pb::GetOOMEventRequest, pb::GetOOMEventResponse>(
      kService, "GetOOMEvent",
      [this](const ttrpc::CallContext& ctx, pb::GetOOMEventRequest,
             ttrpc::TypedResponder<pb::GetOOMEventResponse> r) {
        oom_polls_.Park(ctx, std::move(r));
        DeliverOomEvents();
      });
}

Status ContainerService::SetPodMemoryMax(uint64_t bytes) {
  HULL_RETURN_IF_ERROR(options_.set_pod_memory_max(bytes));
  pod_memory_max_ = bytes;
  return Status::Ok();
}

}  // namespace hull::agent
