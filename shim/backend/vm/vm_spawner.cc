#include "shim/backend/vm/vm_spawner.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "base/file_util.h"
#include "base/mountinfo.h"
#include "base/spawner_wire.h"
#include "base/unique_fd.h"
#include "oci/spec.h"
#include "shim/backend/vm/pod_share.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/backend/vm/vm_template.h"
#include "shim/cli/socket_address.h"
#include "shim/mount/mount.h"
#include "shim/mount/spawner_mounts.h"

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;
using spawner_wire::Reader;
using spawner_wire::Writer;

enum NetworkOp : uint8_t { kWire = 1, kUnwire = 2 };
enum ShareOp : uint8_t { kMakeShared = 1, kBind = 2, kUnmount = 3 };

Result<std::string> RealPath(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return ErrnoError("realpath", path);
  return std::string(real);
}

bool AtOrBelow(const std::string& path, const std::string& root) {
  return path == root ||
         (path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/');
}

// The netns the pod's network is wired in: the one its first container's
// spec names, or (a pod of the Sandbox API, whose server starts before it
// knows) the first one asked for, for the spawner's life.
Status CheckNetns(VmPod& pod, const std::string& netns) {
  if (netns.empty() || netns[0] != '/') {
    return PermissionDeniedError("network namespace " + netns + " refused: not a path");
  }
  if (pod.netns.empty()) pod.netns = netns;
  if (netns != pod.netns) {
    return PermissionDeniedError("network namespace " + netns + " refused: the pod's is " +
                                 pod.netns);
  }
  return Status::Ok();
}

// `<kRunRoot>/<id>/share` of the pod (`<id>` one of its ids), when `path`
// is at or below it; PermissionDenied otherwise.
Result<std::string> ShareRoot(const VmPod& pod, const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  for (const std::string& id : pod.ids) {
    const std::string root = std::string(kRunRoot) + "/" + id + "/share";
    if (p.string() == path && AtOrBelow(path, root)) return root;
  }
  return PermissionDeniedError(path + " refused: not in the pod's share (" + std::string(kRunRoot) +
                               "/<pod>/share)");
}

// `path`'s share, resolved: PermissionDenied when a symlink leads it out.
Result<std::string> RealShareRoot(const VmPod& pod, const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string root, ShareRoot(pod, path));
  HULL_ASSIGN_OR_RETURN(std::string real, RealPath(root));
  if (real != root) return PermissionDeniedError(root + " refused: it is reached by a symlink");
  return root;
}

Status BindMount(const std::string& source, const std::string& target) {
  if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return ErrnoError("bind-mount " + source + " on", target);
  }
  return Status::Ok();
}

Status MakeSharedMount(const std::string& dir) {
  HULL_ASSIGN_OR_RETURN(std::vector<MountInfo> table, ReadMountInfo());
  for (const MountInfo& m : table) {
    if (m.mount_point == dir) return Status::Ok();
  }
  if (::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return ErrnoError("bind-mount the share on itself:", dir);
  }
  if (::mount(nullptr, dir.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
    Status shared = ErrnoError("make shared:", dir);
    ::umount2(dir.c_str(), MNT_DETACH);
    return shared;
  }
  return Status::Ok();
}

// A bind for a confined server: `source` must be the rootfs or a bind
// source of `bundle`'s config.json, `bundle` one of the pod's containers
// (its grouping id is the pod's), and `target` is mounted on through a
// descriptor opened without following a last symlink and checked to be
// below the share, so the server cannot swap in a path to the host's files.
Status CheckedBind(const VmPod& pod, const std::string& bundle, const std::string& source,
                   const std::string& target) {
  if (!InBundleDirs(pod.bundles, bundle, "")) {
    return PermissionDeniedError("bundle " + bundle + " is not in the pod's bundle directories");
  }
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(bundle + "/config.json"));
  HULL_ASSIGN_OR_RETURN(oci::Spec spec, oci::Spec::Parse(text));
  if (!pod.ids.contains(GroupingId(spec.Annotations(), fs::path(bundle).filename().string()))) {
    return PermissionDeniedError("bundle " + bundle + " is a container of another pod");
  }
  std::vector<std::string> sources;
  HULL_RETURN_IF_ERROR(GuestSpecJson(text, std::string(kGuestSharePath), &sources).status());
  HULL_ASSIGN_OR_RETURN(std::string rootfs, HostRootfs(bundle, text));
  sources.push_back(rootfs);
  if (std::find(sources.begin(), sources.end(), source) == sources.end()) {
    return PermissionDeniedError("bind source " + source + " refused: " + bundle +
                                 "/config.json names no such rootfs or bind mount");
  }
  HULL_ASSIGN_OR_RETURN(std::string root, RealShareRoot(pod, target));
  UniqueFd fd(::open(target.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("open", target);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat", target);
  if (S_ISLNK(st.st_mode)) {
    return PermissionDeniedError("bind target " + target + " refused: it is a symlink");
  }
  const std::string via = "/proc/self/fd/" + std::to_string(fd.get());
  char real[PATH_MAX];
  ssize_t n = ::readlink(via.c_str(), real, sizeof real - 1);
  if (n <= 0) return ErrnoError("readlink", via);
  const std::string where(real, static_cast<size_t>(n));
  if (where == root || !AtOrBelow(where, root)) {
    return PermissionDeniedError("bind target " + target + " refused: it is " + where +
                                 ", not inside " + root);
  }
  return BindMount(source, via);
}

Result<SpawnerReply> NetworkEntry(VmPod& pod, std::string_view payload) {
  Reader r(payload);
  uint8_t op = 0;
  std::string netns;
  if (!r.U8(op) || !r.Str(netns) || !r.done() || (op != kWire && op != kUnwire)) {
    return InvalidArgumentError("vm-network: malformed spawner request");
  }
  HULL_RETURN_IF_ERROR(CheckNetns(pod, netns));
  if (op == kUnwire) {
    HULL_RETURN_IF_ERROR(UnwirePodNetwork(netns));
    return SpawnerReply{};
  }
  HULL_ASSIGN_OR_RETURN(PodNic nic, WirePodNetwork(netns));
  Writer w;
  w.Str(nic.mac);
  w.Str(nic.network.SerializeAsString());
  SpawnerReply reply{.data = w.Take()};
  reply.fds.push_back(std::move(nic.tap));
  return reply;
}

Result<SpawnerReply> ShareEntry(const VmPod& pod, std::string_view payload) {
  Reader r(payload);
  uint8_t op = 0;
  std::string a, b, c;
  if (!r.U8(op) || !r.Str(a) || !r.Str(b) || !r.Str(c) || !r.done()) {
    return InvalidArgumentError("vm-share: malformed spawner request");
  }
  if (op == kMakeShared) {
    HULL_ASSIGN_OR_RETURN(std::string root, RealShareRoot(pod, a));
    if (root != a) return PermissionDeniedError(a + " refused: not a pod's share");
    HULL_RETURN_IF_ERROR(MakeSharedMount(root));
  } else if (op == kBind) {
    HULL_RETURN_IF_ERROR(CheckedBind(pod, a, b, c));
  } else if (op == kUnmount) {
    HULL_RETURN_IF_ERROR(ShareRoot(pod, a).status());
    Result<std::string> real = RealPath(a);
    if (!real) return SpawnerReply{};  // gone: nothing mounted there
    HULL_ASSIGN_OR_RETURN(std::string root, RealShareRoot(pod, a));
    if (!AtOrBelow(*real, root)) {
      return PermissionDeniedError("unmount " + a + " refused: it is " + *real + ", not in " +
                                   root);
    }
    HULL_RETURN_IF_ERROR(UnmountAll(*real));
  } else {
    return InvalidArgumentError("vm-share: malformed spawner request");
  }
  return SpawnerReply{};
}

Status ShareCall(SpawnerClient* spawner, ShareOp op, std::string_view a, std::string_view b = "",
                 std::string_view c = "") {
  Writer w;
  w.U8(op);
  w.Str(a);
  w.Str(b);
  w.Str(c);
  return spawner->Call(kVmShareSpawnerEntry, w.Take(), {}).status();
}

// ---- QEMU's command line ----

Status Refused(const SpawnOptions& options, std::string_view why) {
  std::string call;
  for (const std::string& arg : options.argv) {
    if (call.size() > 200) {
      call += " ...";
      break;
    }
    call += (call.empty() ? "" : " ") + arg;
  }
  return PermissionDeniedError("spawner refused \"" + call + "\": " + std::string(why));
}

// `value`'s comma-separated `key=` fields.
std::map<std::string, std::string> Fields(const std::string& value) {
  std::map<std::string, std::string> fields;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    const std::string field = value.substr(start, comma - start);
    const size_t eq = field.find('=');
    fields[field.substr(0, eq)] = eq == std::string::npos ? "" : field.substr(eq + 1);
    start = comma + 1;
  }
  return fields;
}

// `path` is a file QEMU may open or create: `<kRunRoot>/<id>/<name>` of the
// pod, `<kTemplateRoot>/<dir>/<name>` of a template (a template VM's
// sockets, console and share; a clone's RAM file). The directory holding it is
// reached by no symlink, and it is no symlink itself: QEMU opens it with its
// capabilities, so a server must not point it at a host file. (What the
// server changes between this check and QEMU's open is for item 4's chroot
// to close: docs/security.md, "Not done".)
bool QemuPathAllowed(const VmPod& pod, const std::string& path) {
  const fs::path p(path);
  if (!p.is_absolute() || p.lexically_normal() != p || p.filename().empty()) return false;
  const fs::path dir = p.parent_path();
  const bool allowed =
      (dir.parent_path() == fs::path(kRunRoot) && pod.ids.contains(dir.filename().string())) ||
      (dir.parent_path() == fs::path(kTemplateRoot));
  if (!allowed) return false;
  // A directory that is not there yet cannot lead anywhere (QEMU fails).
  Result<std::string> real_dir = RealPath(dir.string());
  if (real_dir && *real_dir != dir.string()) return false;
  std::error_code ec;
  return !fs::is_symlink(p, ec);
}

// The options QemuArgv writes, each with a check of its value.
bool QemuOptionAllowed(const QemuRule& rule, const std::string& option, const std::string& value) {
  const VmPod& pod = rule.pod;
  const std::map<std::string, std::string> f = Fields(value);
  auto field = [&](const std::string& key) {
    auto it = f.find(key);
    return it == f.end() ? std::string() : it->second;
  };
  if (option == "-kernel") return value == rule.assets.kernel;
  if (option == "-initrd") return value == rule.assets.initramfs;
  const bool own_user = !rule.assets.share_helper.empty();
  if (option == "-chardev") {
    // A QEMU with a user of its own gets descriptors, never paths.
    if (own_user) {
      return value == "file,id=console,path=/dev/fdset/" + std::to_string(kConsoleFd) ||
             value == "socket,id=agent,fd=" + std::to_string(kAgentFd) + ",server=on,wait=off" ||
             value == "socket,id=qmp,fd=" + std::to_string(kQmpFd) + ",server=on,wait=off";
    }
    return (value.starts_with("file,") || value.starts_with("socket,")) &&
           QemuPathAllowed(pod, field("path"));
  }
  if (option == "-add-fd") {
    const std::string fd = std::to_string(kConsoleFd);
    return own_user && value == "fd=" + fd + ",set=" + fd;
  }
  if (option == "-mon") return own_user && value == "chardev=qmp,mode=control";
  if (option == "-name") {
    // hull:<run directory>: that of a file QEMU may have.
    return value.starts_with("hull:") && QemuPathAllowed(pod, value.substr(5) + "/agent.sock");
  }
  if (option == "-qmp") {
    if (own_user) return false;
    const size_t comma = value.find(',');
    return value.starts_with("unix:") &&
           QemuPathAllowed(pod,
                           value.substr(5, comma == std::string::npos ? value.npos : comma - 5));
  }
  if (option == "-fsdev") {
    if (own_user) return value == "proxy,id=pod,sock_fd=" + std::to_string(kShareFd);
    // A pod's share, or a template VM's (empty; clones get the pod's).
    const std::string path = field("path");
    return value.starts_with("local,") && fs::path(path).filename() == "share" &&
           QemuPathAllowed(pod, path) && field("security_model") == "none";
  }
  if (option == "-object") {
    if (value.starts_with("memory-backend-memfd,")) return true;
    const std::string path = field("mem-path");
    return value.starts_with("memory-backend-file,") &&
           fs::path(path).parent_path().parent_path() == fs::path(kTemplateRoot) &&
           QemuPathAllowed(pod, path);
  }
  if (option == "-device") {
    for (std::string_view device :
         {"virtio-serial", "virtserialport,", "virtio-9p", "virtio-net", "virtio-balloon"}) {
      if (value.starts_with(device)) return true;
    }
    return false;
  }
  if (option == "-netdev") {
    // A descriptor the spawner was handed, or no host side at all: never a
    // script or helper QEMU would run.
    return (value.starts_with("tap,") || value.starts_with("hubport,")) && !f.contains("script") &&
           !f.contains("downscript") && !f.contains("helper") && !f.contains("ifname") &&
           !f.contains("vhostfd");
  }
  if (option == "-serial") return value == "chardev:console";
  if (option == "-display") return value == "none";
  if (option == "-incoming") return value == "defer";
  if (option == "-global") return value == "virtio-mmio.force-legacy=false";
  if (option == "-sandbox") return true;  // checked with the jail
  if (option == "-machine") return value.starts_with("memory-backend=") && f.size() == 1;
  // Sizes, machine type, accelerator and CPU model, the kernel's command
  // line: no path and no device in them.
  static const std::set<std::string_view> kFree = {"-M", "-accel", "-cpu", "-smp", "-m", "-append"};
  return kFree.contains(option);
}

}  // namespace

VmPod ReadVmPod(const std::string& server_bundle) {
  VmPod pod{.bundles = BundleDirs(server_bundle)};
  const std::string id = fs::path(server_bundle).filename().string();
  pod.ids.insert(id);
  Result<std::string> text = ReadFile(server_bundle + "/config.json");
  Result<oci::Spec> spec = text ? oci::Spec::Parse(*text) : Result<oci::Spec>(text.error());
  if (!spec) return pod;  // a Sandbox API pod: no spec yet
  pod.ids.insert(GroupingId(spec->Annotations(), id));
  for (const oci::Namespace& ns : spec->Namespaces()) {
    if (ns.type == "network") pod.netns = ns.path;
  }
  return pod;
}

std::vector<SpawnerEntry> VmSpawnerEntries(const VmPod& pod) {
  // The spawner is one thread: the entries share the pod (its netns is
  // pinned at the first wire when the spec named none).
  auto shared = std::make_shared<VmPod>(pod);
  return {SpawnerEntry{
              .name = "vm-network",
              .call = [shared](std::string_view payload,
                               std::vector<UniqueFd>&) { return NetworkEntry(*shared, payload); }},
          SpawnerEntry{.name = "vm-share",
                       .call = [shared](std::string_view payload, std::vector<UniqueFd>&) {
                         return ShareEntry(*shared, payload);
                       }}};
}

Result<PodNic> WirePodNetworkVia(SpawnerClient* spawner, const std::string& netns_path) {
  if (spawner == nullptr) return WirePodNetwork(netns_path);
  Writer w;
  w.U8(kWire);
  w.Str(netns_path);
  HULL_ASSIGN_OR_RETURN(SpawnerReply reply, spawner->Call(kVmNetworkSpawnerEntry, w.Take(), {}));
  Reader r(reply.data);
  PodNic nic;
  std::string network;
  if (!r.Str(nic.mac) || !r.Str(network) || !r.done() || reply.fds.size() != 1 ||
      !nic.network.ParseFromString(network)) {
    return InternalError("vm-network: malformed spawner reply");
  }
  nic.tap = std::move(reply.fds[0]);
  return nic;
}

Status UnwirePodNetworkVia(SpawnerClient* spawner, const std::string& netns_path) {
  if (spawner == nullptr) return UnwirePodNetwork(netns_path);
  if (netns_path.empty() || ::access(netns_path.c_str(), F_OK) != 0) return Status::Ok();
  Writer w;
  w.U8(kUnwire);
  w.Str(netns_path);
  return spawner->Call(kVmNetworkSpawnerEntry, w.Take(), {}).status();
}

Status MakeSharedVia(SpawnerClient* spawner, const std::string& share) {
  if (spawner == nullptr) return MakeSharedMount(share);
  return ShareCall(spawner, kMakeShared, share);
}

Status BindVia(SpawnerClient* spawner, const std::string& bundle, const std::string& source,
               const std::string& target) {
  if (spawner == nullptr) return BindMount(source, target);
  return ShareCall(spawner, kBind, bundle, source, target);
}

Status UnmountAllVia(SpawnerClient* spawner, const std::string& dir) {
  if (spawner == nullptr) return UnmountAll(dir);
  return ShareCall(spawner, kUnmount, dir);
}

Status CheckQemuSpawn(const QemuRule& rule, const SpawnOptions& options) {
  const std::vector<std::string>& argv = options.argv;
  if (argv.empty() || argv[0] != rule.assets.qemu)
    return Refused(options, "not the configured QEMU");
  if (options.env.has_value() || !options.cwd.empty()) {
    return Refused(options, "QEMU takes the spawner's environment and directory");
  }
  if (rule.jail) {
    if (!options.jail || options.jail->capabilities != rule.jail->capabilities) {
      return Refused(options, "[vm] jail is on: QEMU runs jailed, with QemuJail's capabilities");
    }
    // A user of its own: the one made from this spawner's pid (no other
    // pod's QEMU shares it), the jail group, and /dev/kvm's group at most.
    if (rule.jail->uid != 0 &&
        (options.jail->uid != rule.jail->uid + static_cast<uid_t>(::getpid()) ||
         options.jail->gid != rule.jail->gid || options.jail->groups != rule.jail->groups)) {
      return Refused(options, "[vm] jail is on: QEMU runs as uid jail_id_base + " +
                                  std::to_string(::getpid()) + ", gid jail_id_base");
    }
    if (rule.jail->uid == 0 && (options.jail->uid != 0 || !options.jail->groups.empty())) {
      return Refused(options, "the jail's user is root's with no share helper");
    }
    if (!SameFilter(options.jail->seccomp, rule.jail->seccomp)) {
      return Refused(options, "[vm] jail is on: QEMU runs under hull's seccomp filter");
    }
    if (rule.jail->uid != 0) {
      // Its root: its pod's (or template's) jail directory, holding exactly
      // what RootQemuJail gives it.
      const std::string& root = options.jail->root;
      if (fs::path(root).filename() != "jail" || !QemuPathAllowed(rule.pod, root)) {
        return Refused(options, "QEMU's root is the jail directory of its run directory");
      }
      std::string ram_file;
      for (size_t i = 1; i + 1 < argv.size(); ++i) {
        if (argv[i] == "-object" && argv[i + 1].starts_with("memory-backend-file,")) {
          const auto fields = Fields(argv[i + 1]);
          if (auto it = fields.find("mem-path"); it != fields.end()) ram_file = it->second;
        }
      }
      SpawnJail expected;
      RootQemuJail(expected, root, rule.assets, VmOptions{.accel = rule.kvm ? "kvm" : "tcg"},
                   ram_file);
      if (options.jail->binds != expected.binds || options.jail->links != expected.links) {
        return Refused(options, "QEMU's root holds only its own files");
      }
    } else if (!options.jail->root.empty()) {
      return Refused(options, "QEMU as root keeps the host's root");
    }
    for (const std::string& dir : options.jail->hide) {
      if (std::find(rule.jail->hide.begin(), rule.jail->hide.end(), dir) == rule.jail->hide.end()) {
        return Refused(options, "the jail hides " + dir + ", which it never hides");
      }
    }
    auto sandbox = std::find(argv.begin(), argv.end(), "-sandbox");
    if (sandbox == argv.end() || sandbox + 1 == argv.end() ||
        *(sandbox + 1) != kQemuSandboxOptions) {
      return Refused(
          options, "[vm] jail is on: QEMU runs with -sandbox " + std::string(kQemuSandboxOptions));
    }
  }
  static const std::set<std::string_view> kFlags = {"-nodefaults", "-no-user-config", "-no-reboot"};
  for (size_t i = 1; i < argv.size(); ++i) {
    if (kFlags.contains(argv[i])) continue;
    if (i + 1 == argv.size() || !QemuOptionAllowed(rule, argv[i], argv[i + 1])) {
      return Refused(options, "option " + argv[i] + (i + 1 < argv.size() ? " " + argv[i + 1] : "") +
                                  " is not one hull gives QEMU");
    }
    ++i;
  }
  return Status::Ok();
}

Status CheckShareHelperSpawn(const QemuRule& rule, const SpawnOptions& options) {
  const std::vector<std::string>& argv = options.argv;
  if (rule.assets.share_helper.empty() || argv.size() != 6 ||
      argv != ShareHelperArgv(rule.assets, argv[5])) {
    return Refused(options, "not the configured share helper's command line");
  }
  if (fs::path(argv[5]).filename() != "share" || !QemuPathAllowed(rule.pod, argv[5])) {
    return Refused(options, "the helper serves only a pod's or a template's share");
  }
  if (options.env.has_value() || !options.cwd.empty()) {
    return Refused(options, "the share helper takes the spawner's environment and directory");
  }
  // Its jail, when QEMU has one (ShareHelperJail), and exactly that.
  const std::optional<SpawnJail> jail = ShareHelperJail(
      VmOptions{.jail = rule.jail.has_value(), .share_helper = rule.assets.share_helper});
  if (jail.has_value() != options.jail.has_value() ||
      (jail &&
       (options.jail->capabilities != jail->capabilities || !options.jail->hide.empty() ||
        options.jail->uid != 0 || !options.jail->groups.empty() || !options.jail->root.empty() ||
        !SameFilter(options.jail->seccomp, jail->seccomp)))) {
    return Refused(options, "the share helper runs in its own jail, as configured");
  }
  for (const auto& [child_fd, parent_fd] : options.fds) {
    if (child_fd != 1 && child_fd != 2 && child_fd != kShareHelperFd) {
      return Refused(options, "the share helper gets only its socket and a log");
    }
  }
  return Status::Ok();
}

}  // namespace hull::shim::vm
