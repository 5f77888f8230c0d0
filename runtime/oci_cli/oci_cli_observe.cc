// OciCliBackend's calls that observe and snapshot a container rather than
// change its state: checkpoint (in steps: probe the runtime, check criu,
// dump), stats, the init's exit and OOM kills. See oci_cli_backend.h.
#include <signal.h>

#include <cerrno>
#include <string_view>

#include "base/spawn.h"
#include "google/protobuf/any.pb.h"
#include "runtime/oci_cli/cgroup_bridge.h"
#include "runtime/oci_cli/oci_cli_backend.h"
#include "runtime/oci_cli/runsc_events.h"
#include "runtime/oci_cli/runtime_error.h"

namespace hull::runtime::oci_cli {

void OciCliBackend::Checkpoint(const CheckpointRequest& req, Done done) {
  if (std::string_view why = argv_.flavour().no_checkpoint; !why.empty()) {
    return PostDone(std::move(done),
                    UnimplementedError("checkpoint " + req.id + ": " + std::string(why)));
  }
  CheckpointFrom(CheckpointStep::kProbeRuntime, req, std::move(done));
}

void OciCliBackend::CheckpointFrom(CheckpointStep step, CheckpointRequest req, Done done) {
  const std::string runtime(argv_.flavour().name);
  switch (step) {
    case CheckpointStep::kProbeRuntime: {
      if (can_checkpoint_.has_value()) {
        if (!can_checkpoint_->ok()) return PostDone(std::move(done), *can_checkpoint_);
        return CheckpointFrom(CheckpointStep::kCheckCriu, std::move(req), std::move(done));
      }
      Call call{.what = "checkpoint --help",
                .id = req.id,
                .argv = argv_.CheckpointProbe(),
                .reads_log = false};
      return Run(std::move(call), [this, runtime, req = std::move(req), done = std::move(done)](
                                      Status s, CommandResult r) mutable {
        if (s.ok()) {
          can_checkpoint_ = Status();
        } else if (r.exit_status != 0) {
          can_checkpoint_ = FailedPreconditionError(
              runtime + " cannot checkpoint: " + FailureMessage("", r.err, r.exit_status));
        } else {
          return done(std::move(s));  // could not run the runtime at all
        }
        CheckpointFrom(CheckpointStep::kProbeRuntime, std::move(req), std::move(done));
      });
    }
    case CheckpointStep::kCheckCriu: {
      Call call{.what = "criu check", .id = req.id, .argv = argv_.CriuCheck(), .reads_log = false};
      return Run(std::move(call), [this, req = std::move(req), done = std::move(done)](
                                      Status s, CommandResult r) mutable {
        if (!s.ok()) {
          // criu writes its complaints to stdout or stderr, depending.
          std::string why = r.exit_status == 0
                                ? s.message()
                                : FailureMessage("", r.err.empty() ? r.out : r.err, r.exit_status);
          return done(FailedPreconditionError("checkpoint needs a working criu: " + why));
        }
        CheckpointFrom(CheckpointStep::kDump, std::move(req), std::move(done));
      });
    }
    case CheckpointStep::kDump: {
      Call call{.what = "checkpoint", .id = req.id, .argv = ArgvFor(req.id).Checkpoint(req)};
      return Run(std::move(call),
                 [done = std::move(done)](Status s, CommandResult) { done(std::move(s)); });
    }
  }
}

void OciCliBackend::Stats(const std::string& id, pid_t init_pid,
                          std::function<void(Result<google::protobuf::Any>)> done) {
  if (argv_.flavour().stats_from_events) return EventsStats(id, std::move(done));
  loop_.Post([id, init_pid, done = std::move(done)] {
    auto metrics = ContainerMetrics(init_pid);
    if (!metrics) return done(metrics.error().WithContext("stats " + id));
    done(std::move(metrics));
  });
}

void OciCliBackend::EventsStats(const std::string& id,
                                std::function<void(Result<google::protobuf::Any>)> done) {
  Run(Call{.what = "events --stats", .id = id, .argv = ArgvFor(id).EventsStats(id)},
      [id, done = std::move(done)](Status s, CommandResult r) {
        if (!s.ok()) return done(std::move(s));
        auto metrics = MetricsFromRunscStats(r.out);
        if (!metrics) return done(metrics.error().WithContext("stats " + id));
        google::protobuf::Any any;
        any.set_type_url("io.containerd.cgroups.v1.Metrics");
        if (!metrics->SerializeToString(any.mutable_value())) {
          return done(InternalError("stats " + id + ": serialize metrics"));
        }
        done(std::move(any));
      });
}

void OciCliBackend::WatchInitExit(const std::string& id, pid_t pid,
                                  std::function<void(int exit_status)> on_exit) {
  auto it = containers_.find(id);
  // The init is alive now (created, or just restored): its cgroup is the
  // container's, kept for kill --all's wait (WaitUntilEmpty) once it is
  // gone. Without one, that wait asks the runtime.
  if (it != containers_.end() && !argv_.flavour().no_container_cgroup) {
    auto cgroup = ContainerCgroup(pid);
    if (cgroup) it->second.cgroup = std::move(*cgroup);
  }
  if (it == containers_.end() || !it->second.joined) {
    reaper_.Watch(pid, [on_exit = std::move(on_exit)](int wait_status) {
      on_exit(ExitStatusFromWait(wait_status));
    });
    return;
  }
  if (!it->second.started) {
    it->second.wait_after_start = std::move(on_exit);
    return;
  }
  RunWait(id, std::move(on_exit));
}

void OciCliBackend::WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                                  std::function<void(int exit_status)> on_exit) {
  reaper_.Watch(pid, [this, alive = std::weak_ptr<bool>(alive_), id, exec_id,
                      on_exit = std::move(on_exit)](int wait_status) {
    // The sandbox may give the exec's pid to another process now.
    if (!alive.expired()) {
      if (auto it = containers_.find(id); it != containers_.end()) {
        it->second.exec_internal_pids.erase(exec_id);
      }
    }
    on_exit(ExitStatusFromWait(wait_status));
  });
}

void OciCliBackend::ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) {
  if (pid > 0) reaper_.Discard(pid);
  if (auto it = containers_.find(id); it != containers_.end()) {
    it->second.exec_internal_pids.erase(exec_id);
  }
}

void OciCliBackend::SignalExec(const std::string& id, const std::string& exec_id, pid_t pid,
                               int signal, Done done) {
  if (auto it = containers_.find(id); it != containers_.end()) {
    auto internal = it->second.exec_internal_pids.find(exec_id);
    if (internal != it->second.exec_internal_pids.end()) {
      // The process in the sandbox: its proxy on the host exits with it.
      const Flavour& flavour = argv_.flavour();
      return Run(Call{.what = "kill",
                      .id = id,
                      .argv = ArgvFor(id).KillProcess(id, internal->second, signal)},
                 [&flavour, done = std::move(done)](Status s, CommandResult) mutable {
                   if (!s.ok() && IsProcessGone(flavour, s.message())) {
                     s = NotFoundError("process already finished (" + s.message() + ")");
                   }
                   done(std::move(s));
                 });
    }
  }
  if (::kill(pid, signal) == 0) return PostDone(std::move(done), Status::Ok());
  if (errno == ESRCH) return PostDone(std::move(done), NotFoundError("process already finished"));
  PostDone(std::move(done), ErrnoError("kill", "exec " + exec_id));
}

void OciCliBackend::RunWait(const std::string& id, std::function<void(int)> on_exit) {
  Run(Call{.what = "wait", .id = id, .argv = ArgvFor(id).Wait(id), .reads_log = false},
      [on_exit = std::move(on_exit)](Status s, CommandResult r) {
        // A wait that fails (the sandbox died under it) has no status to
        // give; 255 is what a lost process gets elsewhere in hull.
        Result<int> status = s.ok() ? ExitStatusFromRunscWait(r.out) : Result<int>(255);
        on_exit(status.value_or(255));
      });
}

Result<EventHandle> OciCliBackend::WatchOom(const std::string& id, pid_t init_pid,
                                            std::function<void()> on_oom) {
  if (std::string_view why = argv_.flavour().no_oom; !why.empty()) {
    return UnimplementedError("watch OOM of " + id + ": " + std::string(why));
  }
  auto handle = WatchContainerOom(loop_, init_pid, std::move(on_oom));
  if (!handle) return handle.error().WithContext("watch OOM of " + id);
  auto it = containers_.find(id);
  if (it != containers_.end()) {
    if (auto counter = ContainerOomCounter(init_pid)) it->second.oom_counter = std::move(*counter);
  }
  return handle;
}

Result<uint64_t> OciCliBackend::OomKillCount(const std::string& id) {
  auto it = containers_.find(id);
  if (it == containers_.end() || !it->second.oom_counter) {
    return UnimplementedError("no OOM counter for " + id);
  }
  return it->second.oom_counter();
}

}  // namespace hull::runtime::oci_cli
