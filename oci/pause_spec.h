// The pause (sandbox) container's OCI spec, built from a PodSandboxConfig the
// way containerd's CRI plugin builds it (podsandbox controller): the default
// unix spec, then each option in containerd's order, then what containerd
// applies at container creation (seccomp, user). hull needs it in containerd
// 2.x's `sandboxer = "shim"` mode, where the shim gets only the raw
// PodSandboxConfig. The checklist and the containerd 1.6 / 2.x differences are
// in docs/pause-spec.md. Pure except for reading a Localhost seccomp profile
// and, with PauseSpecOptions::rootfs, the image's /etc/passwd and /etc/group.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "oci/cri_flavor.h"
#include "oci/sandbox_files.h"
#include "oci/spec.h"

namespace runtime::v1 {
class PodSandboxConfig;
}  // namespace runtime::v1

namespace hull::oci {

// The parts of the pause image's OCI image config the spec uses.
struct ImageConfig {
  std::vector<std::string> env;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::string user;
};

// Reads an OCI image config blob (the object with "config") or just its
// "config" object. InvalidArgument if it is not JSON or a field read has the
// wrong type.
Result<ImageConfig> ParseImageConfig(std::string_view json);

// How linux.cgroupsPath is formed from linux.cgroup_parent.
enum class CgroupPathForm {
  // containerd's rule: "<slice>:cri-containerd:<id>" when the parent's last
  // element ends in ".slice", else "<parent>/<id>".
  kAuto,
  kCgroupfs,  // always "<parent>/<id>"
  kSystemd,   // always "<basename of parent>:cri-containerd:<id>"
};

struct PauseSpecOptions {
  // The pod's (and pause container's) id.
  std::string sandbox_id;
  // The pod's network namespace; empty writes a network namespace without a
  // path (containerd's first version of the spec, before CNI). Ignored on the
  // host network.
  std::string netns_path;
  // The CRI plugin's root and state directories (sandbox file locations).
  std::string cri_root_dir = std::string(kDefaultCriRootDir);
  std::string cri_state_dir = std::string(kDefaultCriStateDir);
  // containerd namespace, for the default cgroupsPath "/<ns>/<id>".
  std::string containerd_namespace = "k8s.io";
  // The pause image reference (containerd 2.x annotation).
  std::string sandbox_image;
  // The runtime handler's `pod_annotations` globs: pod annotations matching
  // one are copied into the spec.
  std::vector<std::string> pod_annotations;

  // containerd's restrict_oom_score_adj: never go below the daemon's own
  // oom_score_adj (daemon_oom_score_adj, see CurrentOomScoreAdj()).
  bool restrict_oom_score_adj = false;
  int daemon_oom_score_adj = 0;
  // containerd's enable_unprivileged_ports / enable_unprivileged_icmp
  // (defaults false in 1.6, true in 2.x's config).
  bool enable_unprivileged_ports = false;
  bool enable_unprivileged_icmp = false;
  // Whether the daemon itself runs in a user namespace (no ping_group_range).
  bool running_in_user_namespace = false;
  // containerd 1.6's disable_cgroup: no cgroupsPath, no cpu shares.
  bool disable_cgroup = false;
  CgroupPathForm cgroup_path_form = CgroupPathForm::kAuto;

  CriFlavor flavor = CriFlavor::kContainerd2;
  // ociVersion; empty means the flavor's ("1.0.2-dev" for 1.6, "1.2.0" for
  // 2.0; later 2.x write "1.2.1" or "1.3.0").
  std::string oci_version;

  // The linux.seccomp object for a RuntimeDefault profile (containerd's
  // built-in default). Without it a RuntimeDefault request fails.
  std::optional<SpecJson> runtime_default_seccomp;
  // containerd's unset_seccomp_profile: used when the pod names no profile.
  std::string unset_seccomp_profile;
  // The pause image's unpacked rootfs, to resolve a user name or a uid's
  // group from its /etc/passwd and /etc/group. Without it a name fails and a
  // bare uid gets gid 0.
  std::string rootfs;
};

// Builds the spec. InvalidArgument for an image with neither Entrypoint nor
// Cmd, a bad user namespace, user or seccomp configuration; FailedPrecondition
// when RuntimeDefault seccomp or a user name is asked for and the options do
// not provide what resolving it needs; errno errors reading files.
Result<Spec> BuildPauseSpec(const ::runtime::v1::PodSandboxConfig& config, const ImageConfig& image,
                            const PauseSpecOptions& options);

// containerd's default unix spec (oci.GenerateSpec before any option) for
// container `id` in containerd namespace `containerd_namespace`: the base the
// pause spec starts from. Empty `oci_version` means the flavor's.
SpecJson DefaultUnixSpecJson(CriFlavor flavor, std::string_view containerd_namespace,
                             std::string_view id, std::string_view oci_version = {});

// linux.cgroupsPath for a pod container: see CgroupPathForm.
std::string CgroupsPathFor(std::string_view cgroup_parent, std::string_view id,
                           CgroupPathForm form);

// The oom_score_adj in `path` (default: this process's).
Result<int> CurrentOomScoreAdj(const std::string& path = "/proc/self/oom_score_adj");

}  // namespace hull::oci
