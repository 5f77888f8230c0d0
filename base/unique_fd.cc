#include "base/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

namespace hull {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0 && fd_ != fd) {
    // close() is never retried on Linux: the descriptor is gone even on EINTR.
    ::close(fd_);
  }
  fd_ = fd;
}

Result<UniqueFd> UniqueFd::Duplicate() const {
  int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("dup", "fd " + std::to_string(fd_));
  return UniqueFd(fd);
}

Result<Pipe> MakePipe(int extra_flags) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | extra_flags) != 0) return ErrnoError("pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Status SetNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return ErrnoError("fcntl F_GETFL", "fd " + std::to_string(fd));
  int wanted = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && ::fcntl(fd, F_SETFL, wanted) != 0) {
    return ErrnoError("fcntl F_SETFL", "fd " + std::to_string(fd));
  }
  return Status::Ok();
}

}  // namespace hull
