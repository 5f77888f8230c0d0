// Descriptors over unix sockets (SCM_RIGHTS), both ways: the spawner
// channel, a console socket, QEMU's monitor.
#pragma once

#include <sys/socket.h>

#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull {

inline constexpr size_t kMaxPassedFds = 64;

// The descriptors a recvmsg() brought in its SCM_RIGHTS control messages,
// each owned by the vector from then on, so that none is leaked whatever the
// caller decides to keep.
std::vector<UniqueFd> TakeReceivedFds(msghdr& msg);

// One sendmsg() of `data` (not empty) with `fds` attached (at most
// kMaxPassedFds); no SIGPIPE. Errors name `what` (the peer): Unavailable
// when a non-blocking socket is full, the errno otherwise.
Status SendWithFds(int sock, std::string_view data, const std::vector<int>& fds,
                   std::string_view what);

}  // namespace hull
