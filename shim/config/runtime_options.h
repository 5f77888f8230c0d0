// RuntimeOptions: which backend runs a pod and how, from containerd's runc
// Options and hull's config (shim/config). Plain data: shim/backend/ turns it
// into a backend (make_backend.h); the backends themselves (runtime/) never
// see it.
#pragma once

#include <map>
#include <string>

#include "shim/config/vm_options.h"

namespace hull::shim {

// How to run the runtime, from containerd's runc Options and hull's config.
struct RuntimeOptions {
  std::string binary_name = "runc";  // "runc", "crun", "runsc", a path, or "vm"
  std::string root;                  // runtime --root; empty: /run/containerd/<binary>
  bool systemd_cgroup = false;
  bool no_pivot_root = false;
  bool no_new_keyring = false;
  std::string criu_path;
  std::string criu_image_path;
  std::string criu_work_path;
  // Extra global flags, `--<key>=<value>` in key order: the `[runsc_config]`
  // table (runsc's own flags: network, platform, debug, debug-log, ...).
  std::map<std::string, std::string> runtime_flags;
  // The `[vm]` table: what the vm backend (binary_name "vm") boots.
  VmOptions vm;
  friend bool operator==(const RuntimeOptions&, const RuntimeOptions&) = default;
};
}  // namespace hull::shim
