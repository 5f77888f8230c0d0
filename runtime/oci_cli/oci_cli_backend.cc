#include "runtime/oci_cli/oci_cli_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/file_util.h"
#include "base/spawn.h"
#include "google/protobuf/any.pb.h"
#include "oci/annotations.h"
#include "runtime/oci_cli/cgroup_bridge.h"
#include "runtime/oci_cli/runsc_events.h"
#include "runtime/oci_cli/runtime_error.h"
#include "runtime/oci_cli/sandbox_kernel_spec.h"
#include "runtime/oci_cli/spec_version.h"

namespace hull::runtime::oci_cli {

struct OciCliBackend::PendingStart {
  CreateRequest req;  // req.stdio's fds point into `fds`
  UniqueFd fds[3];    // duplicates of the caller's stdio descriptors
};

namespace {

// From `runsc list --format json`: the ids of the containers that joined
// sandbox `id` (container-type "container", sandbox-id `id`).
std::vector<std::string> JoinedContainers(const std::string& list_json, const std::string& id) {
  std::vector<std::string> out;
  auto list = nlohmann::json::parse(list_json, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return out;
  const std::string type_key(oci::kContainerType), sandbox_key(oci::kSandboxId);
  for (const auto& entry : list) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string()) continue;
    const std::string& other = entry["id"].get_ref<const std::string&>();
    auto annotations = entry.find("annotations");
    if (other == id || annotations == entry.end() || !annotations->is_object()) continue;
    auto type = annotations->find(type_key);
    auto sandbox = annotations->find(sandbox_key);
    if (type != annotations->end() && *type == oci::kContainerTypeContainer &&
        sandbox != annotations->end() && *sandbox == id) {
      out.push_back(other);
    }
  }
  return out;
}

Status ContainerDeleted(const std::string& id) {
  return NotFoundError("container " + id + " deleted");
}

}  // namespace

void RemoveOrphanRunscLocks(const std::string& root, const std::string& sandbox) {
  namespace fs = std::filesystem;
  const std::string suffix = "_sandbox:" + sandbox + ".lock";
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(suffix)) continue;
    fs::path state = entry.path();
    state.replace_extension(".state");
    if (!fs::exists(state, ec)) fs::remove(entry.path(), ec);
  }
}

OciCliBackend::OciCliBackend(EventLoop& loop, Reaper& reaper, ArgvBuilder argv)
    : loop_(loop), reaper_(reaper), argv_(std::move(argv)) {}

OciCliBackend::~OciCliBackend() {
  // Every call still running is answered: its caller may be an RPC that
  // containerd waits on. A continuation that would run the runtime again
  // (Run) is answered at once, below, so this ends.
  destroying_ = true;
  while (!kill_waits_.empty()) {
    KillWait wait = std::move(kill_waits_.begin()->second);
    kill_waits_.erase(kill_waits_.begin());
    wait.timer.Reset();
    wait.cgroup_op.Reset();
    wait.done(Status());  // the kill was sent; nobody is left to wait
  }
  while (!calls_.empty()) {
    Running running = std::move(calls_.begin()->second);
    calls_.erase(calls_.begin());
    running.command.reset();  // kills the runtime process
    running.done(ContainerDeleted(running.id), CommandResult{});
  }
  if (sandbox_) DestroySandboxNow();
}

void OciCliBackend::Release(const std::string& id) {
  containers_.erase(id);
}

const ArgvBuilder& OciCliBackend::ArgvFor(const std::string& id) const {
  auto it = containers_.find(id);
  return it == containers_.end() ? argv_ : it->second.argv;
}

Result<int> OciCliBackend::DevNull() {
  if (!dev_null_) {
    dev_null_.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!dev_null_) return ErrnoError("open", "/dev/null");
  }
  return dev_null_.get();
}

void OciCliBackend::PostDone(Done done, Status status) {
  loop_.Post([done = std::move(done), status = std::move(status)] { done(status); });
}

Status OciCliBackend::Failure(const Call& call, const std::string& log_tail,
                              const CommandResult& r) const {
  std::string message = FailureMessage(log_tail, r.err, r.exit_status);
  return ClassifyFailure(argv_.flavour(), argv_.config().root + "/" + call.id, std::move(message))
      .WithContext(std::string(argv_.flavour().name) + " " + call.what + " " + call.id);
}

void OciCliBackend::Run(Call call, CallDone done) {
  if (destroying_) return done(ContainerDeleted(call.id), CommandResult{});
  const std::string context = std::string(argv_.flavour().name) + " " + call.what + " " + call.id;
  SpawnOptions options{.argv = call.argv, .parent_death_signal = SIGKILL};
  if (call.stdio != nullptr) {
    // The runtime hands its own stdio to the container process, so it is not
    // captured: the container would hold the pipes open long after the
    // runtime exits. Failures are read from the JSON log instead.
    auto dev_null = DevNull();
    if (!dev_null) {
      loop_.Post([done = std::move(done), s = dev_null.error().WithContext(context)] {
        done(s, CommandResult{});
      });
      return;
    }
    const ProcessStdio& io = *call.stdio;
    if (!io.console_socket.empty()) {
      // A terminal process gets the pty; the runtime's stdio stays its own.
      options.fds = {{0, *dev_null}};
    } else {
      auto or_null = [&](int fd) { return fd >= 0 ? fd : *dev_null; };
      options.fds = {
          {0, or_null(io.stdin_fd)}, {1, or_null(io.stdout_fd)}, {2, or_null(io.stderr_fd)}};
    }
  }
  call.stdio = nullptr;  // borrowed from the request; not needed past here
  const std::string& log_path = ArgvFor(call.id).config().log_path;
  LogCursor log = LogCursor::At(call.reads_log ? log_path : std::string());
  const uint64_t key = next_call_++;
  std::string stdin_data = call.stdin_data;
  std::string id = call.id;
  auto command = Command::Start(loop_, reaper_, std::move(options), std::move(stdin_data),
                                [this, key, call = std::make_shared<const Call>(std::move(call)),
                                 log](CommandResult r) { OnExit(key, *call, log, std::move(r)); });
  if (!command) {
    loop_.Post([done = std::move(done), s = command.error().WithContext(context)] {
      done(s, CommandResult{});
    });
    return;
  }
  calls_.emplace(key, Running{std::move(*command), std::move(id), std::move(done)});
}

void OciCliBackend::OnExit(uint64_t key, const Call& call, const LogCursor& log, CommandResult r) {
  // The Command that called us is finished. It dies when this returns, after
  // `done`, which may destroy this backend: nothing touches `this` after it.
  // (`call` and `log` live in the Command's callback, which outlives this.)
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  Running finished = std::move(it->second);
  calls_.erase(it);
  Status status = r.ok() ? Status() : Failure(call, log.ReadNew(), r);
  finished.done(std::move(status), std::move(r));
}

Result<std::shared_ptr<OciCliBackend::PendingStart>> OciCliBackend::Hold(const CreateRequest& req) {
  auto pending = std::make_shared<PendingStart>();
  pending->req = req;
  int* fds[3] = {&pending->req.stdio.stdin_fd, &pending->req.stdio.stdout_fd,
                 &pending->req.stdio.stderr_fd};
  for (int i = 0; i < 3; ++i) {
    if (*fds[i] < 0) continue;
    pending->fds[i].reset(::fcntl(*fds[i], F_DUPFD_CLOEXEC, 0));
    if (!pending->fds[i]) {
      return ErrnoError("dup", "stdio fd " + std::to_string(*fds[i]) + " of " + req.id);
    }
    *fds[i] = pending->fds[i].get();
  }
  return pending;
}

OciCliBackend::HostWrites OciCliBackend::LocalHostWrites() {
  return HostWrites{.fit_spec =
                        [](const std::string& config_json, std::string_view runtime_max,
                           std::string_view runtime) {
                          return FitBundleSpecVersion(config_json, runtime_max, runtime, nullptr);
                        },
                    .fit_kernel = FitBundleToSandboxKernel,
                    .remove_locks = RemoveOrphanRunscLocks,
                    .remove_file = [](const std::string& path) { ::unlink(path.c_str()); }};
}

void OciCliBackend::Create(const CreateRequest& req, Done done) {
  if (argv_.flavour().sandbox_kernel && !req.bundle.empty()) {
    const std::string config_json = req.bundle + "/config.json";
    Status fit = writes_.fit_kernel(config_json, req.joins_sandbox);
    if (!fit.ok()) return PostDone(std::move(done), fit.WithContext("create " + req.id));
  }
  if (argv_.flavour().spec_version_max == nullptr || req.bundle.empty()) {
    return RuntimeCreate(req, std::move(done));
  }
  // Our own copies of the stdio descriptors, should the probe outlast the
  // caller's.
  auto held = Hold(req);
  if (!held) return PostDone(std::move(done), held.error());
  CreateFrom(CreateStep::kProbeSpecVersion, std::move(*held), std::move(done));
}

void OciCliBackend::CreateFrom(CreateStep step, std::shared_ptr<PendingStart> held, Done done) {
  const std::string& id = held->req.id;
  switch (step) {
    case CreateStep::kProbeSpecVersion: {
      if (spec_version_max_.has_value()) {
        return CreateFrom(CreateStep::kFitSpec, std::move(held), std::move(done));
      }
      // `<runtime> features` (crun 1.9+), else the version banner.
      Call call{.what = "features", .id = id, .argv = argv_.Features(), .reads_log = false};
      return Run(std::move(call), [this, held = std::move(held), done = std::move(done)](
                                      Status s, CommandResult r) mutable {
        if (destroying_) return done(ContainerDeleted(held->req.id));
        if (s.ok()) {
          spec_version_max_ = SpecVersionMax(r.out);
          return CreateFrom(CreateStep::kFitSpec, std::move(held), std::move(done));
        }
        Call version{
            .what = "--version", .id = held->req.id, .argv = argv_.Version(), .reads_log = false};
        Run(std::move(version), [this, held = std::move(held), done = std::move(done)](
                                    Status s, CommandResult r) mutable {
          if (destroying_) return done(ContainerDeleted(held->req.id));
          spec_version_max_ = s.ok() ? argv_.flavour().spec_version_max(r.out) : std::string();
          CreateFrom(CreateStep::kFitSpec, std::move(held), std::move(done));
        });
      });
    }
    case CreateStep::kFitSpec: {
      if (!spec_version_max_->empty()) {
        const std::string config_json = held->req.bundle + "/config.json";
        Status fit = writes_.fit_spec(config_json, *spec_version_max_, argv_.flavour().name);
        if (!fit.ok()) return PostDone(std::move(done), fit.WithContext("create " + id));
      }
      return CreateFrom(CreateStep::kRuntimeCreate, std::move(held), std::move(done));
    }
    case CreateStep::kRuntimeCreate:
      // The runtime gets its own copies of `held`'s descriptors at spawn.
      return RuntimeCreate(held->req, std::move(done));
  }
}

void OciCliBackend::RuntimeCreate(const CreateRequest& req, Done done) {
  const bool restore = !req.checkpoint.empty();
  RuntimeConfig config = argv_.config();
  config.log_path = req.bundle.empty() ? std::string() : req.bundle + "/log.json";
  containers_.erase(req.id);
  Entry& entry = containers_.emplace(req.id, Entry(ArgvBuilder(argv_.flavour(), std::move(config))))
                     .first->second;
  entry.joined = argv_.flavour().joined_exit_from_wait && req.joins_sandbox;
  if (restore || argv_.flavour().stdio_at_start_too) {
    // Keep our own copies of the stdio descriptors for Start.
    auto pending = Hold(req);
    if (!pending) return PostDone(std::move(done), pending.error());
    entry.pending_start = std::move(*pending);
    // Restored at Start: nothing runs now.
    if (restore) return PostDone(std::move(done), Status());
  }
  Run(Call{.what = "create", .id = req.id, .argv = entry.argv.Create(req), .stdio = &req.stdio},
      [this, id = req.id, done = std::move(done)](Status s, CommandResult) {
        if (!s.ok()) {
          if (auto it = containers_.find(id); it != containers_.end()) {
            it->second.pending_start.reset();
          }
        }
        done(std::move(s));
      });
}

void OciCliBackend::Start(const std::string& id, Done done) {
  std::shared_ptr<PendingStart> pending;
  if (auto it = containers_.find(id); it != containers_.end()) {
    pending = std::exchange(it->second.pending_start, nullptr);
    if (pending && !pending->req.checkpoint.empty()) {
      return Restore(std::move(pending), std::move(done));
    }
  }
  // Spawn hands the runtime its own copies of `pending`'s descriptors; ours
  // close when the call is done.
  Run(Call{.what = "start",
           .id = id,
           .argv = ArgvFor(id).Start(id),
           .stdio = pending ? &pending->req.stdio : nullptr},
      [this, id, pending, done = std::move(done)](Status s, CommandResult) {
        auto it = containers_.find(id);
        if (s.ok() && it != containers_.end()) {
          it->second.started = true;
          if (auto on_exit = std::exchange(it->second.wait_after_start, nullptr)) {
            RunWait(id, std::move(on_exit));
          }
        }
        done(std::move(s));
      });
}

void OciCliBackend::Restore(std::shared_ptr<PendingStart> pending, Done done) {
  // Spawn hands the runtime its own copies of the stdio descriptors; ours
  // close when `pending` goes, at the end of this call.
  const CreateRequest& req = pending->req;
  Run(Call{.what = "restore",
           .id = req.id,
           .argv = ArgvFor(req.id).Restore(req),
           .stdio = &req.stdio},
      [done = std::move(done)](Status s, CommandResult) { done(std::move(s)); });
}

void OciCliBackend::Exec(const ExecRequest& req, Done done) {
  const bool internal_pid = !argv_.flavour().exec_internal_pid_flag.empty();
  Run(Call{.what = "exec", .id = req.id, .argv = ArgvFor(req.id).Exec(req), .stdio = &req.stdio},
      [this, internal_pid, id = req.id, exec_id = req.exec_id, pid_file = req.pid_file,
       done = std::move(done)](Status s, CommandResult) mutable {
        if (s.ok() && internal_pid) {
          // The exec's pid in the sandbox, which its signals go to
          // (SignalExec). Without one they go to the host-side proxy.
          const std::string path = InternalPidFile(pid_file);
          Result<std::string> text = ReadFile(path);
          writes_.remove_file(path);
          const long pid = text ? std::strtol(text->c_str(), nullptr, 10) : 0;
          if (auto it = containers_.find(id); pid > 0 && it != containers_.end()) {
            it->second.exec_internal_pids[exec_id] = static_cast<pid_t>(pid);
          }
        }
        done(std::move(s));
      });
}

void OciCliBackend::Kill(const std::string& id, int signal, bool all, Done done) {
  const Flavour& flavour = argv_.flavour();
  const bool wait_gone = all && signal == SIGKILL;
  Run(Call{.what = "kill", .id = id, .argv = ArgvFor(id).Kill(id, signal, all)},
      [this, &flavour, id, wait_gone, done = std::move(done)](Status s, CommandResult) mutable {
        if (!s.ok() && IsProcessGone(flavour, s.message())) {
          s = NotFoundError("process already finished (" + s.message() + ")");
        }
        if (!s.ok() || !wait_gone || destroying_) return done(std::move(s));
        WaitUntilEmpty(id, std::move(done));
      });
}

void OciCliBackend::WaitUntilEmpty(const std::string& id, Done done) {
  const EventLoop::Clock::time_point deadline = loop_.Now() + kKillAllWait;
  auto it = containers_.find(id);
  if (it == containers_.end() || !it->second.cgroup) {
    return PollUntilEmpty(id, deadline, std::move(done));
  }
  const uint64_t key = next_call_++;
  auto op =
      it->second.cgroup->WaitEmptyAsync(loop_, kKillAllWait, [this, key, id, deadline](Status s) {
        auto wait = kill_waits_.find(key);
        if (wait == kill_waits_.end()) return;
        Done next = std::move(wait->second.done);
        kill_waits_.erase(wait);  // drops the op: fine inside its own `done`
        // Emptied, or still not at the deadline: either way the kill is
        // done. A cgroup that could not be read asks the runtime instead.
        if (!s.ok() && s.code() != Code::kDeadlineExceeded) {
          return PollUntilEmpty(id, deadline, std::move(next));
        }
        next(Status());
      });
  if (!op) return PollUntilEmpty(id, deadline, std::move(done));
  KillWait& wait = kill_waits_[key];
  wait.cgroup_op = std::move(*op);
  wait.done = std::move(done);
}

void OciCliBackend::PollUntilEmpty(const std::string& id, EventLoop::Clock::time_point deadline,
                                   Done done) {
  Ps(id, [this, id, deadline, done = std::move(done)](Result<std::vector<pid_t>> pids) mutable {
    // Best effort: a runtime that cannot list them, or processes that take
    // longer to die, do not fail the kill that was sent.
    if (!pids || pids->empty() || destroying_ || loop_.Now() >= deadline) return done(Status());
    const uint64_t key = next_call_++;
    KillWait& wait = kill_waits_[key];
    wait.done = std::move(done);
    wait.timer = loop_.AddTimer(kKillAllPsPoll, [this, key, id, deadline] {
      auto it = kill_waits_.find(key);
      if (it == kill_waits_.end()) return;
      Done next = std::move(it->second.done);
      // Dropping a timer's handle in its own callback is safe (the loop
      // frees it after the callback returns).
      kill_waits_.erase(it);
      PollUntilEmpty(id, deadline, std::move(next));
    });
  });
}

void OciCliBackend::Delete(const std::string& id, bool force, Done done) {
  if (auto it = containers_.find(id); it != containers_.end()) {
    it->second.pending_start.reset();
    it->second.wait_after_start = nullptr;
  }
  if (argv_.flavour().sandbox_deletes_last) return DeleteSandboxLast(id, force, std::move(done));
  Run(Call{.what = "delete", .id = id, .argv = ArgvFor(id).Delete(id, force)},
      [done = std::move(done)](Status s, CommandResult) {
        // Already gone is what Delete wants.
        done(s.code() == Code::kNotFound ? Status() : std::move(s));
      });
}

void OciCliBackend::DeleteSandboxLast(const std::string& id, bool force, Done done) {
  // A sandbox that goes first would leave its containers' state behind, and
  // `runsc delete` of those would then fail to reach the sandbox.
  Run(Call{.what = "list", .id = id, .argv = argv_.List(), .reads_log = false},
      [this, id, force, done = std::move(done)](Status s, CommandResult r) mutable {
        std::vector<std::string> ids =
            s.ok() ? JoinedContainers(r.out, id) : std::vector<std::string>{};
        Argv last = ArgvFor(id).Delete(id, force || !ids.empty());
        DeleteEach(std::move(ids), [this, id, last = std::move(last),
                                    done = std::move(done)](Status joined) mutable {
          if (!joined.ok()) return done(joined.WithContext("delete sandbox " + id));
          Run(Call{.what = "delete", .id = id, .argv = std::move(last)},
              [this, root = ArgvFor(id).config().root, id, done = std::move(done)](Status s,
                                                                                   CommandResult) {
                if (s.ok() || s.code() == Code::kNotFound) {
                  writes_.remove_locks(root, id);
                  s = Status();
                }
                done(std::move(s));
              });
        });
      });
}

void OciCliBackend::DeleteEach(std::vector<std::string> ids, Done done) {
  if (ids.empty()) return done(Status());
  std::string id = std::move(ids.back());
  ids.pop_back();
  Run(Call{.what = "delete", .id = id, .argv = ArgvFor(id).Delete(id, /*force=*/true)},
      [this, ids = std::move(ids), done = std::move(done)](Status s, CommandResult) mutable {
        if (!s.ok() && s.code() != Code::kNotFound) return done(std::move(s));
        DeleteEach(std::move(ids), std::move(done));
      });
}

void OciCliBackend::Pause(const std::string& id, Done done) {
  Run(Call{.what = "pause", .id = id, .argv = ArgvFor(id).Pause(id)},
      [done = std::move(done)](Status s, CommandResult) { done(std::move(s)); });
}

void OciCliBackend::Resume(const std::string& id, Done done) {
  Run(Call{.what = "resume", .id = id, .argv = ArgvFor(id).Resume(id)},
      [done = std::move(done)](Status s, CommandResult) { done(std::move(s)); });
}

void OciCliBackend::Update(const std::string& id, const std::string& resources_json, Done done) {
  if (std::string_view why = argv_.flavour().no_update; !why.empty()) {
    // A container that joined another's sandbox (runsc) has no host cgroup
    // of its own, at create as at update: its processes live in the
    // sandbox, whose cgroup is the sandbox container's, below the pod's that
    // the kubelet resizes (docs/backends.md, "runsc"). Nothing to write;
    // refuse what runc would refuse, so a bad request is not reported done.
    if (auto it = containers_.find(id); it != containers_.end() && it->second.joined) {
      auto parsed = cgroups::ParseResources(std::string_view(resources_json));
      if (!parsed) return PostDone(std::move(done), parsed.error().WithContext("update " + id));
      return PostDone(std::move(done), Status());
    }
    return PostDone(std::move(done), UnimplementedError("update " + id + ": " + std::string(why)));
  }
  Run(
      Call{
          .what = "update", .id = id, .argv = ArgvFor(id).Update(id), .stdin_data = resources_json},
      [done = std::move(done)](Status s, CommandResult) { done(std::move(s)); });
}

void OciCliBackend::Ps(const std::string& id,
                       std::function<void(Result<std::vector<pid_t>>)> done) {
  Run(Call{.what = "ps", .id = id, .argv = ArgvFor(id).Ps(id)},
      [id, done = std::move(done)](Status s, CommandResult r) {
        if (!s.ok()) return done(std::move(s));
        auto pids = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
        // runc prints `null` for a container without processes.
        if (pids.is_null()) return done(std::vector<pid_t>{});
        std::vector<pid_t> out;
        bool valid = pids.is_array();
        for (const auto& p : pids) {
          if (!valid || !p.is_number_integer()) {
            valid = false;
            break;
          }
          out.push_back(p.get<pid_t>());
        }
        if (!valid) return done(InternalError("ps " + id + ": unexpected output: " + r.out));
        done(std::move(out));
      });
}

}  // namespace hull::runtime::oci_cli
