#include "tests/support/fake_backend.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "base/file_util.h"
#include "base/spawn.h"
#include "google/protobuf/any.pb.h"

namespace hull::shim::testing {
namespace {

// The made-up pid of an init whose pid the test did not choose: never
// signalled or waited for (the fake runs no init).
constexpr pid_t kDefaultInitPid = 424242;

// Forks a child that exits with the code it reads from its pipe (0 on EOF).
// Returns its pid and the pipe's write end.
std::pair<pid_t, UniqueFd> ForkExecChild() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {0, UniqueFd()};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);  // only the test holds the write end: EOF when it goes
    unsigned char code = 0;
    ssize_t n = ::read(fds[0], &code, 1);
    ::_exit(n == 1 ? code : 0);
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  return {pid, std::move(write_end)};
}

// Ends `pid` if it is still an unreaped child of ours (the shim's reaper may
// have collected it already: then it is left alone).
void EndChild(pid_t pid) {
  if (pid <= 0) return;
  if (::waitpid(pid, nullptr, WNOHANG) != 0) return;  // reaped now, or earlier
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

FakeBackend::FakeBackend(EventLoop& loop, Reaper& reaper, RuntimeOptions options)
    : loop_(loop), reaper_(reaper), options_(std::move(options)) {}

FakeBackend::~FakeBackend() {
  *alive_ = false;
  // The Backend contract: a call still running when the backend goes is
  // answered NotFound "container deleted".
  while (!pending_.empty()) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    p.answer(NotFoundError("container deleted"));
  }
  for (auto& [exec_id, child] : exec_children_) {
    child.control.reset();
    EndChild(child.pid);
  }
}

void FakeBackend::Take(FakeCall call, std::function<void(Status)> answer) {
  const std::string method = call.method;
  calls_.push_back(std::move(call));
  pending_.push_back(Pending{method, std::move(answer)});
  if (held_.contains(method)) return;
  // Not held: succeeds on a later loop turn (never inside the call).
  std::weak_ptr<bool> alive = alive_;
  loop_.Post([this, alive, method] {
    if (alive.expired()) return;
    Complete(method, Status::Ok());
  });
}

bool FakeBackend::Complete(const std::string& method, Status status) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->method != method) continue;
    Pending p = std::move(*it);
    pending_.erase(it);
    p.answer(std::move(status));
    return true;
  }
  return false;
}

size_t FakeBackend::pending(const std::string& method) const {
  size_t n = 0;
  for (const Pending& p : pending_) n += p.method == method ? 1 : 0;
  return n;
}

size_t FakeBackend::count(const std::string& method) const {
  size_t n = 0;
  for (const FakeCall& c : calls_) n += c.method == method ? 1 : 0;
  return n;
}

std::vector<FakeCall> FakeBackend::calls_of(const std::string& method) const {
  std::vector<FakeCall> out;
  for (const FakeCall& c : calls_) {
    if (c.method == method) out.push_back(c);
  }
  return out;
}

bool FakeBackend::FireInitExit(const std::string& id, int exit_status) {
  auto it = init_watchers_.find(id);
  if (it == init_watchers_.end()) return false;
  auto on_exit = std::move(it->second);
  init_watchers_.erase(it);
  on_exit(exit_status);
  return true;
}

pid_t FakeBackend::ExecPid(const std::string& exec_id) const {
  auto it = exec_children_.find(exec_id);
  return it == exec_children_.end() ? 0 : it->second.pid;
}

void FakeBackend::ExitExec(const std::string& exec_id, int code) {
  auto it = exec_children_.find(exec_id);
  if (it == exec_children_.end() || !it->second.control) return;
  unsigned char byte = static_cast<unsigned char>(code);
  (void)!::write(it->second.control.get(), &byte, 1);
  it->second.control.reset();
}

void FakeBackend::FireOom(const std::string& id) {
  auto it = oom_watchers_.find(id);
  if (it != oom_watchers_.end()) it->second();
}

// ---- Backend ----

void FakeBackend::PrepareSandbox(const SandboxRequest& req, Done done) {
  Take(FakeCall{.method = "PrepareSandbox", .id = req.id, .sandbox = req}, std::move(done));
}

void FakeBackend::TeardownSandbox(Done done) {
  Take(FakeCall{.method = "TeardownSandbox"}, std::move(done));
}

const SandboxRequest& FakeBackend::last_sandbox() const {
  for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
    if (it->sandbox) return *it->sandbox;
  }
  ADD_FAILURE() << "no PrepareSandbox call";
  static const SandboxRequest kNone;
  return kNone;
}

void FakeBackend::StartSandbox(std::function<void(int)> on_exit,
                               std::function<void(Result<pid_t>)> done) {
  sandbox_exit_ = std::move(on_exit);
  Take(FakeCall{.method = "StartSandbox"}, [done = std::move(done)](Status status) {
    if (!status.ok()) return done(std::move(status));
    done(pid_t{777});
  });
}

void FakeBackend::StopSandbox(Done done) {
  Take(FakeCall{.method = "StopSandbox"}, [this, done = std::move(done)](Status status) {
    if (auto on_exit = std::exchange(sandbox_exit_, nullptr); on_exit && status.ok()) {
      loop_.Post([on_exit] { on_exit(137); });
    }
    done(std::move(status));
  });
}

void FakeBackend::Release(const std::string& id) {
  calls_.push_back(FakeCall{.method = "Release", .id = id});
}

void FakeBackend::Create(const CreateRequest& req, Done done) {
  pid_t pid = init_pids_.contains(req.id) ? init_pids_[req.id] : kDefaultInitPid;
  std::string pid_file = req.pid_file;
  Take(FakeCall{.method = "Create", .id = req.id, .create = req},
       [pid, pid_file, done = std::move(done)](Status status) {
         // Like a runtime: the pid file exists once create succeeded.
         if (status.ok()) status = WriteFileAtomic(pid_file, std::to_string(pid));
         done(std::move(status));
       });
}

void FakeBackend::Start(const std::string& id, Done done) {
  Take(FakeCall{.method = "Start", .id = id}, std::move(done));
}

void FakeBackend::Exec(const ExecRequest& req, Done done) {
  // Like `runc exec --detach`: the process runs, and its pid is in the pid
  // file, before the call returns; it may even exit first.
  auto [pid, control] = ForkExecChild();
  Status written = WriteFileAtomic(req.pid_file, std::to_string(pid));
  exec_children_[req.exec_id] = ExecChild{pid, std::move(control)};
  std::string exec_id = req.exec_id;
  std::weak_ptr<bool> alive = alive_;
  Take(FakeCall{.method = "Exec", .id = req.id, .exec = req},
       [this, alive, exec_id, pid, written, done = std::move(done)](Status status) {
         if (status.ok()) status = written;
         if (!status.ok() && !alive.expired()) {
           // A failed exec leaves no process behind.
           exec_children_.erase(exec_id);
           EndChild(pid);
           reaper_.Discard(pid);
         }
         done(std::move(status));
       });
}

void FakeBackend::Kill(const std::string& id, int signal, bool all, Done done) {
  Take(FakeCall{.method = "Kill", .id = id, .signal = signal, .all = all}, std::move(done));
}

void FakeBackend::Delete(const std::string& id, bool force, Done done) {
  Take(FakeCall{.method = "Delete", .id = id, .force = force}, std::move(done));
}

void FakeBackend::Pause(const std::string& id, Done done) {
  Take(FakeCall{.method = "Pause", .id = id}, std::move(done));
}

void FakeBackend::Resume(const std::string& id, Done done) {
  Take(FakeCall{.method = "Resume", .id = id}, std::move(done));
}

void FakeBackend::Update(const std::string& id, const std::string& resources_json, Done done) {
  Take(FakeCall{.method = "Update", .id = id, .resources_json = resources_json}, std::move(done));
}

void FakeBackend::Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) {
  Take(FakeCall{.method = "Ps", .id = id}, [this, done = std::move(done)](Status status) {
    if (!status.ok()) return done(std::move(status));
    done(pids_);
  });
}

void FakeBackend::Checkpoint(const CheckpointRequest& req, Done done) {
  Take(FakeCall{.method = "Checkpoint", .id = req.id}, std::move(done));
}

void FakeBackend::Stats(const std::string& id, pid_t,
                        std::function<void(Result<google::protobuf::Any>)> done) {
  Take(FakeCall{.method = "Stats", .id = id}, [done = std::move(done)](Status status) {
    if (!status.ok()) return done(std::move(status));
    google::protobuf::Any stats;
    stats.set_type_url("io.containerd.cgroups.v2.Metrics");
    done(std::move(stats));
  });
}

Result<EventHandle> FakeBackend::WatchOom(const std::string& id, pid_t,
                                          std::function<void()> on_oom) {
  calls_.push_back(FakeCall{.method = "WatchOom", .id = id});
  oom_watchers_[id] = std::move(on_oom);
  // An active handle that never fires: notifications come from FireOom.
  return loop_.AddTimer(std::chrono::hours(24), [] {});
}

Result<uint64_t> FakeBackend::OomKillCount(const std::string& id) {
  auto it = oom_kills_.find(id);
  if (it == oom_kills_.end()) return UnimplementedError("fake: no OOM counter");
  return it->second;
}

void FakeBackend::WatchInitExit(const std::string& id, pid_t,
                                std::function<void(int exit_status)> on_exit) {
  calls_.push_back(FakeCall{.method = "WatchInitExit", .id = id});
  init_watchers_[id] = std::move(on_exit);
}

void FakeBackend::WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                                std::function<void(int exit_status)> on_exit) {
  calls_.push_back(FakeCall{.method = "WatchExecExit", .id = id, .exec_id = exec_id});
  reaper_.Watch(pid, [on_exit = std::move(on_exit)](int wait_status) {
    on_exit(ExitStatusFromWait(wait_status));
  });
}

void FakeBackend::ForgetExit(const std::string&, const std::string&, pid_t pid) {
  if (pid > 0) reaper_.Discard(pid);
}

void FakeBackend::SignalExec(const std::string& id, const std::string& exec_id, pid_t pid,
                             int signal, Done done) {
  calls_.push_back(FakeCall{.method = "SignalExec", .id = id, .exec_id = exec_id});
  Status status;
  if (::kill(pid, signal) != 0) {
    status = errno == ESRCH ? NotFoundError("process already finished")
                            : ErrnoError("kill", "exec " + exec_id);
  }
  loop_.Post([done = std::move(done), status] { done(status); });
}

void FakeBackend::ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t,
                                 uint32_t) {
  calls_.push_back(FakeCall{.method = "ResizeTerminal", .id = id, .exec_id = exec_id});
}

}  // namespace hull::shim::testing
