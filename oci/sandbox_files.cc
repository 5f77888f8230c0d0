#include "oci/sandbox_files.h"

#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/file_util.h"
#include "cri/runtime/v1/api.pb.h"

namespace hull::oci {
namespace {

// containerd's defaultShmSize: 64 MiB.
constexpr long long kShmSizeBytes = 64LL * 1024 * 1024;

std::string Join(std::string_view a, std::string_view b) {
  std::string out(a);
  if (!out.empty() && out.back() != '/') out += '/';
  out += b;
  return out;
}

template <typename Strings>
std::string JoinWith(const Strings& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

Result<std::string> NodeHostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return ErrnoError("gethostname");
  return std::string(buf);
}

Status CopyFile(const std::string& from, const std::string& to) {
  HULL_ASSIGN_OR_RETURN(std::string content, ReadFile(from));
  return WriteFileAtomic(to, content, 0644);
}

// mkdir -p with `mode` for every directory it creates.
Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir", prefix);
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(path + ": not a directory");
  return Status::Ok();
}

}  // namespace

SandboxPaths SandboxPathsFor(std::string_view cri_root_dir, std::string_view cri_state_dir,
                             std::string_view sandbox_id) {
  SandboxPaths paths;
  paths.root_dir = Join(Join(cri_root_dir, "sandboxes"), sandbox_id);
  paths.state_dir = Join(Join(cri_state_dir, "sandboxes"), sandbox_id);
  paths.hostname = Join(paths.root_dir, "hostname");
  paths.hosts = Join(paths.root_dir, "hosts");
  paths.resolv_conf = Join(paths.root_dir, "resolv.conf");
  paths.shm = Join(paths.state_dir, "shm");
  paths.pinned_user_namespace = Join(paths.state_dir, "pinned-namespaces/user");
  return paths;
}

std::string HostnameFileContent(std::string_view pod_hostname, std::string_view node_hostname) {
  return std::string(pod_hostname.empty() ? node_hostname : pod_hostname) + "\n";
}

std::string ResolvConfContent(const ::runtime::v1::DNSConfig& dns) {
  std::string out;
  if (!dns.searches().empty()) out += "search " + JoinWith(dns.searches(), " ") + "\n";
  for (const std::string& server : dns.servers()) out += "nameserver " + server + "\n";
  if (!dns.options().empty()) out += "options " + JoinWith(dns.options(), " ") + "\n";
  return out;
}

Status WriteSandboxFiles(const std::string& dir, const ::runtime::v1::PodSandboxConfig& config,
                         CriFlavor flavor, const HostFiles& host) {
  std::string node_hostname = host.node_hostname;
  if (config.hostname().empty() && node_hostname.empty()) {
    HULL_ASSIGN_OR_RETURN(node_hostname, NodeHostname());
  }
  HULL_RETURN_IF_ERROR(WriteFileAtomic(
      Join(dir, "hostname"), HostnameFileContent(config.hostname(), node_hostname), 0644));
  HULL_RETURN_IF_ERROR_CTX(CopyFile(host.hosts, Join(dir, "hosts")), "sandbox hosts file");

  // containerd 2.x writes whatever a present dns_config yields, even nothing;
  // 1.6 falls back to the host's file when the content would be empty.
  const std::string resolv_path = Join(dir, "resolv.conf");
  std::string content;
  bool from_dns_config = config.has_dns_config();
  if (from_dns_config) {
    content = ResolvConfContent(config.dns_config());
    if (content.empty() && flavor == CriFlavor::kContainerd16) from_dns_config = false;
  }
  if (from_dns_config) return WriteFileAtomic(resolv_path, content, 0644);
  return CopyFile(host.resolv_conf, resolv_path).WithContext("sandbox resolv.conf");
}

ShmMountOptions SandboxShmMountOptions() {
  return {"shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
          "mode=1777,size=" + std::to_string(kShmSizeBytes)};
}

Status MountSandboxShm(const std::string& path) {
  HULL_RETURN_IF_ERROR(MakeDirs(path, 0700));
  ShmMountOptions shm = SandboxShmMountOptions();
  if (::mount(shm.source.c_str(), path.c_str(), shm.fstype.c_str(), shm.flags, shm.data.c_str()) !=
      0) {
    return ErrnoError("mount shm on", path);
  }
  return Status::Ok();
}

Status UnmountSandboxShm(const std::string& path) {
  if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) == 0) return Status::Ok();
  // EINVAL: not a mount point; ENOENT: already gone.
  if (errno == EINVAL || errno == ENOENT) return Status::Ok();
  return ErrnoError("umount", path);
}

}  // namespace hull::oci
