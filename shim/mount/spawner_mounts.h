// Rootfs mounts in a confined server (docs/security.md): the server has no
// CAP_SYS_ADMIN, so its spawner makes and removes them through two entries
// at fixed indexes. The spawner takes only a target that is
// `<bundles>/<id>/rootfs` once symlinks are resolved, `<bundles>` being one
// of the pod's bundle directories (BundleDirs): a server that was taken over
// cannot mount over the host.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/spawner.h"
#include "base/status.h"
#include "containerd/types/mount.pb.h"

namespace hull::shim {

inline constexpr uint32_t kMountSpawnerEntry = 1;
inline constexpr uint32_t kUnmountSpawnerEntry = 2;

// Where the bundles of a server's pod are, for a server whose own bundle is
// `server_bundle` (a real path, `<state>/<plugin>/<ns>/<id>`): its parent,
// and containerd's task directory of the namespace,
// `<state>/io.containerd.runtime.v2.task/<ns>` (they differ for a pod of
// containerd 2's shim sandboxer, whose bundle is the sandbox controller's).
std::vector<std::string> BundleDirs(const std::string& server_bundle);

// The "mount" and "unmount" entries, in index order, for a server whose
// pod's bundles are in `bundles` (BundleDirs).
std::vector<SpawnerEntry> MountSpawnerEntries(const std::vector<std::string>& bundles);

// `target` where it really is, when that is `<one of bundles>/<id>/rootfs`
// and `rootfs` is no symlink (`bundles` are real paths); PermissionDenied
// otherwise.
Result<std::string> RootfsTarget(const std::vector<std::string>& bundles,
                                 const std::string& target);

// `path` (`name` empty) or its parent (`path` ends in `/<name>`) is a bundle
// directory in one of `bundles` once symlinks are resolved.
bool InBundleDirs(const std::vector<std::string>& bundles, const std::string& path,
                  std::string_view name);

// MountRootfs and UnmountAll, in this process, or by `spawner` when the
// server has one.
Status MountRootfsVia(SpawnerClient* spawner,
                      const google::protobuf::RepeatedPtrField<containerd::types::Mount>& rootfs,
                      const std::string& target);
Status UnmountRootfsVia(SpawnerClient* spawner, const std::string& target);

}  // namespace hull::shim
