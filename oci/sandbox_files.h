// The host-side files of a pod sandbox, as containerd's CRI plugin lays them
// out: hostname, hosts and resolv.conf under the plugin's root directory, the
// pod's /dev/shm tmpfs under its state directory. Writers take the directory
// to write into, so tests need no root; mounting the shm tmpfs needs root and
// is a separate call. Blocking file I/O: call before the pod's loop work
// starts or from a helper process.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "oci/cri_flavor.h"

namespace runtime::v1 {
class DNSConfig;
class PodSandboxConfig;
}  // namespace runtime::v1

namespace hull::oci {

// containerd's defaults for the CRI plugin's directories.
inline constexpr std::string_view kDefaultCriRootDir =
    "/var/lib/containerd/io.containerd.grpc.v1.cri";
inline constexpr std::string_view kDefaultCriStateDir = "/run/containerd/io.containerd.grpc.v1.cri";

// Where one pod's sandbox files live.
struct SandboxPaths {
  std::string root_dir;     // <root>/sandboxes/<id>: persistent files
  std::string state_dir;    // <state>/sandboxes/<id>: volatile files
  std::string hostname;     // <root_dir>/hostname
  std::string hosts;        // <root_dir>/hosts
  std::string resolv_conf;  // <root_dir>/resolv.conf
  std::string shm;          // <state_dir>/shm, the pod's /dev/shm tmpfs
  // <state_dir>/pinned-namespaces/user (containerd 2.x, pod user namespaces)
  std::string pinned_user_namespace;
};
SandboxPaths SandboxPathsFor(std::string_view cri_root_dir, std::string_view cri_state_dir,
                             std::string_view sandbox_id);

// The hostname file: the pod's hostname, or the node's when the pod has none
// (host network), and a newline.
std::string HostnameFileContent(std::string_view pod_hostname, std::string_view node_hostname);

// resolv.conf from the pod's DNS config: one "search" line (domains joined by
// spaces), one "nameserver" line per server, one "options" line; each only
// when it has entries. Empty if the config has no entries at all.
std::string ResolvConfContent(const ::runtime::v1::DNSConfig& dns);

// Host files a sandbox copies; tests point them elsewhere.
struct HostFiles {
  std::string hosts = "/etc/hosts";
  std::string resolv_conf = "/etc/resolv.conf";
  // Used when the pod has no hostname; empty means gethostname(2).
  std::string node_hostname;
};

// Writes `dir`/hostname, `dir`/hosts (a copy of the host's) and
// `dir`/resolv.conf (from dns_config, else a copy of the host's; with
// kContainerd16 also a copy when dns_config has no entries), mode 0644.
// `dir` must exist.
Status WriteSandboxFiles(const std::string& dir, const ::runtime::v1::PodSandboxConfig& config,
                         CriFlavor flavor, const HostFiles& host = {});

// The pod's /dev/shm: a tmpfs mounted nosuid,nodev,noexec with
// "mode=1777,size=67108864" (64 MiB) at SandboxPaths::shm, unless the pod
// uses the host IPC namespace (then the host's /dev/shm is bound instead).
struct ShmMountOptions {
  std::string source;
  std::string fstype;
  unsigned long flags = 0;
  std::string data;
};
ShmMountOptions SandboxShmMountOptions();

// Creates `path` (mode 0700, parents as needed) and mounts the shm tmpfs on
// it. Needs CAP_SYS_ADMIN.
Status MountSandboxShm(const std::string& path);
// Unmounts it; OK if it is not mounted or does not exist.
Status UnmountSandboxShm(const std::string& path);

}  // namespace hull::oci
