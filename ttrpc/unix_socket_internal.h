// Unix-socket plumbing for the ttrpc server and client: listen, connect,
// accept and peer credentials. Every descriptor comes back O_CLOEXEC and
// nonblocking, owned by a UniqueFd. Blocking-free, loop-agnostic.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::ttrpc::internal {

// `address` is a filesystem path, optionally prefixed `unix://` (containerd's
// form), or `@name` / `unix://@name` for a Linux abstract socket.
Result<UniqueFd> ListenUnix(std::string_view address, int backlog);
// Nonblocking connect. A full listen backlog is reported (Unavailable), not
// waited for.
Result<UniqueFd> ConnectUnix(std::string_view address);
// Checks that `fd` is a listening socket and makes it nonblocking and
// close-on-exec (an inherited fd 3 is neither).
Status PrepareListener(int fd);

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
// SO_PEERCRED: the peer's credentials as captured at connect().
Result<PeerCredentials> GetPeerCredentials(int fd);

}  // namespace hull::ttrpc::internal
