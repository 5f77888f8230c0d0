// The vm backend in a confined server (docs/security.md, "VM pods
// confined"): the server keeps no CAP_NET_ADMIN and no CAP_SYS_ADMIN, so its
// spawner wires the pod's network (the tap and its redirection, in the pod's
// network namespace, the tap handed back as a descriptor), mounts the pod
// share (its shared self-bind, each container's rootfs and volumes) and
// starts QEMU. Each entry checks its request against the pod's own files
// before it acts, against the pod it was forked for (VmPod): the pod's own
// network namespace, a bind source that is the rootfs or a bind mount of one
// of the pod's containers, targets inside the pod's share; a QEMU command
// line made of the options hull uses, with the configured guest assets, the
// pod's files and the jail [vm] asks for. A server that was taken over gets
// only what its pod's configuration would have done anyway.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/spawn.h"
#include "base/spawner.h"
#include "base/status.h"
#include "shim/backend/vm/pod_network.h"
#include "shim/backend/vm/qemu_command.h"

namespace hull::shim::vm {

inline constexpr uint32_t kVmNetworkSpawnerEntry = 3;
inline constexpr uint32_t kVmShareSpawnerEntry = 4;

// The pod a confined server was started for, as its spawner knows it.
struct VmPod {
  std::vector<std::string> bundles;  // BundleDirs of the server's bundle
  // Its ids: the server's bundle's name, and the grouping id of its spec
  // (GroupingId). Its run directory is `<kRunRoot>/<id>`; a container is
  // the pod's when its own grouping id is one of them.
  std::set<std::string> ids;
  // The network namespace its spec names; empty for a Sandbox API pod
  // (the server's bundle has no spec), whose first wire pins it.
  std::string netns;
};
// The pod of the server whose bundle is `server_bundle` (a real path).
VmPod ReadVmPod(const std::string& server_bundle);

// The "vm-network" and "vm-share" entries, in index order, for `pod`.
std::vector<SpawnerEntry> VmSpawnerEntries(const VmPod& pod);

// WirePodNetwork and UnwirePodNetwork in this process, or by `spawner` when
// the server has one.
Result<PodNic> WirePodNetworkVia(SpawnerClient* spawner, const std::string& netns_path);
Status UnwirePodNetworkVia(SpawnerClient* spawner, const std::string& netns_path);

// The pod share's mounts, in this process or by `spawner`:
// - MakeSharedVia: `share` bound on itself with shared propagation (once);
// - BindVia: `source`, named by `bundle`'s config.json, bound on `target`
//   (which exists) in a share;
// - UnmountAllVia: every mount at or below `dir` in a share.
Status MakeSharedVia(SpawnerClient* spawner, const std::string& share);
Status BindVia(SpawnerClient* spawner, const std::string& bundle, const std::string& source,
               const std::string& target);
Status UnmountAllVia(SpawnerClient* spawner, const std::string& dir);

// What the spawner lets a confined server start as QEMU: the configured
// binary and guest assets, and the jail [vm] asks for.
struct QemuRule {
  GuestAssets assets;
  std::optional<SpawnJail> jail;  // QemuJail's capabilities; any of its hide
  VmPod pod;
  bool kvm = false;  // [vm] accel = "kvm": /dev/kvm in QEMU's root
};

// OK when `options` is a QEMU command line hull makes (QemuArgv) for
// `rule.pod`; PermissionDenied naming what is refused.
Status CheckQemuSpawn(const QemuRule& rule, const SpawnOptions& options);
// OK when `options` starts the configured share helper (ShareHelperArgv) on
// a share of `rule.pod` or of a template; PermissionDenied otherwise.
Status CheckShareHelperSpawn(const QemuRule& rule, const SpawnOptions& options);

}  // namespace hull::shim::vm
