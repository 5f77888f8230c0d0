// PodShare: the one host directory a pod's guest sees (over 9p, as
// kShareTag at kGuestSharePath). Each container gets `<share>/<id>/`: its
// rootfs and each bind-mounted volume are bind-mounted there, and its spec
// is rewritten to name those guest paths, so the guest never sees any other
// host path. Blocking filesystem calls, loop thread.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "base/spawner.h"
#include "base/status.h"

namespace hull::shim::vm {

// The guest's view of a container: its bundle directory and its spec.
struct GuestContainer {
  std::string bundle;     // <kGuestSharePath>/<id>
  std::string spec_json;  // root.path "rootfs", bind sources in the share
};

// The container's root filesystem on the host: the spec's root.path, taken
// relative to `bundle` unless absolute (`ctr run --rootfs DIR` gives DIR and
// no rootfs mounts). InvalidArgument for a spec without root.path.
Result<std::string> HostRootfs(const std::string& bundle, const std::string& host_spec_json);

// The spec of `host_spec_json` with root.path set to "rootfs" (relative to
// the guest bundle) and each bind mount's source replaced by
// `<guest_dir>/mounts/<n>`; `binds` gets the host sources in that order.
// A namespace path is kept only when it is `/proc/<pid>/ns/<type>` with
// <pid> in `pod_inits`, the guest pids of the pod's container inits (CRI
// names the pause container's that way); any other path (the Sandbox API's
// names QEMU's host pid) is removed, and the container gets a namespace of
// its own in the guest.
// InvalidArgument for a spec that is not a JSON object with root.path, and
// for a bind mount with shared or slave propagation (9p carries no mounts).
Result<std::string> GuestSpecJson(const std::string& host_spec_json, const std::string& guest_dir,
                                  std::vector<std::string>* binds,
                                  const std::set<int>& pod_inits = {});

class PodShare {
 public:
  // Its mounts are the spawner's when `spawner` is set (a confined server,
  // vm_spawner.h).
  PodShare(std::string dir, SpawnerClient* spawner) : dir_(std::move(dir)), spawner_(spawner) {}

  const std::string& dir() const { return dir_; }

  // Bind-mounts the share on itself with shared propagation, so that what
  // AddContainer mounts in it later reaches a QEMU whose mount namespace
  // is a slave of the host's (QemuJail). RemoveAll unmounts it. Once: a
  // later call (a second boot attempt) finds it done.
  Status MakeShared();

  // Makes `<share>/<id>/` with the container's rootfs (`host_rootfs`) and the
  // spec's bind sources mounted in; undoes it all on failure. `bundle` is
  // the container's (whose config.json is `host_spec_json`).
  Result<GuestContainer> AddContainer(const std::string& id, const std::string& bundle,
                                      const std::string& host_rootfs,
                                      const std::string& host_spec_json,
                                      const std::set<int>& pod_inits = {});
  // Unmounts and removes `<share>/<id>/` (idempotent).
  Status RemoveContainer(const std::string& id);
  // Unmounts everything under the share and removes it.
  Status RemoveAll();

 private:
  std::string dir_;
  SpawnerClient* spawner_;
};

}  // namespace hull::shim::vm
