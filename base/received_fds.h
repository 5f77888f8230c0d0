// TakeReceivedFds: the descriptors a recvmsg() brought in its SCM_RIGHTS
// control messages, each owned by the vector from then on, so that none is
// leaked whatever the caller decides to keep (the spawner channel, the
// console socket).
#pragma once

#include <sys/socket.h>

#include <vector>

#include "base/unique_fd.h"

namespace hull {

std::vector<UniqueFd> TakeReceivedFds(msghdr& msg);

}  // namespace hull
