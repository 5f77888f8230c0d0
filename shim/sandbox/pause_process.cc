#include "shim/sandbox/pause_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/spawn.h"
#include "base/spawner_wire.h"
#include "base/unique_fd.h"

namespace hull::shim {
namespace {

// What the child does, worked out before the clone: after it only
// async-signal-safe calls run.
struct PausePlan {
  int clone_flags = 0;
  UniqueFd netns;  // join by path (CNI's), when the spec names one
  std::string hostname;
};

Result<PausePlan> PlanFor(const oci::Spec& spec) {
  PausePlan plan;
  for (const oci::Namespace& ns : spec.Namespaces()) {
    int flag = 0;
    if (ns.type == "network") flag = CLONE_NEWNET;
    if (ns.type == "ipc") flag = CLONE_NEWIPC;
    if (ns.type == "uts") flag = CLONE_NEWUTS;
    if (ns.type == "pid") flag = CLONE_NEWPID;
    if (ns.type == "user") {
      return UnimplementedError("pause process: a user namespace is not supported");
    }
    // mount and cgroup: no container joins the pause's (a copy of the host's
    // mounts would only pin them); it stays in the server's.
    if (flag == 0) continue;
    if (ns.path.empty()) {
      plan.clone_flags |= flag;
    } else if (flag == CLONE_NEWNET) {
      plan.netns = UniqueFd(::open(ns.path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!plan.netns) return ErrnoError("open", ns.path);
    } else {
      return UnimplementedError("pause process: cannot join the " + ns.type + " namespace " +
                                ns.path);
    }
  }
  if (plan.clone_flags & CLONE_NEWUTS) plan.hostname = spec.Hostname();
  return plan;
}

void EndPause(int) {
  _exit(0);
}

[[noreturn]] void RunPause(const PausePlan& plan) {
  // Die with the server: nothing of the pod outlives it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (plan.netns && ::setns(plan.netns.get(), CLONE_NEWNET) != 0) _exit(120);
  if (!plan.hostname.empty() && ::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) {
    _exit(121);
  }
  ::close_range(3, ~0U, 0);
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &act, nullptr);
  act.sa_handler = EndPause;
  ::sigaction(SIGTERM, &act, nullptr);
  ::sigaction(SIGINT, &act, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Named once SIGTERM ends it cleanly: whoever waits for the name (a test,
  // an operator's ps) never sends one that kills it instead (exit 143).
  ::prctl(PR_SET_NAME, "hull-pause");
  for (;;) ::pause();
}

Result<pid_t> ClonePause(const PausePlan& plan) {
  // Like fork(), with the new namespaces: the caller is single-threaded.
  long pid = ::syscall(SYS_clone, plan.clone_flags | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) return ErrnoError("clone", "pause process");
  if (pid == 0) RunPause(plan);
  return static_cast<pid_t>(pid);
}

// A confined server's plan goes to the spawner as {clone flags, hostname}
// and the network namespace, if any, as a descriptor.
std::string EncodePlan(const PausePlan& plan) {
  spawner_wire::Writer w;
  w.I32(plan.clone_flags);
  w.Str(plan.hostname);
  return w.Take();
}

Result<pid_t> StartInSpawner(std::string_view payload, std::vector<UniqueFd>& fds) {
  spawner_wire::Reader r(payload);
  PausePlan plan;
  constexpr int kAllowed = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID;
  if (!r.I32(plan.clone_flags) || !r.Str(plan.hostname) || !r.done() || fds.size() > 1 ||
      (plan.clone_flags & ~kAllowed) != 0) {
    return InvalidArgumentError("pause process: malformed spawner request");
  }
  if (!fds.empty()) plan.netns = std::move(fds[0]);
  return ClonePause(plan);
}

class HostPauseRunner : public PauseRunner {
 public:
  explicit HostPauseRunner(Reaper& reaper) : reaper_(reaper) {}

  Result<pid_t> Start(const oci::Spec& spec, std::function<void(int)> on_exit) override {
    HULL_ASSIGN_OR_RETURN(PausePlan plan, PlanFor(spec));
    Result<pid_t> pid;
    if (SpawnerClient* spawner = reaper_.spawner()) {
      std::vector<int> fds;
      if (plan.netns) fds.push_back(plan.netns.get());
      pid = spawner->Run(kPauseSpawnerEntry, EncodePlan(plan), fds);
    } else {
      pid = ClonePause(plan);
    }
    if (!pid) return pid.error();
    reaper_.Watch(*pid, [on_exit = std::move(on_exit)](int wait_status) {
      on_exit(ExitStatusFromWait(wait_status));
    });
    return *pid;
  }

  void Kill(pid_t pid) override {
    if (pid > 0) ::kill(pid, SIGKILL);
  }

 private:
  Reaper& reaper_;
};

}  // namespace

SpawnerEntry PauseSpawnerEntry() {
  return SpawnerEntry{.name = "pause", .run = StartInSpawner};
}

std::unique_ptr<PauseRunner> MakeHostPauseRunner(Reaper& reaper) {
  return std::make_unique<HostPauseRunner>(reaper);
}

}  // namespace hull::shim
