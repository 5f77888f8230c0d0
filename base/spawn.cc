#include "base/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/unique_fd.h"

namespace hull {
namespace {

// Reports errno from the child to the parent over the exec-status pipe, then
// dies. Async-signal-safe.
[[noreturn]] void ChildFail(int report_fd, int stage) {
  int payload[2] = {stage, errno};
  ssize_t ignored = ::write(report_fd, payload, sizeof payload);
  (void)ignored;
  _exit(127);
}

// Closes every descriptor not in `keep` (sorted). Async-signal-safe.
void CloseAllBut(const int* keep, size_t count) {
  unsigned int next = 0;
  for (size_t i = 0; i < count; ++i) {
    unsigned int k = static_cast<unsigned int>(keep[i]);
    if (k > next) ::close_range(next, k - 1, 0);
    next = k + 1;
  }
  ::close_range(next, ~0U, 0);
}

enum Stage { kStageDup = 1, kStageChdir, kStageSession, kStageJail, kStageExec };

// The highest capability number this kernel knows, or -1.
int LastCapability() {
  int last = -1;
  UniqueFd fd(::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC));
  char text[8] = {};
  if (fd && ::read(fd.get(), text, sizeof text - 1) > 0) last = std::atoi(text);
  return last;
}

// SpawnJail::root as the child makes it: every path joined to the root
// before the fork, so that the child only makes system calls.
struct RootPlan {
  std::string root;
  struct Bind {
    std::string source;
    std::string target;  // root + source
    bool directory = false;
    bool writable = false;
  };
  std::vector<Bind> binds;
  std::vector<std::pair<std::string, std::string>> links;  // root + path, target
  std::string proc;                                        // root + "/proc"
};

RootPlan PlanRoot(const SpawnJail& jail) {
  RootPlan plan{.root = jail.root, .proc = jail.root + "/proc"};
  for (const SpawnJail::Bind& bind : jail.binds) {
    struct stat st;
    const bool directory = ::stat(bind.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    plan.binds.push_back({.source = bind.path,
                          .target = jail.root + bind.path,
                          .directory = directory,
                          .writable = bind.writable});
  }
  for (const auto& [path, target] : jail.links) plan.links.emplace_back(jail.root + path, target);
  return plan;
}

// mkdir -p of the directories above `path` (a copy of the child's own, so
// it may be cut and mended in place). Async-signal-safe.
bool MakeParents(std::string& path) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    path[i] = '\0';
    const int rc = ::mkdir(path.c_str(), 0755);
    path[i] = '/';
    if (rc != 0 && errno != EEXIST) return false;
  }
  return true;
}

// SpawnJail::root, in the child (already in its own mount namespace).
bool EnterRoot(RootPlan& plan) {
  if (::mount("hull-jail", plan.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") !=
      0) {
    return false;
  }
  for (RootPlan::Bind& bind : plan.binds) {
    if (!MakeParents(bind.target)) return false;
    if (bind.directory) {
      if (::mkdir(bind.target.c_str(), 0755) != 0 && errno != EEXIST) return false;
    } else {
      const int fd = ::open(bind.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      ::close(fd);
    }
    if (::mount(bind.source.c_str(), bind.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) !=
        0) {
      return false;
    }
    if (!bind.writable &&
        ::mount(nullptr, bind.target.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
      return false;
    }
  }
  for (auto& [path, target] : plan.links) {
    if (!MakeParents(path) || ::symlink(target.c_str(), path.c_str()) != 0) return false;
  }
  if (::mkdir(plan.proc.c_str(), 0555) != 0 ||
      ::mount("proc", plan.proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "hidepid=invisible") != 0) {
    return false;
  }
  if (::mount(nullptr, plan.root.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
              "size=1m,mode=0755") != 0) {
    return false;
  }
  if (::chdir(plan.root.c_str()) != 0) return false;
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return false;
  if (::umount2(".", MNT_DETACH) != 0) return false;
  return ::chdir("/") == 0;
}

// SpawnJail, in the child. Async-signal-safe: `hide` are C strings and
// `root` paths made before the fork.
bool EnterJail(const std::vector<const char*>& hide, RootPlan* root, const SpawnJail& jail,
               int last_cap) {
  const uint64_t keep = jail.capabilities;
  if (::unshare(CLONE_NEWNS) != 0) return false;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return false;
  if (root != nullptr && !EnterRoot(*root)) return false;
  for (const char* dir : hide) {
    if (::mount("hull-jail", dir, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=4k,mode=0755") != 0) {
      return false;
    }
  }
  for (int cap = 0; cap <= last_cap; ++cap) {
    if ((keep >> cap & 1) == 0 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return false;
  }
  if (jail.uid != 0) {
    // Leaving uid 0 (without PR_SET_KEEPCAPS) clears the permitted,
    // effective and ambient sets.
    if (::setgroups(jail.groups.size(), jail.groups.data()) != 0) return false;
    if (::setresgid(jail.gid, jail.gid, jail.gid) != 0) return false;
    if (::setresuid(jail.uid, jail.uid, jail.uid) != 0) return false;
  }
  __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  __user_cap_data_struct data[2] = {};
  for (int i = 0; i < 2; ++i) {
    const auto word = static_cast<uint32_t>(keep >> (32 * i));
    data[i] = {.effective = word, .permitted = word, .inheritable = word};
  }
  if (::syscall(SYS_capset, &header, data) != 0) return false;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  if (jail.seccomp.empty()) return true;
  sock_fprog program{.len = static_cast<unsigned short>(jail.seccomp.size()),
                     .filter = const_cast<sock_filter*>(jail.seccomp.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0;
}

const char* StageName(int stage) {
  switch (stage) {
    case kStageDup: return "set up descriptors for";
    case kStageChdir: return "chdir for";
    case kStageSession: return "set session for";
    case kStageJail: return "jail";
    default: return "exec";
  }
}

}  // namespace

Result<pid_t> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgumentError("spawn: empty argv");

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (options.env) {
    for (const auto& e : *options.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }

  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return ErrnoError("open", "/dev/null");

  // Every descriptor the child should see, as {child, parent}.
  std::vector<std::pair<int, int>> fds = options.fds;
  for (int std_fd = 0; std_fd < 3; ++std_fd) {
    bool given = std::any_of(fds.begin(), fds.end(), [&](auto& p) { return p.first == std_fd; });
    if (!given) fds.emplace_back(std_fd, dev_null.get());
  }
  int highest = 0;
  for (auto& [child_fd, parent_fd] : fds) highest = std::max({highest, child_fd, parent_fd});

  HULL_ASSIGN_OR_RETURN(Pipe report, MakePipe());
  // The report pipe must survive the dup2s onto the child's targets.
  if (report.write.get() <= highest) {
    UniqueFd moved(::fcntl(report.write.get(), F_DUPFD_CLOEXEC, highest + 1));
    if (!moved) return ErrnoError("dup", "spawn report pipe");
    report.write = std::move(moved);
  }
  highest = std::max(highest, report.write.get());

  // Descriptors the child keeps, sorted: the targets and the report pipe.
  int keep[64];
  size_t keep_count = 0;
  if (fds.size() + 1 > std::size(keep)) return InvalidArgumentError("spawn: too many descriptors");
  for (auto& [child_fd, parent_fd] : fds) keep[keep_count++] = child_fd;
  keep[keep_count++] = report.write.get();
  std::sort(keep, keep + keep_count);

  std::vector<const char*> hide;
  std::optional<RootPlan> root_plan;
  int last_cap = -1;
  if (options.jail) {
    if (!options.jail->root.empty()) {
      root_plan = PlanRoot(*options.jail);
    } else {
      for (const std::string& dir : options.jail->hide) hide.push_back(dir.c_str());
    }
    last_cap = LastCapability();
    if (last_cap < 0) return InternalError("spawn: cannot read /proc/sys/kernel/cap_last_cap");
    if (options.jail->uid != 0 && options.jail->capabilities != 0) {
      return InvalidArgumentError("spawn: a jail with its own user keeps no capability");
    }
    if (options.jail->seccomp.size() > BPF_MAXINSNS) {
      return InvalidArgumentError("spawn: the jail's seccomp filter is over BPF_MAXINSNS");
    }
  }

  sigset_t empty;
  sigemptyset(&empty);
  const bool use_path = options.argv[0].find('/') == std::string::npos;

  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork for", options.argv[0]);
  if (pid == 0) {
    // Child. Reset signals first so nothing surprising is delivered.
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    if (options.parent_death_signal != 0) prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (options.new_session) {
      if (setsid() < 0) ChildFail(report.write.get(), kStageSession);
    } else if (options.new_process_group) {
      if (setpgid(0, 0) < 0) ChildFail(report.write.get(), kStageSession);
    }
    // Move every source above every target first, so that dup2 of one entry
    // can never clobber the source of another.
    int base = highest + 1;
    for (auto& [child_fd, parent_fd] : fds) {
      int moved = fcntl(parent_fd, F_DUPFD_CLOEXEC, base);
      if (moved < 0) ChildFail(report.write.get(), kStageDup);
      parent_fd = moved;
    }
    for (auto& [child_fd, parent_fd] : fds) {
      if (dup2(parent_fd, child_fd) < 0) ChildFail(report.write.get(), kStageDup);
    }
    // Close whatever hull inherited without O_CLOEXEC (its own parent's
    // descriptors): keep only the targets and the report pipe.
    CloseAllBut(keep, keep_count);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
      ChildFail(report.write.get(), kStageChdir);
    }
    if (options.jail &&
        !EnterJail(hide, root_plan ? &*root_plan : nullptr, *options.jail, last_cap)) {
      ChildFail(report.write.get(), kStageJail);
    }
    char** env = options.env ? envp.data() : environ;
    if (use_path) {
      execvpe(argv[0], argv.data(), env);
    } else {
      execve(argv[0], argv.data(), env);
    }
    ChildFail(report.write.get(), kStageExec);
  }

  report.write.reset();
  int payload[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report.read.get(), payload, sizeof payload);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof payload)) {
    // The child failed before exec and has exited; collect it here so no
    // zombie is left for anyone.
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoError(payload[1], StageName(payload[0]), options.argv[0]);
  }
  return pid;
}

bool SameFilter(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(sock_filter)) == 0);
}

int ExitStatusFromWait(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 255;
}

OwnedChild::~OwnedChild() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace hull
