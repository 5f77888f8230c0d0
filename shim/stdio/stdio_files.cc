// Opening stdio FIFOs and files: see stdio_files_internal.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string_view>

#include "shim/stdio/spawner_files.h"
#include "shim/stdio/stdio_files_internal.h"

namespace hull::shim::stdio {
namespace {

// mkdir -p of the directories above `path`, each 0755.
Status MakeParentDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir", dir);
  }
  return Status::Ok();
}

// Where no log belongs: the system's programs, configuration, kernel
// interfaces and root's home.
constexpr std::string_view kSystemTrees[] = {
    "/bin",  "/boot", "/dev",  "/etc", "/lib", "/lib32",   "/lib64",    "/libx32",
    "/proc", "/root", "/sbin", "/sys", "/usr", "/var/lib", "/var/spool"};

bool InSystemTree(const std::string& path) {
  for (std::string_view tree : kSystemTrees) {
    if (path == tree || (path.starts_with(tree) && path[tree.size()] == '/')) return true;
  }
  return false;
}

Status Refused(const std::string& path, std::string_view why) {
  return PermissionDeniedError("open " + path + " for the server refused: " + std::string(why));
}

Result<UniqueFd> ViaSpawner(SpawnerClient& spawner, char mode, const std::string& path) {
  HULL_ASSIGN_OR_RETURN(SpawnerReply reply,
                        spawner.Call(kLogFileSpawnerEntry, std::string(1, mode) + path, {}));
  if (reply.fds.size() != 1) {
    return InternalError("open " + path + ": the spawner answered with " +
                         std::to_string(reply.fds.size()) + " descriptors");
  }
  return std::move(reply.fds[0]);
}

}  // namespace

Result<UniqueFd> OpenFileForServer(const std::string& path, bool create) {
  if (path.empty() || path[0] != '/') return Refused(path, "not an absolute path");
  const size_t slash = path.find_last_of('/');
  const std::string name = path.substr(slash + 1);
  for (size_t begin = 1; begin <= path.size();) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin && path[begin] == '.') {
      return Refused(path, "a \".\", \"..\" or hidden component");
    }
    begin = end + 1;
  }
  if (name.empty()) return Refused(path, "no file name");
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (InSystemTree(dir)) return Refused(path, "in a system directory");
  if (create) {
    // The deepest directory that exists decides where new ones would go.
    std::string existing = dir;
    char real[PATH_MAX];
    while (::realpath(existing.c_str(), real) == nullptr) {
      if (errno != ENOENT) return ErrnoError("realpath", existing);
      existing = existing.substr(0, std::max<size_t>(existing.find_last_of('/'), 1));
    }
    if (InSystemTree(real)) {
      return Refused(path,
                     "its directory would be in " + std::string(real) + ", a system directory");
    }
    HULL_RETURN_IF_ERROR(MakeParentDirs(path));
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return ErrnoError("open", dir);
  char real[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(dir_fd.get());
  const ssize_t n = ::readlink(link.c_str(), real, sizeof real - 1);
  if (n <= 0) return ErrnoError("readlink", link);
  real[n] = '\0';
  if (InSystemTree(real)) {
    return Refused(path, "its directory is " + std::string(real) + ", a system directory");
  }
  // Never opened, not even to be refused: a device or FIFO (opening one
  // can act on it).
  struct stat st;
  if (::fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(st.st_mode)) {
    return Refused(path, S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file");
  }
  const int flags = O_WRONLY | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC;
  UniqueFd fd(::openat(dir_fd.get(), name.c_str(), create ? flags | O_CREAT : flags, 0644));
  if (!fd && errno == ELOOP) return Refused(path, "a symlink");
  if (!fd) return ErrnoError("open", path);
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat", path);
  if (!S_ISREG(st.st_mode)) return Refused(path, "not a regular file");
  if (st.st_nlink != 1) return Refused(path, "a file with more than one link");
  if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH | S_ISUID | S_ISGID)) != 0) {
    return Refused(path, "an executable or set-id file");
  }
  return fd;
}

SpawnerEntry LogFileSpawnerEntry() {
  return SpawnerEntry{
      .name = "log-file",
      .call = [](std::string_view payload, std::vector<UniqueFd>&) -> Result<SpawnerReply> {
        if (payload.empty() || (payload[0] != 'c' && payload[0] != 'a')) {
          return PermissionDeniedError("log-file: payload is not 'c' or 'a' and a path");
        }
        HULL_ASSIGN_OR_RETURN(UniqueFd fd,
                              OpenFileForServer(std::string(payload.substr(1)), payload[0] == 'c'));
        SpawnerReply reply;
        reply.fds.push_back(std::move(fd));
        return reply;
      }};
}

Result<StdinFifo> OpenStdinFifo(const std::string& path) {
  StdinFifo fifo;
  // Reader first: with it open, the nonblocking writer below cannot fail with
  // ENXIO for want of a reader.
  fifo.read.reset(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fifo.read) return ErrnoError("open stdin", path);
  struct stat st;
  if (::fstat(fifo.read.get(), &st) != 0) return ErrnoError("stat stdin", path);
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("stdin " + path + ": not a FIFO");
  }
  if (S_ISFIFO(st.st_mode)) {
    fifo.holder.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fifo.holder) return ErrnoError("open stdin for holding", path);
  }
  return fifo;
}

Result<UniqueFd> OpenOutputPath(const std::string& path, SpawnerClient* spawner) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path);
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError("output " + path + ": is a directory");
  if (S_ISREG(st.st_mode) && spawner != nullptr) return ViaSpawner(*spawner, 'a', path);
  int flags = S_ISFIFO(st.st_mode) ? O_RDWR | O_NONBLOCK : O_WRONLY | O_APPEND | O_NONBLOCK;
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  return fd;
}

Result<UniqueFd> OpenLogFile(const std::string& path, SpawnerClient* spawner) {
  if (spawner != nullptr) return ViaSpawner(*spawner, 'c', path);
  HULL_RETURN_IF_ERROR(MakeParentDirs(path));
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd) return ErrnoError("open", path);
  return fd;
}

Result<UniqueFd> OpenDevNull() {
  UniqueFd fd(::open("/dev/null", O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return ErrnoError("open", "/dev/null");
  return fd;
}

}  // namespace hull::shim::stdio
