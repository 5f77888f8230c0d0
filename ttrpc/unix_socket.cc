#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>

#include "ttrpc/unix_socket_internal.h"

namespace hull::ttrpc::internal {
namespace {

struct UnixAddress {
  sockaddr_un addr;
  socklen_t len;
};

Result<UnixAddress> ParseAddress(std::string_view address) {
  if (address.starts_with("unix://")) address.remove_prefix(7);
  if (address.empty()) return InvalidArgumentError("empty unix socket address");
  UnixAddress out{};
  out.addr.sun_family = AF_UNIX;
  // Abstract names keep the leading '@' as a NUL and are not NUL-terminated.
  bool abstract = address.front() == '@';
  size_t max = sizeof(out.addr.sun_path) - (abstract ? 0 : 1);
  if (address.size() > max) {
    return InvalidArgumentError("unix socket address too long (" + std::to_string(address.size()) +
                                " > " + std::to_string(max) + "): " + std::string(address));
  }
  std::memcpy(out.addr.sun_path, address.data(), address.size());
  if (abstract) out.addr.sun_path[0] = '\0';
  out.len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size() + (abstract ? 0 : 1));
  return out;
}

Result<UniqueFd> NewSocket(std::string_view address) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ErrnoError("socket", address);
  return fd;
}

}  // namespace

Result<UniqueFd> ListenUnix(std::string_view address, int backlog) {
  HULL_ASSIGN_OR_RETURN(UnixAddress ua, ParseAddress(address));
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket(address));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ua.addr), ua.len) != 0) {
    return ErrnoError("bind", address);
  }
  if (::listen(fd.get(), backlog) != 0) return ErrnoError("listen", address);
  return fd;
}

Result<UniqueFd> ConnectUnix(std::string_view address) {
  HULL_ASSIGN_OR_RETURN(UnixAddress ua, ParseAddress(address));
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket(address));
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&ua.addr), ua.len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    // Unix stream sockets complete connect() at once or fail with EAGAIN when
    // the server's backlog is full; there is no EINPROGRESS to wait on.
    int err = errno;
    Status status = ErrnoError(err, "connect", address);
    if (err == EAGAIN || err == ECONNREFUSED) return UnavailableError(status.message());
    return status;
  }
  return fd;
}

Status PrepareListener(int fd) {
  int listening = 0;
  socklen_t len = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) {
    return ErrnoError("getsockopt SO_ACCEPTCONN", "fd " + std::to_string(fd));
  }
  if (!listening)
    return InvalidArgumentError("fd " + std::to_string(fd) + " is not a listening socket");
  int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
    return ErrnoError("fcntl FD_CLOEXEC", "fd " + std::to_string(fd));
  }
  return SetNonBlocking(fd);
}

Result<PeerCredentials> GetPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return ErrnoError("getsockopt SO_PEERCRED", "fd " + std::to_string(fd));
  }
  return PeerCredentials{.pid = cred.pid, .uid = cred.uid, .gid = cred.gid};
}

}  // namespace hull::ttrpc::internal
