#include "shim/mount/mount.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "base/mountinfo.h"
#include "base/unique_fd.h"

namespace hull::shim {
namespace {

struct FlagWord {
  std::string_view name;
  bool clear;  // the word turns the flag off ("rw" clears MS_RDONLY)
  unsigned long flag;
};

constexpr FlagWord kFlagWords[] = {
    {"async", true, MS_SYNCHRONOUS},
    {"atime", true, MS_NOATIME},
    {"bind", false, MS_BIND},
    {"defaults", false, 0},
    {"dev", true, MS_NODEV},
    {"diratime", true, MS_NODIRATIME},
    {"dirsync", false, MS_DIRSYNC},
    {"exec", true, MS_NOEXEC},
    {"mand", false, MS_MANDLOCK},
    {"noatime", false, MS_NOATIME},
    {"nodev", false, MS_NODEV},
    {"nodiratime", false, MS_NODIRATIME},
    {"noexec", false, MS_NOEXEC},
    {"nomand", true, MS_MANDLOCK},
    {"norelatime", true, MS_RELATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"nosuid", false, MS_NOSUID},
    {"rbind", false, MS_BIND | MS_REC},
    {"relatime", false, MS_RELATIME},
    {"remount", false, MS_REMOUNT},
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"strictatime", false, MS_STRICTATIME},
    {"suid", true, MS_NOSUID},
    {"sync", false, MS_SYNCHRONOUS},
    {"silent", false, MS_SILENT},
    {"loud", true, MS_SILENT},
};

struct PropagationWord {
  std::string_view name;
  unsigned long flags;
};

constexpr PropagationWord kPropagationWords[] = {
    {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
    {"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

// Flags a bind mount only gets through a remount.
constexpr unsigned long kBindRemountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC |
                                            MS_NOATIME | MS_NODIRATIME | MS_RELATIME |
                                            MS_STRICTATIME;

std::string Join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out.push_back(sep);
    out += p;
  }
  return out;
}

// Overlay data too long for one page: rewrites lowerdir= relative to the
// lowerdirs' common parent and returns that parent (mount(2) must run with
// it as the working directory), or "" when nothing can be shortened.
std::string CompactLowerdirs(std::vector<std::string>& data) {
  constexpr std::string_view kPrefix = "lowerdir=";
  auto it = std::find_if(data.begin(), data.end(),
                         [&](const std::string& o) { return o.starts_with(kPrefix); });
  if (it == data.end()) return "";
  std::vector<std::string> dirs;
  std::string_view rest = std::string_view(*it).substr(kPrefix.size());
  while (true) {
    size_t colon = rest.find(':');
    dirs.emplace_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (dirs.size() < 2) return "";
  auto [lo, hi] = std::minmax_element(dirs.begin(), dirs.end());
  size_t common = 0;
  while (common < lo->size() && common < hi->size() && (*lo)[common] == (*hi)[common]) ++common;
  // Back up to a directory boundary: the parent of the common prefix.
  std::string parent = lo->substr(0, common);
  size_t slash = parent.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  parent.resize(slash + 1);  // keeps the trailing '/'
  for (auto& dir : dirs) {
    if (dir.size() <= parent.size()) return "";
    dir.erase(0, parent.size());
  }
  *it = std::string(kPrefix) + Join(dirs, ':');
  parent.pop_back();
  return parent;
}

// Runs mount(2) with `chdir` as the working directory when it is non-empty.
Status MountFrom(const std::string& chdir, const char* source, const std::string& target,
                 const char* type, unsigned long flags, const std::string& data) {
  UniqueFd saved_cwd;
  if (!chdir.empty()) {
    saved_cwd.reset(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!saved_cwd) return ErrnoError("open", "working directory");
    if (::chdir(chdir.c_str()) != 0) return ErrnoError("chdir", chdir);
  }
  int rc = ::mount(source, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str());
  int err = errno;
  if (saved_cwd && ::fchdir(saved_cwd.get()) != 0) return ErrnoError("restore working directory");
  if (rc != 0) return ErrnoError(err, "mount");
  return Status::Ok();
}

// The directory `target` names inside `root`, as an O_PATH descriptor of
// whatever is mounted on top there now. Resolved with the root as "/", so a
// symlink in an image cannot point the mount outside the rootfs. Opened anew
// for every step: after a mount, the old descriptor still refers to what is
// underneath (remount and propagation changes would miss the new mount, and
// the next entry's target would be looked up below it).
Result<UniqueFd> OpenTarget(const std::string& root, const std::string& target) {
  UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return ErrnoError("open", root);
  if (target.empty() || target == "/") return root_fd;
  struct open_how how = {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(
      static_cast<int>(::syscall(SYS_openat2, root_fd.get(), target.c_str(), &how, sizeof how)));
  if (!fd) return ErrnoError("open mount target", root + "/" + target);
  return fd;
}

std::string FdPath(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

// Where `fd` is, for messages and for undoing the mount after the descriptor
// is gone.
std::string RealPath(int fd, const std::string& fallback) {
  char buf[4096];
  ssize_t n = ::readlink(FdPath(fd).c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : fallback;
}

// Mounts one entry. `mounted` gets the mount point as soon as something is
// mounted there, so that the caller can undo a half-finished entry too.
Status MountOne(const Mount& m, const std::string& root, std::vector<std::string>& mounted) {
  HULL_ASSIGN_OR_RETURN(MountOptions opts, ParseMountOptions(m.options));
  HULL_ASSIGN_OR_RETURN(UniqueFd target_fd, OpenTarget(root, m.target));
  const std::string where = RealPath(target_fd.get(), root);
  const std::string what = "mount " + m.type + " on " + where;

  std::string chdir;
  std::string data = Join(opts.data, ',');
  const long page = ::sysconf(_SC_PAGESIZE);
  if (m.type == "overlay" && static_cast<long>(data.size()) >= page - 512) {
    chdir = CompactLowerdirs(opts.data);
    data = Join(opts.data, ',');
  }
  if (static_cast<long>(data.size()) >= page) {
    return InvalidArgumentError(what + ": options are " + std::to_string(data.size()) +
                                " bytes, more than a page");
  }

  // mount(2) on the descriptor's path stacks on top of whatever is there.
  if ((opts.flags & MS_REMOUNT) == 0 || !data.empty()) {
    HULL_RETURN_IF_ERROR_CTX(MountFrom(chdir, m.source.c_str(), FdPath(target_fd.get()),
                                       m.type.c_str(), opts.flags, data),
                             what);
    if ((opts.flags & MS_REMOUNT) == 0) mounted.push_back(where);
  }
  const bool bind = (opts.flags & MS_BIND) != 0;
  const bool remount = bind && (opts.flags & kBindRemountFlags) != 0;
  if (opts.propagation == 0 && !remount) return Status::Ok();

  // The new mount itself, for the changes that apply to a mount.
  HULL_ASSIGN_OR_RETURN(UniqueFd mounted_fd, OpenTarget(root, m.target));
  const std::string target = FdPath(mounted_fd.get());
  if (opts.propagation != 0 &&
      ::mount(nullptr, target.c_str(), nullptr, opts.propagation, nullptr) != 0) {
    return ErrnoError("set propagation of", where);
  }
  if (remount) {
    unsigned long flags = (opts.flags & ~MS_REC) | MS_REMOUNT | MS_BIND;
    if (::mount(nullptr, target.c_str(), nullptr, flags, nullptr) != 0) {
      return ErrnoError("remount (ro, nosuid, ...)", where);
    }
  }
  return Status::Ok();
}

// `path` made absolute and free of symlinks, as mountinfo shows mount points.
Result<std::string> CanonicalPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return ErrnoError("resolve", path);
  std::string out(resolved);
  ::free(resolved);
  return out;
}

bool IsAtOrBelow(const std::string& mount_point, const std::string& path) {
  return mount_point == path || (mount_point.size() > path.size() &&
                                 mount_point.starts_with(path) && mount_point[path.size()] == '/');
}

}  // namespace

std::vector<Mount> MountsFromProto(
    const google::protobuf::RepeatedPtrField<containerd::types::Mount>& mounts) {
  std::vector<Mount> out;
  out.reserve(static_cast<size_t>(mounts.size()));
  for (const auto& m : mounts) {
    out.push_back({m.type(), m.source(), m.target(), {m.options().begin(), m.options().end()}});
  }
  return out;
}

Result<MountOptions> ParseMountOptions(std::span<const std::string> options) {
  MountOptions out;
  for (const std::string& option : options) {
    if (option.starts_with("X-containerd.")) continue;
    if (option == "loop" || option.starts_with("uidmap=") || option.starts_with("gidmap=")) {
      return UnimplementedError("mount option \"" + option + "\" is not supported");
    }
    auto flag = std::find_if(std::begin(kFlagWords), std::end(kFlagWords),
                             [&](const FlagWord& w) { return w.name == option; });
    if (flag != std::end(kFlagWords)) {
      if (flag->clear) {
        out.flags &= ~flag->flag;
      } else {
        out.flags |= flag->flag;
      }
      continue;
    }
    auto propagation = std::find_if(std::begin(kPropagationWords), std::end(kPropagationWords),
                                    [&](const PropagationWord& w) { return w.name == option; });
    if (propagation != std::end(kPropagationWords)) {
      out.propagation = propagation->flags;
      continue;
    }
    out.data.push_back(option);
  }
  return out;
}

Status MountAll(std::span<const Mount> mounts, const std::string& root) {
  std::vector<std::string> mounted;
  // Undo, newest first. MNT_DETACH so that an rbind's submounts go with it.
  auto undo = [&] {
    for (auto it = mounted.rbegin(); it != mounted.rend(); ++it) {
      ::umount2(it->c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    }
  };
  for (const Mount& m : mounts) {
    Status status = MountOne(m, root, mounted);
    if (!status.ok()) {
      undo();
      return status;
    }
  }
  return Status::Ok();
}

Status MountRootfs(const google::protobuf::RepeatedPtrField<containerd::types::Mount>& rootfs,
                   const std::string& target) {
  std::vector<Mount> mounts = MountsFromProto(rootfs);
  return MountAll(mounts, target);
}

Status UnmountAll(const std::string& path) {
  Result<std::string> canonical = CanonicalPath(path);
  if (!canonical) {
    return canonical.error().code() == Code::kNotFound ? Status::Ok() : canonical.error();
  }
  const std::string& root = *canonical;
  if (root == "/") return InvalidArgumentError("refusing to unmount everything below /");

  // Each pass unmounts the topmost mount of every mount point; stacked mounts
  // need more passes. The bound only guards against a mount table that keeps
  // growing under us.
  for (int pass = 0; pass < 64; ++pass) {
    HULL_ASSIGN_OR_RETURN(std::vector<MountInfo> table, ReadMountInfo());
    std::vector<std::string> points;
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
      if (IsAtOrBelow(it->mount_point, root)) points.push_back(it->mount_point);
    }
    if (points.empty()) return Status::Ok();
    // Deepest first; stable keeps the newest-first order among equals.
    std::stable_sort(points.begin(), points.end(), [](const std::string& a, const std::string& b) {
      return a.size() > b.size();
    });
    for (const std::string& point : points) {
      if (::umount2(point.c_str(), UMOUNT_NOFOLLOW) == 0) continue;
      if (errno == EBUSY && ::umount2(point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) continue;
      // Gone already: a detach above took it along, or a concurrent unmount.
      if (errno == EINVAL || errno == ENOENT) continue;
      return ErrnoError("unmount", point);
    }
  }
  return InternalError("unmount " + root + ": mounts remain after 64 passes");
}

}  // namespace hull::shim
