// Resolving a container's USER string ("uid", "name", "uid:gid",
// "name:group", ...) to numeric ids, the way containerd's oci.WithUser does:
// names are looked up in the image's /etc/passwd and /etc/group, a bare uid
// takes its group from /etc/passwd (gid 0 when the uid is not listed). Files
// are opened relative to the rootfs without following symlinks, so an image
// cannot point the lookup at host files. Blocking file I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::oci {

struct ProcessUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
  friend bool operator==(const ProcessUser&, const ProcessUser&) = default;
};

// `rootfs` may be empty: then a name cannot be resolved (FailedPrecondition)
// and a bare uid gets gid 0. InvalidArgument for a malformed string or an id
// outside 0..2^31-1; NotFound for an unknown name.
Result<ProcessUser> ResolveUser(std::string_view user, const std::string& rootfs);

}  // namespace hull::oci
