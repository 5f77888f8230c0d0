#include "shim/cli/shim_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "base/file_util.h"

namespace hull::shim {
namespace {

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("socket path " + path + " is longer than " +
                                std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Listens on `path`; EADDRINUSE comes back as an AlreadyExists Status.
Result<UniqueFd> Listen(const std::string& path, const sockaddr_un& addr) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket for", path);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return ErrnoError("listen on", path);
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return ErrnoError("listen on", path);
  if (::chmod(path.c_str(), 0600) != 0) {
    Status status = ErrnoError("chmod", path);
    ::unlink(path.c_str());
    return status;
  }
  return fd;
}

}  // namespace

bool CanConnect(const std::string& path, int timeout_ms) {
  Result<sockaddr_un> addr = UnixAddress(path);
  if (!addr) return false;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return false;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) == 0) {
    return true;
  }
  // A full backlog (EAGAIN) is a live but busy server.
  if (errno == EAGAIN) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p = {fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  int err = 0;
  socklen_t len = sizeof err;
  return ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

Result<ShimListener> ListenShimSocket(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    HULL_RETURN_IF_ERROR(MakeDirs(path.substr(0, slash), 0700));
  }
  Result<UniqueFd> fd = Listen(path, addr);
  if (!fd && fd.error().code() == Code::kAlreadyExists) {
    if (CanConnect(path)) return ShimListener{UniqueFd(), true};
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("remove stale socket", path);
    }
    fd = Listen(path, addr);
  }
  if (!fd) return fd.error();
  return ShimListener{std::move(*fd), false};
}

}  // namespace hull::shim
