#include "shim/mount/spawner_mounts.h"

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/spawner_wire.h"
#include "shim/mount/mount.h"

namespace hull::shim {
namespace {

using spawner_wire::Reader;
using spawner_wire::Writer;

std::string EncodeMounts(const std::string& target, const std::vector<Mount>& mounts) {
  Writer w;
  w.Str(target);
  w.U32(static_cast<uint32_t>(mounts.size()));
  for (const Mount& m : mounts) {
    w.Str(m.type);
    w.Str(m.source);
    w.Str(m.target);
    w.U32(static_cast<uint32_t>(m.options.size()));
    for (const std::string& option : m.options) w.Str(option);
  }
  return w.Take();
}

// Every count is bounded by the message itself (each field takes at least
// four bytes), so a hostile count cannot make the spawner allocate much.
bool DecodeMounts(std::string_view payload, std::string& target, std::vector<Mount>& mounts) {
  Reader r(payload);
  uint32_t count = 0;
  if (!r.Str(target) || !r.U32(count) || count > payload.size() / 4) return false;
  mounts.resize(count);
  for (Mount& m : mounts) {
    uint32_t options = 0;
    if (!r.Str(m.type) || !r.Str(m.source) || !r.Str(m.target) || !r.U32(options) ||
        options > payload.size() / 4) {
      return false;
    }
    m.options.resize(options);
    for (std::string& option : m.options) {
      if (!r.Str(option)) return false;
    }
  }
  return r.done();
}

Result<pid_t> MountEntry(const std::vector<std::string>& bundles, std::string_view payload) {
  std::string target;
  std::vector<Mount> mounts;
  if (!DecodeMounts(payload, target, mounts)) {
    return InvalidArgumentError("mount: malformed spawner request");
  }
  HULL_ASSIGN_OR_RETURN(std::string real, RootfsTarget(bundles, target));
  HULL_RETURN_IF_ERROR(MountAll(mounts, real));
  return 0;
}

// Checked again at the unmount, where the path is now, not taken from the
// mount: the server can rename a bundle and put a symlink in its place.
Result<pid_t> UnmountEntry(const std::vector<std::string>& bundles, std::string_view payload) {
  Reader r(payload);
  std::string target;
  if (!r.Str(target) || !r.done())
    return InvalidArgumentError("unmount: malformed spawner request");
  HULL_ASSIGN_OR_RETURN(std::string real, RootfsTarget(bundles, target));
  HULL_RETURN_IF_ERROR(UnmountAll(real));
  return 0;
}

// `dir` where it really is, when that is a directory right below one of
// `bundles`. A symlink on the way (a bundle named for a host directory)
// must not lead out of them.
std::optional<std::filesystem::path> RealBundle(const std::vector<std::string>& bundles,
                                                const std::filesystem::path& dir) {
  char real[PATH_MAX];
  if (::realpath(dir.c_str(), real) == nullptr) return std::nullopt;
  const std::filesystem::path path(real);
  for (const std::string& bundle_dir : bundles) {
    if (path.parent_path() == std::filesystem::path(bundle_dir)) return path;
  }
  return std::nullopt;
}

}  // namespace

std::vector<SpawnerEntry> MountSpawnerEntries(const std::vector<std::string>& bundles) {
  return {SpawnerEntry{.name = "mount",
                       .run = [bundles](std::string_view payload, std::vector<UniqueFd>&)
                           -> Result<pid_t> { return MountEntry(bundles, payload); }},
          SpawnerEntry{.name = "unmount",
                       .run = [bundles](std::string_view payload, std::vector<UniqueFd>&)
                           -> Result<pid_t> { return UnmountEntry(bundles, payload); }}};
}

std::vector<std::string> BundleDirs(const std::string& server_bundle) {
  const std::filesystem::path bundle(server_bundle);
  const std::filesystem::path ns = bundle.parent_path();
  std::vector<std::string> dirs = {ns.string()};
  const std::filesystem::path tasks =
      ns.parent_path().parent_path() / "io.containerd.runtime.v2.task" / ns.filename();
  if (tasks != ns) dirs.push_back(tasks.string());
  return dirs;
}

bool InBundleDirs(const std::vector<std::string>& bundles, const std::string& path,
                  std::string_view name) {
  std::filesystem::path p(path);
  if (!p.is_absolute()) return false;
  if (!name.empty()) {
    if (p.filename() != name) return false;
    p = p.parent_path();
  }
  return RealBundle(bundles, p).has_value();
}

Result<std::string> RootfsTarget(const std::vector<std::string>& bundles,
                                 const std::string& target) {
  namespace fs = std::filesystem;
  auto refused = [&](std::string_view why) {
    std::string dirs;
    for (const std::string& dir : bundles) dirs += (dirs.empty() ? "" : ", ") + dir;
    return PermissionDeniedError("mount target " + target + " refused: " + std::string(why) +
                                 " (only the rootfs of a bundle in " + dirs + ")");
  };
  const fs::path path(target);
  std::optional<fs::path> bundle;
  if (path.is_absolute() && path.filename() == "rootfs") {
    bundle = RealBundle(bundles, path.parent_path());
  }
  if (!bundle) return refused("not a rootfs of the pod's bundles");
  const fs::path rootfs = *bundle / "rootfs";
  std::error_code ec;
  if (fs::is_symlink(rootfs, ec)) return refused("it is a symlink");
  return rootfs.string();
}

Status MountRootfsVia(SpawnerClient* spawner,
                      const google::protobuf::RepeatedPtrField<containerd::types::Mount>& rootfs,
                      const std::string& target) {
  if (spawner == nullptr) return MountRootfs(rootfs, target);
  if (rootfs.empty()) return Status::Ok();
  Result<pid_t> done =
      spawner->Run(kMountSpawnerEntry, EncodeMounts(target, MountsFromProto(rootfs)), {});
  return done ? Status::Ok() : done.error();
}

Status UnmountRootfsVia(SpawnerClient* spawner, const std::string& target) {
  if (spawner == nullptr) return UnmountAll(target);
  Writer w;
  w.Str(target);
  Result<pid_t> done = spawner->Run(kUnmountSpawnerEntry, w.Take(), {});
  return done ? Status::Ok() : done.error();
}

}  // namespace hull::shim
