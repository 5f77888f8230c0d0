// The features document `containerd-shim-hull-v2 -info` prints for the vm
// backend: built by hull (the guest's crun answers for itself only inside
// the guest), naming the VM it would boot.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "shim/backend/vm/qemu_command.h"
#include "shim/backend/vm/vm_backend.h"

namespace hull::shim::vm {

std::string VmFeaturesJson(const RuntimeOptions& options) {
  const VmOptions& vm = options.vm;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  Result<GuestAssets> assets = ResolveGuestAssets(vm, GuestAssetDirs(exe));
  nlohmann::ordered_json annotations = {
      {"org.hull.vm.machine", vm.machine},
      {"org.hull.vm.accel", vm.accel},
      {"org.hull.vm.share", vm.share},
      {"org.hull.vm.checkpoint", "unsupported"},
  };
  if (assets) {
    annotations["org.hull.vm.qemu"] = assets->qemu;
    annotations["org.hull.vm.kernel"] = assets->kernel;
    annotations["org.hull.vm.initramfs"] = assets->initramfs;
  } else {
    annotations["org.hull.vm.error"] = assets.error().message();
  }
  nlohmann::ordered_json doc = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", kGuestOciVersionMax},
      {"hooks", nlohmann::ordered_json::array()},
      {"linux",
       {{"namespaces", {"cgroup", "ipc", "mount", "pid", "uts", "user"}},
        {"cgroup", {{"v1", false}, {"v2", true}}}}},
      {"annotations", annotations},
  };
  return doc.dump();
}

}  // namespace hull::shim::vm
