#include "shim/security/read_only_host.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sstream>

#include "base/file_util.h"

// <sys/mount.h> and <linux/mount.h> clash; mount(2) is declared here.
extern "C" int mount(const char* source, const char* target, const char* type, unsigned long flags,
                     const void* data);

namespace hull::shim {
namespace {

// mount_setattr(2) on `path`; the errno, 0 when it worked.
int SetAttr(const std::string& path, unsigned int flags, const mount_attr& attr) {
  mount_attr copy = attr;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), flags, &copy, sizeof copy) != 0) {
    return errno;
  }
  return 0;
}

bool Octal(const std::string& s, size_t at) {
  return at < s.size() && s[at] >= '0' && s[at] <= '7';
}

bool AtOrBelow(const std::string& path, const std::string& tree) {
  if (tree == "/") return true;
  return path == tree || (path.starts_with(tree) && path[tree.size()] == '/');
}

Result<std::string> RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return ErrnoError("realpath", path);
  return std::string(buf);
}

}  // namespace

std::vector<std::string> MountPoints(const std::string& mountinfo) {
  std::vector<std::string> points;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    // id parent major:minor root mount-point ...
    std::istringstream fields(line);
    std::string id, parent, device, root, escaped;
    if (!(fields >> id >> parent >> device >> root >> escaped)) continue;
    std::string point;
    for (size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '\\' && Octal(escaped, i + 1) && Octal(escaped, i + 2) &&
          Octal(escaped, i + 3)) {
        point += static_cast<char>(std::strtol(escaped.substr(i + 1, 3).c_str(), nullptr, 8));
        i += 3;
      } else {
        point += escaped[i];
      }
    }
    points.push_back(std::move(point));
  }
  return points;
}

Status SeeHostReadOnly(const HostView& view) {
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return ErrnoError("getcwd");
  std::vector<std::string> writable;
  for (const std::string& path : view.writable) {
    HULL_ASSIGN_OR_RETURN(std::string real, RealPath(path));
    writable.push_back(std::move(real));
  }
  std::vector<std::string> read_only;
  for (const std::string& path : view.read_only) {
    if (Result<std::string> real = RealPath(path)) read_only.push_back(std::move(*real));
  }

  if (::unshare(CLONE_NEWNS) != 0) return ErrnoError("unshare", "a mount namespace");
  // Mounts the host makes later (a pod's rootfs by the spawner) still come
  // in; none of ours goes out.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return ErrnoError("make rslave", "/");
  }
  // Each tree its own mount, so that making its parent read-only leaves it.
  for (const std::vector<std::string>* trees : {&writable, &read_only}) {
    for (const std::string& tree : *trees) {
      if (mount(tree.c_str(), tree.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
        return ErrnoError("bind", tree);
      }
    }
  }
  HULL_ASSIGN_OR_RETURN(std::string mountinfo, ReadFile("/proc/self/mountinfo"));
  const mount_attr ro{.attr_set = MOUNT_ATTR_RDONLY};
  for (const std::string& point : MountPoints(mountinfo)) {
    bool keep = false;
    for (const std::string& tree : writable) keep = keep || AtOrBelow(point, tree);
    if (keep) continue;
    // EINVAL: a mount hidden under a later one (its path reaches that one's
    // directory, no mount root); ENOENT: gone meanwhile. Neither is reachable.
    const int err = SetAttr(point, AT_SYMLINK_NOFOLLOW, ro);
    if (err != 0 && err != EINVAL && err != ENOENT) {
      return ErrnoError(err, "make read-only", point);
    }
  }
  for (const std::string& path : read_only) {
    if (int err = SetAttr(path, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, ro); err != 0) {
      return ErrnoError(err, "make read-only", path);
    }
  }
  // The old working directory is the host's mount, not this namespace's bind.
  if (::chdir(cwd) != 0) return ErrnoError("chdir", cwd);
  return Status::Ok();
}

}  // namespace hull::shim
