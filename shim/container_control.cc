#include <nlohmann/json.hpp>

#include "containerd/runc/v1/options.pb.h"
#include "shim/container.h"
#include "shim/container_internal.h"

// Container's calls on a running container: pause, resume, update, pids,
// stats and checkpoint; each is one backend call and its answer.
namespace hull::shim {
namespace tv2 = containerd::task::v2;
using internal::Gone;

void Container::Pause(Done done) {
  Status can = init_->TransitionTo(ProcessState::kPausing);
  if (!can.ok()) return done(can.WithContext("pause " + id_));
  std::weak_ptr<bool> alive = Alive();
  backend_->Pause(id_, [this, alive, done = std::move(done)](Status status) mutable {
    if (Gone(alive, done)) return;
    if (init_->state() != ProcessState::kPausing) return done(status);  // exited meanwhile
    if (!status.ok()) {
      init_->TransitionTo(ProcessState::kRunning).IgnoreError();
      return done(status.WithContext("pause " + id_));
    }
    init_->TransitionTo(ProcessState::kPaused).IgnoreError();
    events_.Paused(id_);
    done(Status::Ok());
  });
}

void Container::Resume(Done done) {
  if (init_->state() != ProcessState::kPaused) {
    return done(FailedPreconditionError("resume " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  std::weak_ptr<bool> alive = Alive();
  backend_->Resume(id_, [this, alive, done = std::move(done)](Status status) mutable {
    if (Gone(alive, done)) return;
    if (!status.ok()) return done(status.WithContext("resume " + id_));
    init_->TransitionTo(ProcessState::kRunning).IgnoreError();
    events_.Resumed(id_);
    done(Status::Ok());
  });
}

void Container::Update(const std::string& resources_json, Done done) {
  // A created container takes new limits too (the runc shim's contract:
  // CRI's UpdateContainerResources may come before the start).
  // A restore still pending (no pid yet) has nothing to update.
  const bool created = init_->state() == ProcessState::kCreated && init_->pid() > 0;
  if (!init_->live() && !created) {
    return done(FailedPreconditionError("update " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  auto parsed = nlohmann::json::parse(resources_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return done(
        InvalidArgumentError("update " + id_ + ": resources are not a LinuxResources JSON object"));
  }
  backend_->Update(id_, resources_json,
                   [alive = Alive(), done = std::move(done)](Status status) mutable {
                     if (Gone(alive, done)) return;
                     done(std::move(status));
                   });
}

void Container::Pids(Reply<tv2::PidsResponse> done) {
  std::weak_ptr<bool> alive = Alive();
  backend_->Ps(id_, [this, alive, done = std::move(done)](Result<std::vector<pid_t>> pids) mutable {
    if (Gone(alive, done)) return;
    if (!pids) return done(pids.error().WithContext("pids " + id_));
    tv2::PidsResponse r;
    for (pid_t pid : *pids) {
      auto* info = r.add_processes();
      info->set_pid(static_cast<uint32_t>(pid));
      for (const auto& [exec_id, exec] : execs_) {
        if (exec->pid() != pid) continue;
        containerd::runc::v1::ProcessDetails details;
        details.set_exec_id(exec_id);
        info->mutable_info()->set_type_url("containerd.runc.v1.ProcessDetails");
        details.SerializeToString(info->mutable_info()->mutable_value());
      }
    }
    done(r);
  });
}

void Container::Stats(Reply<google::protobuf::Any> done) {
  if (init_->pid() == 0 || init_->exited()) {
    return done(NotFoundError("stats " + id_ + ": container is not running"));
  }
  backend_->Stats(
      id_, init_->pid(),
      [alive = Alive(), done = std::move(done)](Result<google::protobuf::Any> stats) mutable {
        if (Gone(alive, done)) return;
        done(std::move(stats));
      });
}

void Container::Checkpoint(const CheckpointRequest& request, Done done) {
  if (!init_->live()) {
    return done(FailedPreconditionError("checkpoint " + id_ + ": container is " +
                                        std::string(ProcessStateName(init_->state()))));
  }
  backend_->Checkpoint(request, [alive = Alive(), done = std::move(done)](Status status) mutable {
    if (Gone(alive, done)) return;
    done(std::move(status));
  });
}

}  // namespace hull::shim
