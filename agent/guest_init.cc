#include "agent/guest_init.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>
#include <vector>

#include "base/file_util.h"

namespace hull::agent {
namespace {

struct Mount {
  const char* source;
  const char* target;
  const char* type;
  unsigned long flags;
  const char* data;
};

// In order: each target lies on a filesystem mounted before it.
constexpr Mount kMounts[] = {
    {"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr},
    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755"},
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"},
    {"shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
    {"run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
    {"tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
    {"cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
     "nsdelegate,memory_recursiveprot"},
};

Status MountOne(const Mount& m) {
  if (::mkdir(m.target, 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir", m.target);
  if (::mount(m.source, m.target, m.type, m.flags, m.data) != 0) {
    if (errno == EBUSY) return Status::Ok();  // already there (devtmpfs automount)
    return ErrnoError("mount " + std::string(m.type), m.target);
  }
  return Status::Ok();
}

// Writes "+cpu +memory ..." for every controller `dir` offers into its
// subtree_control, so that the cgroups below it can use them.
Status EnableControllers(const std::string& dir = "/sys/fs/cgroup") {
  HULL_ASSIGN_OR_RETURN(std::string controllers, ReadFile(dir + "/cgroup.controllers"));
  std::string enable;
  size_t pos = 0;
  while (pos < controllers.size()) {
    size_t end = controllers.find_first_of(" \n", pos);
    if (end == std::string::npos) end = controllers.size();
    if (end > pos) enable += (enable.empty() ? "+" : " +") + controllers.substr(pos, end - pos);
    pos = end + 1;
  }
  if (enable.empty()) return Status::Ok();
  return WriteKernelFile(dir + "/cgroup.subtree_control", enable);
}

Status UseConsole() {
  UniqueFd console(::open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!console) return ErrnoError("open", "/dev/console");
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return ErrnoError("open", "/dev/null");
  if (::dup2(null.get(), 0) < 0 || ::dup2(console.get(), 1) < 0 || ::dup2(console.get(), 2) < 0) {
    return ErrnoError("dup2", "/dev/console");
  }
  return Status::Ok();
}

std::string TrimLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// pivot_root(2) refuses to move away from the initramfs (rootfs is the
// mount tree's root: it has no parent), and crun pivots into each
// container's root filesystem. So the agent first stacks a bind mount of the
// initramfs over / and chroots into it, as switch_root does with a real root
// filesystem; the bind mount has a parent, and pivot_root works below it.
Status LeaveRootfs() {
  if (::mkdir("/.root", 0700) != 0 && errno != EEXIST) return ErrnoError("mkdir", "/.root");
  if (::mount("/", "/.root", nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return ErrnoError("bind mount / on", "/.root");
  }
  if (::chdir("/.root") != 0) return ErrnoError("chdir", "/.root");
  if (::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0) return ErrnoError("move /.root to", "/");
  if (::chroot(".") != 0) return ErrnoError("chroot", "/.root");
  if (::chdir("/") != 0) return ErrnoError("chdir", "/");
  return Status::Ok();
}

}  // namespace

Status LoadModule(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open module", path);
  if (::syscall(SYS_finit_module, fd.get(), "", 0) != 0 && errno != EEXIST) {
    return ErrnoError("finit_module", path);
  }
  return Status::Ok();
}

Status InitGuest(const std::string& modules_list) {
  HULL_RETURN_IF_ERROR(LeaveRootfs());
  // The kernel starts init without PATH; crun and the containers' hooks
  // into it (none) look programs up in it.
  ::setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  for (const Mount& m : kMounts) HULL_RETURN_IF_ERROR(MountOne(m));
  HULL_RETURN_IF_ERROR(UseConsole());
  HULL_RETURN_IF_ERROR(EnableControllers());
  // The pods' cgroup parent, made at boot: a template VM has it, so its
  // clones do not make it again (the controllers' set-up in it is a
  // kernel path each clone would translate anew under TCG).
  HULL_RETURN_IF_ERROR(MakePodCgroupIn("/sys/fs/cgroup"));
  // /dev/ptmx for containers with a terminal: the devpts instance's own.
  ::unlink("/dev/ptmx");
  if (::symlink("pts/ptmx", "/dev/ptmx") != 0) return ErrnoError("symlink", "/dev/ptmx");
  // What udev would add and programs expect (`crun update` reads the
  // resources from /dev/stdin).
  for (auto [link, target] :
       {std::pair{"/dev/fd", "/proc/self/fd"}, std::pair{"/dev/stdin", "/proc/self/fd/0"},
        std::pair{"/dev/stdout", "/proc/self/fd/1"}, std::pair{"/dev/stderr", "/proc/self/fd/2"}}) {
    if (::symlink(target, link) != 0 && errno != EEXIST) return ErrnoError("symlink", link);
  }
  Result<std::string> list = ReadFile(modules_list);
  if (!list) return Status::Ok();  // a kernel with the drivers built in
  size_t pos = 0;
  while (pos < list->size()) {
    size_t end = list->find('\n', pos);
    if (end == std::string::npos) end = list->size();
    std::string path = list->substr(pos, end - pos);
    pos = end + 1;
    if (path.empty() || path[0] == '#') continue;
    HULL_RETURN_IF_ERROR(LoadModule(path));
  }
  return Status::Ok();
}

Result<std::string> FindVirtioPort(const std::string& name, std::chrono::milliseconds timeout) {
  const std::string link = "/dev/virtio-ports/" + name;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::access(link.c_str(), F_OK) == 0) return link;
    if (DIR* dir = ::opendir("/sys/class/virtio-ports")) {
      std::string found;
      while (dirent* e = ::readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        std::string dev = e->d_name;
        Result<std::string> port_name = ReadFile("/sys/class/virtio-ports/" + dev + "/name");
        if (port_name && TrimLine(*port_name) == name) {
          found = "/dev/" + dev;
          break;
        }
      }
      ::closedir(dir);
      if (!found.empty() && ::access(found.c_str(), F_OK) == 0) return found;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return NotFoundError("no virtio-serial port named " + name);
    }
    // Before the loop runs: a short sleep is the simplest wait for sysfs.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status PowerOff() {
  ::sync();
  if (::reboot(RB_POWER_OFF) != 0) return ErrnoError("reboot(RB_POWER_OFF)");
  return Status::Ok();
}

Status RefreshFromHost(int64_t unix_nano, const std::string& entropy) {
  if (unix_nano > 0) {
    timespec now{.tv_sec = unix_nano / 1'000'000'000, .tv_nsec = unix_nano % 1'000'000'000};
    if (::clock_settime(CLOCK_REALTIME, &now) != 0) return ErrnoError("clock_settime", "REALTIME");
  }
  if (entropy.empty()) return Status::Ok();
  constexpr size_t kMaxEntropy = 512;
  size_t n = std::min(entropy.size(), kMaxEntropy);
  UniqueFd random(::open("/dev/urandom", O_WRONLY | O_CLOEXEC));
  if (!random) return ErrnoError("open", "/dev/urandom");
  // rand_pool_info ends in a flexible array: room for the bytes after it.
  std::vector<uint8_t> buf(sizeof(rand_pool_info) + kMaxEntropy);
  auto* info = reinterpret_cast<rand_pool_info*>(buf.data());
  info->entropy_count = static_cast<int>(n * 8);
  info->buf_size = static_cast<int>(n);
  std::memcpy(buf.data() + sizeof(rand_pool_info), entropy.data(), n);
  if (::ioctl(random.get(), RNDADDENTROPY, info) != 0) {
    return ErrnoError("ioctl RNDADDENTROPY", "/dev/urandom");
  }
  if (::ioctl(random.get(), RNDRESEEDCRNG) != 0) {
    return ErrnoError("ioctl RNDRESEEDCRNG", "/dev/urandom");
  }
  return Status::Ok();
}

Status SetPodMemoryMax(uint64_t bytes) {
  return SetPodMemoryMaxIn("/sys/fs/cgroup", bytes);
}

Status MakePodCgroupIn(const std::string& cgroup_root) {
  const std::string pod = cgroup_root + "/hull";
  if (::mkdir(pod.c_str(), 0755) != 0) {
    if (errno != EEXIST) return ErrnoError("mkdir", pod);
  } else if (Status enabled = EnableControllers(pod); !enabled.ok()) {
    // Left in place, the cgroup would be found at the next call and used
    // without its controllers: remove it, so that call starts again.
    ::rmdir(pod.c_str());
    return enabled.WithContext("the pod's cgroup " + pod);
  }
  return Status::Ok();
}

Status SetPodMemoryMaxIn(const std::string& cgroup_root, uint64_t bytes) {
  HULL_RETURN_IF_ERROR(MakePodCgroupIn(cgroup_root));
  return WriteKernelFile(cgroup_root + "/hull/memory.max", std::to_string(bytes));
}

}  // namespace hull::agent
