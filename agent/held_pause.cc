#include "agent/held_pause.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "agent/guest_init.h"
#include "agent/guest_spec.h"
#include "base/file_util.h"
#include "base/spawn.h"
#include "base/unique_fd.h"
#include "oci/annotations.h"
#include "runtime/oci_cli/cgroup_bridge.h"

namespace hull::agent {
namespace {

// The sysctls a pause sets in its own namespaces: the IPC namespace's and
// the UTS namespace's. 0: neither.
int SysctlNamespace(const std::string& key) {
  for (const char* prefix : {"kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue."}) {
    if (key.starts_with(prefix)) return CLONE_NEWIPC;
  }
  if (key == "kernel.hostname" || key == "kernel.domainname") return CLONE_NEWUTS;
  return 0;
}

// Capability names as OCI specs write them.
int CapabilityNumber(const std::string& name) {
  static const std::pair<const char*, int> kCapabilities[] = {
      {"CAP_CHOWN", CAP_CHOWN},
      {"CAP_DAC_OVERRIDE", CAP_DAC_OVERRIDE},
      {"CAP_DAC_READ_SEARCH", CAP_DAC_READ_SEARCH},
      {"CAP_FOWNER", CAP_FOWNER},
      {"CAP_FSETID", CAP_FSETID},
      {"CAP_KILL", CAP_KILL},
      {"CAP_SETGID", CAP_SETGID},
      {"CAP_SETUID", CAP_SETUID},
      {"CAP_SETPCAP", CAP_SETPCAP},
      {"CAP_LINUX_IMMUTABLE", CAP_LINUX_IMMUTABLE},
      {"CAP_NET_BIND_SERVICE", CAP_NET_BIND_SERVICE},
      {"CAP_NET_BROADCAST", CAP_NET_BROADCAST},
      {"CAP_NET_ADMIN", CAP_NET_ADMIN},
      {"CAP_NET_RAW", CAP_NET_RAW},
      {"CAP_IPC_LOCK", CAP_IPC_LOCK},
      {"CAP_IPC_OWNER", CAP_IPC_OWNER},
      {"CAP_SYS_MODULE", CAP_SYS_MODULE},
      {"CAP_SYS_RAWIO", CAP_SYS_RAWIO},
      {"CAP_SYS_CHROOT", CAP_SYS_CHROOT},
      {"CAP_SYS_PTRACE", CAP_SYS_PTRACE},
      {"CAP_SYS_PACCT", CAP_SYS_PACCT},
      {"CAP_SYS_ADMIN", CAP_SYS_ADMIN},
      {"CAP_SYS_BOOT", CAP_SYS_BOOT},
      {"CAP_SYS_NICE", CAP_SYS_NICE},
      {"CAP_SYS_RESOURCE", CAP_SYS_RESOURCE},
      {"CAP_SYS_TIME", CAP_SYS_TIME},
      {"CAP_SYS_TTY_CONFIG", CAP_SYS_TTY_CONFIG},
      {"CAP_MKNOD", CAP_MKNOD},
      {"CAP_LEASE", CAP_LEASE},
      {"CAP_AUDIT_WRITE", CAP_AUDIT_WRITE},
      {"CAP_AUDIT_CONTROL", CAP_AUDIT_CONTROL},
      {"CAP_SETFCAP", CAP_SETFCAP},
      {"CAP_MAC_OVERRIDE", CAP_MAC_OVERRIDE},
      {"CAP_MAC_ADMIN", CAP_MAC_ADMIN},
      {"CAP_SYSLOG", CAP_SYSLOG},
      {"CAP_WAKE_ALARM", CAP_WAKE_ALARM},
      {"CAP_BLOCK_SUSPEND", CAP_BLOCK_SUSPEND},
      {"CAP_AUDIT_READ", CAP_AUDIT_READ},
      {"CAP_PERFMON", CAP_PERFMON},
      {"CAP_BPF", CAP_BPF},
      {"CAP_CHECKPOINT_RESTORE", CAP_CHECKPOINT_RESTORE},
  };
  for (const auto& [known, number] : kCapabilities) {
    if (name == known) return number;
  }
  return -1;
}

// Where the child failed, for the create's error.
enum Stage : char {
  kStageHostname = 1,
  kStageSysctl,
  kStageOomScore,
  kStageStdio,
  kStageCapabilities,
  kStageRoot,
  kStageUser,
  kStageNoNewPrivs,
  kStageExec,
};

const char* StageName(char stage) {
  switch (stage) {
    case kStageHostname: return "set its hostname";
    case kStageSysctl: return "set a sysctl";
    case kStageOomScore: return "set its oom_score_adj";
    case kStageStdio: return "take its stdio";
    case kStageCapabilities: return "drop capabilities";
    case kStageRoot: return "enter its root filesystem";
    case kStageUser: return "become its user";
    case kStageNoNewPrivs: return "set NoNewPrivs";
    case kStageExec: return "exec its process";
  }
  return "start";
}

// The child's plan as C strings and descriptors, made before the clone:
// after it only async-signal-safe calls run.
struct ChildPlan {
  const PausePlan* plan = nullptr;
  std::vector<const char*> argv;
  std::vector<const char*> envp;
  std::string oom_score;
  int stdio[3] = {-1, -1, -1};
  int last_cap = -1;
  int report = -1;
};

[[noreturn]] void Fail(int report, Stage stage) {
  const int err = errno;
  char message[1 + sizeof err];
  message[0] = stage;
  std::memcpy(message + 1, &err, sizeof err);
  [[maybe_unused]] ssize_t n = ::write(report, message, sizeof message);
  _exit(127);
}

bool WriteAll(const char* path, const std::string& value) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

[[noreturn]] void RunPause(const ChildPlan& child) {
  const PausePlan& plan = *child.plan;
  // Die with the agent: nothing of the pod outlives it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!plan.hostname.empty() && ::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) {
    Fail(child.report, kStageHostname);
  }
  for (const auto& [path, value] : plan.sysctls) {
    if (!WriteAll(path.c_str(), value)) Fail(child.report, kStageSysctl);
  }
  if (!child.oom_score.empty() && !WriteAll("/proc/self/oom_score_adj", child.oom_score)) {
    Fail(child.report, kStageOomScore);
  }
  for (int fd = 0; fd < 3; ++fd) {
    if (::dup2(child.stdio[fd], fd) < 0) Fail(child.report, kStageStdio);
  }
  // The bounding set, while it is still root: after the exec a root pause
  // has exactly it (and one of another user none), as under runc and crun.
  for (int cap = 0; cap <= child.last_cap; ++cap) {
    if ((plan.bounding >> cap & 1) == 0 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      Fail(child.report, kStageCapabilities);
    }
  }
  if (::chroot(plan.root.c_str()) != 0 || ::chdir(plan.cwd.c_str()) != 0) {
    Fail(child.report, kStageRoot);
  }
  if (::setgroups(plan.groups.size(), plan.groups.data()) != 0 || ::setgid(plan.gid) != 0 ||
      ::setuid(plan.uid) != 0) {
    Fail(child.report, kStageUser);
  }
  if (plan.no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    Fail(child.report, kStageNoNewPrivs);
  }
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &act, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Every descriptor but stdio and the report pipe is close-on-exec or
  // closed here; the pipe closes with the exec, which tells the agent.
  ::close_range(3, static_cast<unsigned>(child.report) - 1, 0);
  ::close_range(static_cast<unsigned>(child.report) + 1, ~0U, 0);
  ::execve(plan.argv[0].c_str(), const_cast<char* const*>(child.argv.data()),
           const_cast<char* const*>(child.envp.data()));
  Fail(child.report, kStageExec);
}

}  // namespace

std::optional<PausePlan> PlanPause(const oci::Spec& spec, std::string* why) {
  auto no = [&](std::string reason) {
    *why = std::move(reason);
    return std::nullopt;
  };
  PausePlan plan;
  if (spec.Terminal()) return no("it asks for a terminal");
  for (const oci::Namespace& ns : spec.Namespaces()) {
    if (!ns.path.empty()) return no("it joins the " + ns.type + " namespace " + ns.path);
    if (ns.type == "ipc") {
      plan.clone_flags |= CLONE_NEWIPC;
    } else if (ns.type == "uts") {
      plan.clone_flags |= CLONE_NEWUTS;
    } else if (ns.type == "pid") {
      plan.clone_flags |= CLONE_NEWPID;
    } else if (ns.type != "mount" && ns.type != "cgroup" && ns.type != "network") {
      // mount: the pause needs no mounts of its own (chroot); cgroup: no
      // container joins its cgroup namespace; network: the guest's is the
      // pod's (GuestSpec keeps none).
      return no("it asks for a " + ns.type + " namespace");
    }
  }
  if (plan.clone_flags & CLONE_NEWUTS) plan.hostname = spec.Hostname();
  for (const auto& [key, value] : spec.Sysctls()) {
    const int ns = SysctlNamespace(key);
    if (ns == 0 || (plan.clone_flags & ns) == 0) {
      return no("sysctl " + key + " is not of a namespace of its own");
    }
    std::string path = "/proc/sys/" + key;
    for (size_t i = std::string("/proc/sys/").size(); i < path.size(); ++i) {
      if (path[i] == '.') path[i] = '/';
    }
    plan.sysctls.emplace_back(std::move(path), value);
  }
  plan.oom_score_adj = spec.OomScoreAdj();
  const oci::SpecJson& doc = spec.json();
  auto root = doc.find("root");
  if (root == doc.end() || !root->is_object() || !root->contains("path") ||
      !(*root)["path"].is_string() || !(*root)["path"].get<std::string>().starts_with("/")) {
    return no("its root.path is not absolute");
  }
  plan.root = (*root)["path"].get<std::string>();
  if (!spec.Cwd().empty()) plan.cwd = spec.Cwd();
  plan.argv = spec.Args();
  if (plan.argv.empty() || !plan.argv[0].starts_with("/")) {
    return no("its command is not an absolute path");
  }
  plan.env = spec.Env();
  auto process = doc.find("process");
  if (process != doc.end() && process->is_object()) {
    plan.no_new_privs = process->value("noNewPrivileges", false);
    auto caps = process->find("capabilities");
    if (caps != process->end() && caps->is_object()) {
      if (auto ambient = caps->find("ambient");
          ambient != caps->end() && ambient->is_array() && !ambient->empty()) {
        return no("it asks for ambient capabilities");
      }
      if (auto bounding = caps->find("bounding"); bounding != caps->end() && bounding->is_array()) {
        for (const auto& name : *bounding) {
          const int cap = name.is_string() ? CapabilityNumber(name.get<std::string>()) : -1;
          if (cap < 0) return no("it names an unknown capability " + name.dump());
          plan.bounding |= uint64_t{1} << cap;
        }
      }
    }
    auto user = process->find("user");
    if (user != process->end() && user->is_object()) {
      plan.uid = user->value("uid", 0u);
      plan.gid = user->value("gid", 0u);
      if (auto gids = user->find("additionalGids"); gids != user->end() && gids->is_array()) {
        for (const auto& g : *gids) {
          if (g.is_number_unsigned()) plan.groups.push_back(g.get<gid_t>());
        }
      }
    }
  }
  return plan;
}

HeldPauseBackend::HeldPauseBackend(EventLoop& loop, Reaper& reaper,
                                   std::unique_ptr<runtime::Backend> inner, std::string cgroup_root,
                                   std::function<void(const std::string&)> log)
    : loop_(loop),
      reaper_(reaper),
      inner_(std::move(inner)),
      cgroup_root_(std::move(cgroup_root)),
      log_(std::move(log)) {}

HeldPauseBackend::~HeldPauseBackend() {
  if (held_ && !held_->exit_status) {
    ::kill(held_->pid, SIGKILL);
    reaper_.Discard(held_->pid);
  }
  const Status gone = NotFoundError("container deleted");
  if (held_) {
    for (runtime::Done& done : std::exchange(held_->deleted, {})) done(gone);
  }
}

void HeldPauseBackend::Post(runtime::Done done, Status status) {
  loop_.Post([done = std::move(done), status = std::move(status)]() mutable { done(status); });
}

Result<pid_t> HeldPauseBackend::ClonePause(const PausePlan& plan,
                                           const runtime::ProcessStdio& stdio) {
  ChildPlan child{.plan = &plan};
  for (const std::string& arg : plan.argv) child.argv.push_back(arg.c_str());
  child.argv.push_back(nullptr);
  for (const std::string& var : plan.env) child.envp.push_back(var.c_str());
  child.envp.push_back(nullptr);
  if (plan.oom_score_adj) child.oom_score = std::to_string(*plan.oom_score_adj);
  HULL_ASSIGN_OR_RETURN(std::string last_cap, ReadFile("/proc/sys/kernel/cap_last_cap"));
  child.last_cap = std::atoi(last_cap.c_str());
  if (child.last_cap <= 0 || child.last_cap > 63) {
    return InternalError("cannot read /proc/sys/kernel/cap_last_cap: " + last_cap);
  }
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return ErrnoError("open", "/dev/null");
  const int given[3] = {stdio.stdin_fd, stdio.stdout_fd, stdio.stderr_fd};
  for (int fd = 0; fd < 3; ++fd) child.stdio[fd] = given[fd] >= 0 ? given[fd] : null.get();
  HULL_ASSIGN_OR_RETURN(Pipe report, MakePipe());
  child.report = report.write.get();
  // Like fork(), with the new namespaces; the child makes only system calls
  // until its exec.
  const long pid = ::syscall(SYS_clone, plan.clone_flags | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) return ErrnoError("clone", "the pause process");
  if (pid == 0) RunPause(child);
  report.write.reset();
  char message[1 + sizeof(int)];
  ssize_t n;
  do {
    n = ::read(report.read.get(), message, sizeof message);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return static_cast<pid_t>(pid);  // exec'd: the pipe closed
  // It failed and exits 127: nothing waits for that exit, so the reaper
  // drops it (reaped now or when it comes).
  reaper_.Discard(static_cast<pid_t>(pid));
  int err = 0;
  if (n == static_cast<ssize_t>(sizeof message)) std::memcpy(&err, message + 1, sizeof err);
  return ErrnoError(err, std::string("the pause process could not ") + StageName(message[0]),
                    plan.argv[0]);
}

Status HeldPauseBackend::PlaceInCgroup(const std::string& id, pid_t pid, std::string* dir) {
  if (cgroup_root_.empty()) return Status::Ok();
  // Below the pod's cgroup, as crun makes it: the parent first, with the
  // root's controllers enabled for its children.
  HULL_RETURN_IF_ERROR(MakePodCgroupIn(cgroup_root_));
  *dir = cgroup_root_ + GuestCgroupPath(id);
  if (::mkdir(dir->c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir", *dir);
  Status placed = WriteKernelFile(*dir + "/cgroup.procs", std::to_string(pid));
  if (!placed.ok()) ::rmdir(dir->c_str());
  return placed;
}

void HeldPauseBackend::Create(const runtime::CreateRequest& req, runtime::Done done) {
  if (held_ || !req.checkpoint.empty() || !req.stdio.console_socket.empty()) {
    return inner_->Create(req, std::move(done));
  }
  Result<oci::Spec> spec = oci::Spec::Load(req.bundle + "/config.json");
  std::optional<std::string> type = spec ? spec->Annotation(oci::kContainerType) : std::nullopt;
  if (!type || *type != oci::kContainerTypeSandbox) return inner_->Create(req, std::move(done));
  std::string why;
  std::optional<PausePlan> plan = PlanPause(*spec, &why);
  if (!plan) {
    if (log_) log_("pause container " + req.id + " runs with crun: " + why);
    return inner_->Create(req, std::move(done));
  }
  const std::string context = "create " + req.id;
  Result<pid_t> pid = ClonePause(*plan, req.stdio);
  if (!pid) return Post(std::move(done), pid.error().WithContext(context));
  held_ = Held{.id = req.id, .pid = *pid};
  reaper_.Watch(*pid, [this, alive = std::weak_ptr<bool>(alive_), pid = *pid](int wait_status) {
    if (!alive.expired()) OnExit(pid, ExitStatusFromWait(wait_status));
  });
  Status placed = PlaceInCgroup(req.id, *pid, &held_->cgroup);
  if (placed.ok()) placed = WriteFileAtomic(req.pid_file, std::to_string(*pid));
  if (!placed.ok()) {
    KillAndRemoveCgroupAtExit(*held_);
    held_.reset();
    return Post(std::move(done), placed.WithContext(context));
  }
  if (log_) log_("pause container " + req.id + " held by the agent, pid " + std::to_string(*pid));
  Post(std::move(done), Status::Ok());
}

void HeldPauseBackend::OnExit(pid_t pid, int exit_status) {
  if (!held_ || held_->pid != pid) return;
  held_->exit_status = exit_status;
  if (!held_->deleted.empty()) {
    RemoveCgroup(*held_);
    std::vector<runtime::Done> deleted = std::exchange(held_->deleted, {});
    held_.reset();
    for (runtime::Done& done : deleted) done(Status::Ok());
    return;
  }
  if (held_->on_exit) std::exchange(held_->on_exit, {})(exit_status);
}

void HeldPauseBackend::RemoveCgroup(const Held& held) {
  if (!held.cgroup.empty()) ::rmdir(held.cgroup.c_str());
}

void HeldPauseBackend::KillAndRemoveCgroupAtExit(const Held& held) {
  ::kill(held.pid, SIGKILL);
  // A cgroup is removable once its last process has exited, which a
  // SIGKILL does not wait for: rmdir(2) right after it can fail with EBUSY.
  reaper_.Watch(held.pid, [cgroup = held.cgroup](int) {
    if (!cgroup.empty()) ::rmdir(cgroup.c_str());
  });
}

void HeldPauseBackend::Start(const std::string& id, runtime::Done done) {
  if (!IsHeld(id)) return inner_->Start(id, std::move(done));
  // Already running since its create: a pause has nothing to wait for.
  if (held_->exit_status) {
    return Post(std::move(done), FailedPreconditionError("start " + id + ": it has exited"));
  }
  Post(std::move(done), Status::Ok());
}

void HeldPauseBackend::Exec(const runtime::ExecRequest& req, runtime::Done done) {
  if (!IsHeld(req.id)) return inner_->Exec(req, std::move(done));
  Post(std::move(done),
       FailedPreconditionError("exec in " + req.id + ": the pod's pause process takes no exec"));
}

void HeldPauseBackend::Kill(const std::string& id, int signal, bool all, runtime::Done done) {
  if (!IsHeld(id)) return inner_->Kill(id, signal, all, std::move(done));
  if (held_->exit_status || ::kill(held_->pid, signal) != 0) {
    return Post(std::move(done), NotFoundError("process already finished"));
  }
  Post(std::move(done), Status::Ok());
}

void HeldPauseBackend::Delete(const std::string& id, bool force, runtime::Done done) {
  if (!IsHeld(id)) return inner_->Delete(id, force, std::move(done));
  if (held_->exit_status) {
    RemoveCgroup(*held_);
    held_.reset();
    return Post(std::move(done), Status::Ok());
  }
  if (!force) {
    return Post(std::move(done), FailedPreconditionError("delete " + id + ": it is running"));
  }
  // Done once it has exited (and left its cgroup).
  held_->deleted.push_back(std::move(done));
  ::kill(held_->pid, SIGKILL);
}

void HeldPauseBackend::Release(const std::string& id) {
  if (!IsHeld(id)) return inner_->Release(id);
  if (held_->exit_status) {
    RemoveCgroup(*held_);
  } else {
    KillAndRemoveCgroupAtExit(*held_);
  }
  held_.reset();
}

void HeldPauseBackend::Pause(const std::string& id, runtime::Done done) {
  if (!IsHeld(id)) return inner_->Pause(id, std::move(done));
  if (held_->cgroup.empty()) {
    return Post(std::move(done), UnimplementedError("pause " + id + ": it has no cgroup"));
  }
  Post(std::move(done), WriteKernelFile(held_->cgroup + "/cgroup.freeze", "1"));
}

void HeldPauseBackend::Resume(const std::string& id, runtime::Done done) {
  if (!IsHeld(id)) return inner_->Resume(id, std::move(done));
  if (held_->cgroup.empty()) {
    return Post(std::move(done), UnimplementedError("resume " + id + ": it has no cgroup"));
  }
  Post(std::move(done), WriteKernelFile(held_->cgroup + "/cgroup.freeze", "0"));
}

void HeldPauseBackend::Update(const std::string& id, const std::string& resources_json,
                              runtime::Done done) {
  if (!IsHeld(id)) return inner_->Update(id, resources_json, std::move(done));
  Post(std::move(done),
       UnimplementedError("update " + id + ": the pod's pause process has no resources to change"));
}

void HeldPauseBackend::Ps(const std::string& id,
                          std::function<void(Result<std::vector<pid_t>>)> done) {
  if (!IsHeld(id)) return inner_->Ps(id, std::move(done));
  std::vector<pid_t> pids;
  if (!held_->exit_status) pids.push_back(held_->pid);
  loop_.Post([done = std::move(done), pids = std::move(pids)]() mutable { done(std::move(pids)); });
}

void HeldPauseBackend::Checkpoint(const runtime::CheckpointRequest& req, runtime::Done done) {
  if (!IsHeld(req.id)) return inner_->Checkpoint(req, std::move(done));
  Post(std::move(done), FailedPreconditionError("checkpoint " + req.id +
                                                ": the pod's pause process is the agent's"));
}

void HeldPauseBackend::Stats(const std::string& id, pid_t init_pid,
                             std::function<void(Result<google::protobuf::Any>)> done) {
  if (!IsHeld(id)) return inner_->Stats(id, init_pid, std::move(done));
  loop_.Post([id, init_pid, done = std::move(done)] {
    auto metrics = runtime::oci_cli::ContainerMetrics(init_pid);
    if (!metrics) return done(metrics.error().WithContext("stats " + id));
    done(std::move(metrics));
  });
}

Result<EventHandle> HeldPauseBackend::WatchOom(const std::string& id, pid_t init_pid,
                                               std::function<void()> on_oom) {
  if (!IsHeld(id)) return inner_->WatchOom(id, init_pid, std::move(on_oom));
  auto handle = runtime::oci_cli::WatchContainerOom(loop_, init_pid, std::move(on_oom));
  if (!handle) return handle.error().WithContext("watch OOM of " + id);
  if (auto counter = runtime::oci_cli::ContainerOomCounter(init_pid)) {
    held_->oom_counter = std::move(*counter);
  }
  return handle;
}

Result<uint64_t> HeldPauseBackend::OomKillCount(const std::string& id) {
  if (!IsHeld(id)) return inner_->OomKillCount(id);
  if (!held_->oom_counter) return UnimplementedError("no OOM counter for " + id);
  return held_->oom_counter();
}

void HeldPauseBackend::WatchInitExit(const std::string& id, pid_t pid,
                                     std::function<void(int exit_status)> on_exit) {
  if (!IsHeld(id)) return inner_->WatchInitExit(id, pid, std::move(on_exit));
  if (held_->exit_status) {
    const int status = *held_->exit_status;
    return loop_.Post([on_exit = std::move(on_exit), status] { on_exit(status); });
  }
  held_->on_exit = std::move(on_exit);
}

void HeldPauseBackend::WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                                     std::function<void(int exit_status)> on_exit) {
  inner_->WatchExecExit(id, exec_id, pid, std::move(on_exit));
}

void HeldPauseBackend::ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) {
  if (IsHeld(id) && exec_id.empty()) {
    held_->on_exit = {};
    return;
  }
  inner_->ForgetExit(id, exec_id, pid);
}

void HeldPauseBackend::SignalExec(const std::string& id, const std::string& exec_id, pid_t pid,
                                  int signal, runtime::Done done) {
  inner_->SignalExec(id, exec_id, pid, signal, std::move(done));
}

void HeldPauseBackend::ResizeTerminal(const std::string& id, const std::string& exec_id,
                                      uint32_t width, uint32_t height) {
  inner_->ResizeTerminal(id, exec_id, width, height);
}

void HeldPauseBackend::PrepareSandbox(const runtime::SandboxRequest& req, runtime::Done done) {
  inner_->PrepareSandbox(req, std::move(done));
}

void HeldPauseBackend::TeardownSandbox(runtime::Done done) {
  inner_->TeardownSandbox(std::move(done));
}

bool HeldPauseBackend::RunsSandboxProcess() const {
  return inner_->RunsSandboxProcess();
}

void HeldPauseBackend::StartSandbox(std::function<void(int exit_status)> on_exit,
                                    std::function<void(Result<pid_t>)> done) {
  inner_->StartSandbox(std::move(on_exit), std::move(done));
}

void HeldPauseBackend::StopSandbox(runtime::Done done) {
  inner_->StopSandbox(std::move(done));
}

std::string HeldPauseBackend::name() const {
  return inner_->name();
}

}  // namespace hull::agent
