#include "runtime/oci_cli/sandbox_bundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/file_util.h"

namespace hull::runtime::oci_cli {

Result<std::string> PauseBinaryBesideSelf() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ErrnoError(ec.value(), "readlink", "/proc/self/exe");
  std::string path = (self.parent_path() / kPauseBinaryName).string();
  if (::access(path.c_str(), X_OK) != 0) {
    return NotFoundError(std::string(kPauseBinaryName) +
                         " (PID 1 of the pod's sandbox) not found at " + path +
                         ": install it beside the shim");
  }
  return path;
}

oci::Spec SandboxContainerSpec(oci::Spec pod_spec) {
  oci::SpecJson& doc = pod_spec.mutable_json();
  doc["process"]["args"] = oci::SpecJson::array({"/pause"});
  doc["process"]["cwd"] = "/";
  // runsc gives the sandbox process the lowest oom_score_adj of its
  // containers; the pause spec's -998 made `runsc start` fail here
  // ("setting oom_score_adj ...: permission denied", measured).
  doc["process"].erase("oomScoreAdj");
  doc["root"] = {{"path", "rootfs"}, {"readonly", true}};
  if (auto mounts = doc.find("mounts"); mounts != doc.end() && mounts->is_array()) {
    oci::SpecJson kept = oci::SpecJson::array();
    for (const auto& m : *mounts) {
      if (m.is_object() && m.value("type", "") != "bind") kept.push_back(m);
    }
    *mounts = std::move(kept);
  }
  return pod_spec;
}

namespace {

Result<std::string> WriteBundle(const std::string& dir, const oci::Spec& pod_spec,
                                const std::string& pause_binary) {
  // 0711: runsc's sandbox, without capabilities, must reach the root.
  for (const std::string& d : {dir, dir + "/rootfs"}) {
    if (::mkdir(d.c_str(), 0711) != 0 && errno != EEXIST) return ErrnoError("mkdir", d);
  }
  const std::string pause = dir + "/rootfs/pause";
  std::error_code ec;
  std::filesystem::copy_file(pause_binary, pause, std::filesystem::copy_options::overwrite_existing,
                             ec);
  if (ec) return InternalError("copy " + pause_binary + " to " + pause + ": " + ec.message());
  if (::chmod(pause.c_str(), 0755) != 0) return ErrnoError("chmod", pause);
  HULL_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/config.json", SandboxContainerSpec(pod_spec).Dump()));
  return dir;
}

}  // namespace

Result<std::string> WriteSandboxBundle(const std::string& pod_bundle, const oci::Spec& pod_spec,
                                       const std::string& pause_binary) {
  const std::string dir = pod_bundle + "/" + kSandboxBundleDir;
  Result<std::string> written = WriteBundle(dir, pod_spec, pause_binary);
  if (!written) RemoveSandboxBundle(dir);
  return written;
}

void RemoveSandboxBundle(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace hull::runtime::oci_cli
