// Opening stdio FIFOs and files: see stdio_files_internal.h.
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

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

}  // namespace

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

Result<UniqueFd> OpenOutputPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path);
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError("output " + path + ": is a directory");
  int flags = S_ISFIFO(st.st_mode) ? O_RDWR | O_NONBLOCK : O_WRONLY | O_APPEND | O_NONBLOCK;
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  return fd;
}

Result<UniqueFd> OpenLogFile(const std::string& path) {
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
