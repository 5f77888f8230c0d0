#include "shim/cli/delete.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "base/file_util.h"
#include "containerd/task/v2/shim.pb.h"
#include "shim/cli/shim_socket.h"
#include "shim/cli/socket_address.h"
#include "shim/config/config.h"
#include "shim/mount/mount.h"
#include "shim/pod/pod.h"

namespace hull::shim {
namespace {

// 128 + SIGKILL: what containerd reports for a task its shim cleaned up.
constexpr uint32_t kKilledExitStatus = 137;

// The init's pid from <bundle>/init.pid, or 0.
uint32_t ReadInitPid(const std::string& bundle) {
  Result<std::string> text = ReadFile(bundle + "/init.pid");
  if (!text) return 0;
  uint32_t pid = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, pid);
  return ec == std::errc() ? pid : 0;
}

// The config `start` stored in the bundle; else hull's config file; else the
// built-in defaults (delete must work whatever state it finds).
ShimConfig LoadConfig(const DeleteRequest& req, const Logger& log) {
  Result<ShimConfig> stored = ReadBundleConfig(req.bundle);
  if (stored) return *stored;
  if (stored.error().code() != Code::kNotFound) {
    log.Warn("delete {}: {}", req.cmd.id, stored.error().message());
  }
  Result<ShimConfig> defaults = LoadConfigFile(req.env.config_path);
  if (defaults) return *defaults;
  log.Warn("delete {}: {}", req.cmd.id, defaults.error().message());
  return ShimConfig();
}

// A server killed outright leaves its socket file behind. Remove it, but only
// when nothing answers on it: a pod's shim serving other containers must keep
// its socket. The bundle is writable to a confined server (docs/security.md):
// only a socket named as `start` names them is removed, never another file
// an `address` names.
void RemoveDeadSocket(const DeleteRequest& req, const Logger& log) {
  Result<std::string> address = ReadFile(req.bundle + "/address");
  if (!address) return;
  Result<std::string> path = SocketPath(*address);
  if (!path || CanConnect(*path)) return;
  struct stat st;
  if (::lstat(path->c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode) ||
      !IsShimSocketName(std::filesystem::path(*path).filename().string())) {
    log.Warn("delete {}: {} left: not a shim socket", req.cmd.id, *path);
    return;
  }
  if (::unlink(path->c_str()) != 0 && errno != ENOENT) {
    log.Warn("delete {}: remove socket {}: {}", req.cmd.id, *path, std::strerror(errno));
  }
}

}  // namespace

Result<std::string> RunDelete(const DeleteRequest& req, const Logger& log) {
  if (req.cmd.ns.empty()) return InvalidArgumentError("-namespace is required");
  if (req.cmd.id.empty()) return InvalidArgumentError("-id is required");
  if (req.bundle.empty())
    return InvalidArgumentError("no bundle (-bundle or the working directory)");

  ShimConfig config = LoadConfig(req, log);
  if (req.force_delete) {
    Status deleted = req.force_delete(config.runtime, req.cmd.ns, req.bundle, req.cmd.id);
    if (!deleted.ok()) log.Warn("delete {}: {}", req.cmd.id, deleted.message());
  }
  // Only the bundle's own rootfs directory: a symlink there (the bundle is
  // writable to a confined server) could name any tree of the host.
  const std::string rootfs = req.bundle + "/rootfs";
  struct stat st;
  if (::lstat(rootfs.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    log.Warn("delete {}: {} left: not a directory", req.cmd.id, rootfs);
  } else {
    HULL_RETURN_IF_ERROR_CTX(UnmountAll(rootfs), "delete " + req.cmd.id);
  }
  RemoveDeadSocket(req, log);
  // After the force-delete: the runtime has removed the container's own
  // cgroup, so the pod cgroup can be empty now.
  Pod::CleanUpAfterServer(req.bundle, req.cgroupfs, "delete " + req.cmd.id, log);

  containerd::task::v2::DeleteResponse response;
  response.set_pid(ReadInitPid(req.bundle));
  response.set_exit_status(kKilledExitStatus);
  timespec now = req.now ? req.now() : timespec{};
  if (!req.now) ::clock_gettime(CLOCK_REALTIME, &now);
  response.mutable_exited_at()->set_seconds(now.tv_sec);
  response.mutable_exited_at()->set_nanos(static_cast<int32_t>(now.tv_nsec));
  return response.SerializeAsString();
}

}  // namespace hull::shim
