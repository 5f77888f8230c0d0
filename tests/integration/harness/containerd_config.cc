#include <string_view>

#include "tests/integration/harness/containerd_config_internal.h"

namespace hull::itest::internal {

namespace {

std::string Quote(const std::string& s) {
  return "\"" + s + "\"";
}

constexpr std::string_view kCriV2Runtimes =
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.";
constexpr std::string_view kCriV3Runtimes =
    "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.";

// containerd 1.6's CRI plugin (config version 2).
std::string CriConfigV2(const ContainerdOptions& options, const ConfigInputs& in) {
  const std::string cri = "[plugins.\"io.containerd.grpc.v1.cri\"";
  std::string toml;
  toml += cri + "]\n";
  toml += "  sandbox_image = \"registry.k8s.io/pause:3.6\"\n";
  toml += "  restrict_oom_score_adj = true\n";
  toml += "  netns_mounts_under_state_dir = true\n";
  toml += "  stream_server_address = \"127.0.0.1\"\n";
  toml += "  stream_server_port = \"0\"\n";
  toml += cri + ".containerd]\n";
  toml += "  snapshotter = " + Quote(in.snapshotter) + "\n";
  toml += "  default_runtime_name = \"runc\"\n";
  toml += cri + ".containerd.runtimes.runc]\n";
  toml += "  runtime_type = \"io.containerd.runc.v2\"\n";
  toml += cri + ".containerd.runtimes.hull]\n";
  toml += "  runtime_type = \"io.containerd.hull.v2\"\n";
  toml += cri + ".cni]\n";
  toml += "  bin_dir = " + Quote(in.cni_bin_dir) + "\n";
  toml += "  conf_dir = " + Quote(in.dir + "/cni/net.d") + "\n";
  toml += "  max_conf_num = 1\n\n";
  if (!options.runtime_handlers_toml.empty()) toml += options.runtime_handlers_toml + "\n";
  return toml;
}

// containerd 2.x's three CRI plugins (config version 3): the same settings.
// Handler tables written for 1.6 move to the runtime plugin.
std::string CriConfigV3(const ContainerdOptions& options, const ConfigInputs& in) {
  const std::string images = "[plugins.\"io.containerd.cri.v1.images\"";
  const std::string runtime = "[plugins.\"io.containerd.cri.v1.runtime\"";
  std::string toml;
  toml += images + "]\n";
  toml += "  snapshotter = " + Quote(in.snapshotter) + "\n";
  toml += images + ".pinned_images]\n";
  toml += "  sandbox = \"registry.k8s.io/pause:3.6\"\n";
  toml += runtime + "]\n";
  toml += "  restrict_oom_score_adj = true\n";
  toml += "  netns_mounts_under_state_dir = true\n";
  toml += runtime + ".containerd]\n";
  toml += "  default_runtime_name = \"runc\"\n";
  toml += runtime + ".containerd.runtimes.runc]\n";
  toml += "  runtime_type = \"io.containerd.runc.v2\"\n";
  toml += runtime + ".containerd.runtimes.hull]\n";
  toml += "  runtime_type = \"io.containerd.hull.v2\"\n";
  toml += runtime + ".cni]\n";
  toml += "  bin_dir = " + Quote(in.cni_bin_dir) + "\n";
  toml += "  conf_dir = " + Quote(in.dir + "/cni/net.d") + "\n";
  toml += "  max_conf_num = 1\n";
  toml += "[plugins.\"io.containerd.grpc.v1.cri\"]\n";
  toml += "  stream_server_address = \"127.0.0.1\"\n";
  toml += "  stream_server_port = \"0\"\n\n";
  std::string handlers = options.runtime_handlers_toml;
  for (size_t pos = 0; (pos = handlers.find(kCriV2Runtimes, pos)) != std::string::npos;) {
    handlers.replace(pos, kCriV2Runtimes.size(), kCriV3Runtimes);
    pos += kCriV3Runtimes.size();
  }
  if (!handlers.empty()) toml += handlers + "\n";
  return toml;
}

}  // namespace

std::string ContainerdConfigToml(const ContainerdOptions& options, const ConfigInputs& in) {
  const bool v2 = !options.containerd_dir.empty();
  // Plugins this host cannot use or tests do not want: the snapshotters for
  // filesystems that are not here, and "opt", which would create
  // /opt/containerd outside the private directory. (The deprecated v1 runtime
  // must stay: 1.6's tasks service, and so CRI, fail to load without it.)
  std::string disabled =
      "\"io.containerd.internal.v1.opt\", "
      "\"io.containerd.snapshotter.v1.aufs\", \"io.containerd.snapshotter.v1.btrfs\", "
      "\"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.snapshotter.v1.zfs\"";
  if (!options.enable_cri) {
    disabled += ", \"io.containerd.grpc.v1.cri\"";
    // 2.x splits CRI into three plugins.
    if (v2) disabled += ", \"io.containerd.cri.v1.images\", \"io.containerd.cri.v1.runtime\"";
  }

  std::string toml;
  toml += "# Written by the hull integration-test harness.\n";
  toml += v2 ? "version = 3\n" : "version = 2\n";
  toml += "root = " + Quote(in.dir + "/root") + "\n";
  toml += "state = " + Quote(in.dir + "/state") + "\n";
  toml += "temp = " + Quote(in.dir + "/tmp") + "\n";
  toml += "disabled_plugins = [" + disabled + "]\n\n";
  toml += "[grpc]\n  address = " + Quote(in.dir + "/containerd.sock") + "\n\n";
  // ttrpc: empty address means <grpc address>.ttrpc. No debug socket.
  toml += "[debug]\n  address = \"\"\n  level = \"debug\"\n\n";

  if (options.enable_cri) toml += v2 ? CriConfigV3(options, in) : CriConfigV2(options, in);
  if (!options.extra_config.empty()) toml += options.extra_config + "\n";
  return toml;
}

std::string CniConflist(const ConfigInputs& in) {
  return R"({
  "cniVersion": "1.0.0",
  "name": ")" +
         in.cni_network + R"(",
  "plugins": [
    {
      "type": "bridge",
      "bridge": ")" +
         in.cni_network + R"(",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": ")" +
         in.dir + R"(/cni/ipam",
        "ranges": [[{"subnet": ")" +
         kPodSubnet + R"(", "rangeEnd": ")" + kPodRangeEnd + R"("}]],
        "routes": []
      }
    },
    {"type": "loopback"}
  ]
}
)";
}

}  // namespace hull::itest::internal
