#include "oci/pause_spec.h"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>

#include "base/file_util.h"
#include "base/path.h"
#include "cri/runtime/v1/api.pb.h"
#include "oci/annotations.h"
#include "oci/user.h"

namespace hull::oci {
namespace {

using ::runtime::v1::NamespaceMode;
using ::runtime::v1::PodSandboxConfig;
using ::runtime::v1::SecurityProfile;

// containerd's defaultSandboxOOMAdj (kubernetes#47938) and
// DefaultSandboxCPUshares.
constexpr int kSandboxOomScoreAdj = -998;
constexpr uint64_t kDefaultSandboxCpuShares = 2;
constexpr std::string_view kDevShm = "/dev/shm";
constexpr std::string_view kResolvConf = "/etc/resolv.conf";

struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

// The spec under construction, typed, so each step of the checklist is a
// plain field change; ToJson() writes it with the runtime-spec Go types'
// field order and omitempty rules, which is what containerd writes.
struct Draft {
  std::string oci_version;
  // process
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> additional_gids;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd = "/";
  std::vector<std::string> capabilities;  // bounding = effective = permitted
  bool rlimit_nofile = true;
  bool no_new_privileges = true;
  std::string apparmor_profile;
  std::optional<int> oom_score_adj;
  std::string selinux_label;
  // root, hostname, mounts, annotations
  std::string root_path = "rootfs";
  bool root_readonly = false;
  std::string hostname;
  std::vector<Mount> mounts;
  std::map<std::string, std::string> annotations;
  // linux
  std::vector<IdMapping> uid_mappings;
  std::vector<IdMapping> gid_mappings;
  std::map<std::string, std::string> sysctl;
  std::optional<uint64_t> cpu_shares;
  std::string cgroups_path;
  std::vector<Namespace> namespaces;
  SpecJson seccomp;  // null: none
  std::vector<std::string> masked_paths;
  std::vector<std::string> readonly_paths;
  std::string mount_label;
};

// --- the default unix spec (oci.GenerateSpec -> populateDefaultUnixSpec) ---

Draft DefaultUnixSpec(CriFlavor flavor, std::string_view containerd_namespace, std::string_view id,
                      std::string_view oci_version) {
  const bool v16 = flavor == CriFlavor::kContainerd16;
  Draft d;
  d.oci_version = !oci_version.empty() ? std::string(oci_version) : v16 ? "1.0.2-dev" : "1.2.0";
  d.capabilities = {"CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
                    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
                    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
                    "CAP_KILL",    "CAP_AUDIT_WRITE"};
  d.masked_paths = {"/proc/acpi",        "/proc/asound",        "/proc/kcore",
                    "/proc/keys",        "/proc/latency_stats", "/proc/timer_list",
                    "/proc/timer_stats", "/proc/sched_debug",   "/sys/firmware"};
  if (!v16) d.masked_paths.push_back("/sys/devices/virtual/powercap");
  d.masked_paths.push_back("/proc/scsi");
  d.readonly_paths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  d.cgroups_path = JoinPath({"/", containerd_namespace, id});
  d.namespaces = {{"pid", ""}, {"ipc", ""}, {"uts", ""}, {"mount", ""}, {"network", ""}};
  d.mounts = {
      {"/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}},
      {"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
      {"/dev/pts",
       "devpts",
       "devpts",
       {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
      {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
      {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}},
      {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}},
      {"/run", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
  };
  return d;
}

// --- helpers for the steps ---

void RemoveMountsAt(Draft& d, std::string_view destination) {
  std::erase_if(d.mounts, [&](const Mount& m) { return CleanPath(m.destination) == destination; });
}

void RemoveNamespace(Draft& d, std::string_view type) {
  std::erase_if(d.namespaces, [&](const Namespace& ns) { return ns.type == type; });
}

// oci.WithLinuxNamespace: replace the entry of that type, or append.
void SetNamespace(Draft& d, const Namespace& ns) {
  for (Namespace& existing : d.namespaces) {
    if (existing.type == ns.type) {
      existing = ns;
      return;
    }
  }
  d.namespaces.push_back(ns);
}

// oci.WithEnv: entries replace same-named ones, "NAME" without '=' unsets.
std::vector<std::string> ReplaceOrAppendEnv(std::vector<std::string> defaults,
                                            const std::vector<std::string>& overrides) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < defaults.size(); ++i) {
    index.emplace(defaults[i].substr(0, defaults[i].find('=')), i);
  }
  for (const std::string& value : overrides) {
    size_t eq = value.find('=');
    auto it = index.find(value.substr(0, eq));
    if (eq == std::string::npos) {
      if (it != index.end()) defaults[it->second].clear();
    } else if (it != index.end()) {
      defaults[it->second] = value;
    } else {
      defaults.push_back(value);
    }
  }
  std::erase_if(defaults, [](const std::string& e) { return e.empty(); });
  return defaults;
}

// Go's path.Match, through fnmatch(3): '*' and '?' do not match '/'.
bool GlobMatch(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), FNM_PATHNAME) == 0;
}

Result<std::vector<IdMapping>> ParseIdMappings(
    const google::protobuf::RepeatedPtrField<::runtime::v1::IDMapping>& mappings,
    std::string_view what) {
  std::vector<IdMapping> out;
  if (mappings.empty()) return out;
  if (mappings.size() > 1) {
    return InvalidArgumentError(std::string(what) +
                                " mapping: only one mapping line supported, got " +
                                std::to_string(mappings.size()));
  }
  const ::runtime::v1::IDMapping& m = mappings[0];
  if (m.length() < 1) {
    return InvalidArgumentError(std::string(what) +
                                " mapping: invalid mapping length: " + std::to_string(m.length()));
  }
  out.push_back({m.container_id(), m.host_id(), m.length()});
  return out;
}

// The seccomp profile the pod asks for: security_context.seccomp, else the
// deprecated profile path, else the runtime's unset_seccomp_profile.
Result<std::optional<SecurityProfile>> RequestedSeccomp(
    const ::runtime::v1::LinuxSandboxSecurityContext& sc, const PauseSpecOptions& options) {
  if (sc.has_seccomp()) return std::optional<SecurityProfile>(sc.seccomp());
    // The deprecated field is still honoured, as containerd does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  std::string path = sc.seccomp_profile_path();
#pragma GCC diagnostic pop
  if (path.empty()) path = options.unset_seccomp_profile;
  if (path.empty()) return std::optional<SecurityProfile>();
  SecurityProfile profile;
  if (path == "runtime/default" || path == "docker/default") {
    profile.set_profile_type(SecurityProfile::RuntimeDefault);
  } else if (path == "unconfined") {
    profile.set_profile_type(SecurityProfile::Unconfined);
  } else if (path.starts_with("localhost/")) {
    profile.set_profile_type(SecurityProfile::Localhost);
    profile.set_localhost_ref(path.substr(std::string_view("localhost/").size()));
  } else {
    return InvalidArgumentError("invalid seccomp profile \"" + path + "\"");
  }
  return std::optional<SecurityProfile>(profile);
}

// linux.seccomp for the pod; null for none.
Result<SpecJson> SeccompFor(const ::runtime::v1::LinuxSandboxSecurityContext& sc,
                            const PauseSpecOptions& options) {
  HULL_ASSIGN_OR_RETURN(std::optional<SecurityProfile> profile, RequestedSeccomp(sc, options));
  if (sc.privileged() || !profile) return SpecJson();
  if (profile->profile_type() != SecurityProfile::Localhost && !profile->localhost_ref().empty()) {
    return InvalidArgumentError(
        "seccomp config invalid: LocalhostRef must only be set if ProfileType is Localhost");
  }
  switch (profile->profile_type()) {
    case SecurityProfile::Unconfined: return SpecJson();
    case SecurityProfile::RuntimeDefault:
      if (!options.runtime_default_seccomp) {
        return FailedPreconditionError(
            "seccomp RuntimeDefault requested but no default profile is configured");
      }
      return *options.runtime_default_seccomp;
    case SecurityProfile::Localhost: {
      std::string path = profile->localhost_ref();
      if (path.starts_with("localhost/")) path.erase(0, std::string_view("localhost/").size());
      HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      SpecJson doc = SpecJson::parse(text, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded() || !doc.is_object()) {
        return InvalidArgumentError("seccomp profile " + path + ": not a JSON object");
      }
      return doc;
    }
    default: return InvalidArgumentError("seccomp: unknown profile type");
  }
}

// The USER string: run_as_user[:run_as_group], else the image's.
Result<std::string> UserString(const ::runtime::v1::LinuxSandboxSecurityContext& sc,
                               const ImageConfig& image) {
  std::string user = sc.has_run_as_user() ? std::to_string(sc.run_as_user().value()) : "";
  if (sc.has_run_as_group()) {
    if (user.empty()) {
      return InvalidArgumentError("user group " + std::to_string(sc.run_as_group().value()) +
                                  " is specified without user");
    }
    user += ":" + std::to_string(sc.run_as_group().value());
  }
  return user.empty() ? image.user : user;
}

// --- writing the draft ---

SpecJson StringArray(const std::vector<std::string>& items) {
  return SpecJson(items);
}

SpecJson ToJson(const Draft& d) {
  SpecJson spec = SpecJson::object();
  spec["ociVersion"] = d.oci_version;

  SpecJson process = SpecJson::object();
  SpecJson user = SpecJson::object();
  user["uid"] = d.uid;
  user["gid"] = d.gid;
  if (!d.additional_gids.empty()) user["additionalGids"] = d.additional_gids;
  process["user"] = std::move(user);
  if (!d.args.empty()) process["args"] = StringArray(d.args);
  if (!d.env.empty()) process["env"] = StringArray(d.env);
  process["cwd"] = d.cwd;
  if (!d.capabilities.empty()) {
    process["capabilities"] = {{"bounding", StringArray(d.capabilities)},
                               {"effective", StringArray(d.capabilities)},
                               {"permitted", StringArray(d.capabilities)}};
  }
  if (d.rlimit_nofile) {
    process["rlimits"] =
        SpecJson::array({SpecJson{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}});
  }
  if (d.no_new_privileges) process["noNewPrivileges"] = true;
  if (!d.apparmor_profile.empty()) process["apparmorProfile"] = d.apparmor_profile;
  if (d.oom_score_adj) process["oomScoreAdj"] = *d.oom_score_adj;
  if (!d.selinux_label.empty()) process["selinuxLabel"] = d.selinux_label;
  spec["process"] = std::move(process);

  SpecJson root = SpecJson::object();
  root["path"] = d.root_path;
  if (d.root_readonly) root["readonly"] = true;
  spec["root"] = std::move(root);
  if (!d.hostname.empty()) spec["hostname"] = d.hostname;

  if (!d.mounts.empty()) {
    SpecJson mounts = SpecJson::array();
    for (const Mount& m : d.mounts) {
      SpecJson entry = SpecJson::object();
      entry["destination"] = m.destination;
      if (!m.type.empty()) entry["type"] = m.type;
      if (!m.source.empty()) entry["source"] = m.source;
      if (!m.options.empty()) entry["options"] = StringArray(m.options);
      mounts.push_back(std::move(entry));
    }
    spec["mounts"] = std::move(mounts);
  }
  if (!d.annotations.empty()) spec["annotations"] = d.annotations;

  SpecJson linux_section = SpecJson::object();
  auto id_mappings = [](const std::vector<IdMapping>& mappings) {
    SpecJson out = SpecJson::array();
    for (const IdMapping& m : mappings) {
      out.push_back({{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}});
    }
    return out;
  };
  if (!d.uid_mappings.empty()) linux_section["uidMappings"] = id_mappings(d.uid_mappings);
  if (!d.gid_mappings.empty()) linux_section["gidMappings"] = id_mappings(d.gid_mappings);
  if (!d.sysctl.empty()) linux_section["sysctl"] = d.sysctl;
  SpecJson resources = SpecJson::object();
  resources["devices"] = SpecJson::array({SpecJson{{"allow", false}, {"access", "rwm"}}});
  if (d.cpu_shares) resources["cpu"] = {{"shares", *d.cpu_shares}};
  linux_section["resources"] = std::move(resources);
  if (!d.cgroups_path.empty()) linux_section["cgroupsPath"] = d.cgroups_path;
  if (!d.namespaces.empty()) {
    SpecJson namespaces = SpecJson::array();
    for (const Namespace& ns : d.namespaces) {
      SpecJson entry = {{"type", ns.type}};
      if (!ns.path.empty()) entry["path"] = ns.path;
      namespaces.push_back(std::move(entry));
    }
    linux_section["namespaces"] = std::move(namespaces);
  }
  if (!d.seccomp.is_null()) linux_section["seccomp"] = d.seccomp;
  if (!d.masked_paths.empty()) linux_section["maskedPaths"] = StringArray(d.masked_paths);
  if (!d.readonly_paths.empty()) linux_section["readonlyPaths"] = StringArray(d.readonly_paths);
  if (!d.mount_label.empty()) linux_section["mountLabel"] = d.mount_label;
  spec["linux"] = std::move(linux_section);
  return spec;
}

Status BuildDraft(const PodSandboxConfig& config, const ImageConfig& image,
                  const PauseSpecOptions& options, Draft& d) {
  const bool v16 = options.flavor == CriFlavor::kContainerd16;
  const auto& linux_config = config.linux();
  const auto& sc = linux_config.security_context();
  const auto& ns_options = sc.namespace_options();
  const bool host_network = ns_options.network() == ::runtime::v1::NODE;
  const bool host_pid = ns_options.pid() == ::runtime::v1::NODE;
  const bool host_ipc = ns_options.ipc() == ::runtime::v1::NODE;
  const SandboxPaths paths =
      SandboxPathsFor(options.cri_root_dir, options.cri_state_dir, options.sandbox_id);

  // 1. WithoutRunMount.
  RemoveMountsAt(d, "/run");
  // 2. WithoutDefaultSecuritySettings: no AppArmor profile, no seccomp, no
  // rlimits (containerd/cri#515).
  d.apparmor_profile.clear();
  d.seccomp = SpecJson();
  d.rlimit_nofile = false;
  // 3. Relative root, image env, read-only root, hostname.
  d.root_path = "rootfs";
  d.env = ReplaceOrAppendEnv(d.env, image.env);
  d.root_readonly = true;
  d.hostname = config.hostname();
  // 4. cwd and args from the image.
  if (!image.working_dir.empty()) d.cwd = image.working_dir;
  if (image.entrypoint.empty() && image.cmd.empty()) {
    return InvalidArgumentError("invalid empty entrypoint and cmd in the pause image config");
  }
  d.args = image.entrypoint;
  d.args.insert(d.args.end(), image.cmd.begin(), image.cmd.end());
  // 5. cgroups path.
  if (options.disable_cgroup) {
    d.cgroups_path.clear();
  } else if (!linux_config.cgroup_parent().empty()) {
    d.cgroups_path =
        CgroupsPathFor(linux_config.cgroup_parent(), options.sandbox_id, options.cgroup_path_form);
  }
  // 6. Namespaces.
  if (host_network) {
    RemoveNamespace(d, "network");
    RemoveNamespace(d, "uts");
  } else {
    SetNamespace(d, {"network", options.netns_path});
  }
  if (host_pid) RemoveNamespace(d, "pid");
  if (host_ipc) RemoveNamespace(d, "ipc");
  bool userns_enabled = false;
  if (!v16 && ns_options.has_userns_options()) {
    const auto& userns = ns_options.userns_options();
    HULL_ASSIGN_OR_RETURN(std::vector<IdMapping> uids, ParseIdMappings(userns.uids(), "UID"));
    HULL_ASSIGN_OR_RETURN(std::vector<IdMapping> gids, ParseIdMappings(userns.gids(), "GID"));
    switch (userns.mode()) {
      case ::runtime::v1::NODE:
        if (!uids.empty() || !gids.empty()) {
          return InvalidArgumentError("user namespace mode NODE cannot have mappings");
        }
        RemoveNamespace(d, "user");
        break;
      case ::runtime::v1::POD:
        if (uids.empty() || gids.empty()) {
          return InvalidArgumentError("user namespace mode POD needs UID and GID mappings");
        }
        if (std::none_of(d.namespaces.begin(), d.namespaces.end(),
                         [](const Namespace& ns) { return ns.type == "user"; })) {
          d.namespaces.push_back({"user", ""});
        }
        d.uid_mappings.insert(d.uid_mappings.end(), uids.begin(), uids.end());
        d.gid_mappings.insert(d.gid_mappings.end(), gids.begin(), gids.end());
        userns_enabled = true;
        if (!host_network) SetNamespace(d, {"user", paths.pinned_user_namespace});
        break;
      default:
        return InvalidArgumentError("unsupported user namespace mode " +
                                    std::to_string(userns.mode()));
    }
  }
  // 7. /dev/shm and /etc/resolv.conf bind mounts.
  std::vector<std::string> bind_options = {"rbind", "ro"};
  if (!v16) {
    RemoveMountsAt(d, kDevShm);
    bind_options.insert(bind_options.end(), {"nosuid", "nodev", "noexec"});
  }
  d.mounts.push_back(
      {std::string(kDevShm), "bind", host_ipc ? std::string(kDevShm) : paths.shm, bind_options});
  d.mounts.push_back({std::string(kResolvConf), "bind", paths.resolv_conf, bind_options});
  if (!v16 && host_network && userns_enabled) {
    RemoveMountsAt(d, "/sys");
    d.mounts.push_back({"/sys", "bind", "/sys", {"rbind", "rro", "nosuid", "nodev", "noexec"}});
  }
  // 8. SELinux labels (none: hull does not label; see docs/pause-spec.md) and
  // supplemental groups, merged, sorted and deduplicated.
  d.selinux_label.clear();
  d.mount_label.clear();
  for (int64_t group : sc.supplemental_groups()) {
    d.additional_gids.push_back(static_cast<uint32_t>(group));
  }
  std::sort(d.additional_gids.begin(), d.additional_gids.end());
  d.additional_gids.erase(std::unique(d.additional_gids.begin(), d.additional_gids.end()),
                          d.additional_gids.end());
  // 9. Sysctls: the pod's, plus the unprivileged port and ICMP defaults off
  // the host network, never overriding the pod's.
  for (const auto& [key, value] : linux_config.sysctls()) d.sysctl[key] = value;
  if (!host_network) {
    if (options.enable_unprivileged_ports &&
        !linux_config.sysctls().contains("net.ipv4.ip_unprivileged_port_start")) {
      d.sysctl["net.ipv4.ip_unprivileged_port_start"] = "0";
    }
    if (options.enable_unprivileged_icmp &&
        !linux_config.sysctls().contains("net.ipv4.ping_group_range") &&
        !options.running_in_user_namespace && !userns_enabled) {
      d.sysctl["net.ipv4.ping_group_range"] = "0 2147483647";
    }
  }
  // 10. Default sandbox cpu shares.
  if (!options.disable_cgroup) d.cpu_shares = kDefaultSandboxCpuShares;
  // 11. The four sizing annotations, raw values, only with linux.resources.
  if (linux_config.has_resources()) {
    const auto& res = linux_config.resources();
    d.annotations[std::string(kSandboxCpuPeriod)] = std::to_string(res.cpu_period());
    d.annotations[std::string(kSandboxCpuQuota)] = std::to_string(res.cpu_quota());
    d.annotations[std::string(kSandboxCpuShares)] = std::to_string(res.cpu_shares());
    d.annotations[std::string(kSandboxMemory)] = std::to_string(res.memory_limit_in_bytes());
  }
  // 12. oom_score_adj, never below the daemon's with restrict_oom_score_adj.
  d.oom_score_adj = kSandboxOomScoreAdj;
  if (options.restrict_oom_score_adj && *d.oom_score_adj < options.daemon_oom_score_adj) {
    d.oom_score_adj = options.daemon_oom_score_adj;
  }
  // 13. Pass-through pod annotations.
  for (const auto& [key, value] : config.annotations()) {
    for (const std::string& pattern : options.pod_annotations) {
      if (GlobMatch(pattern, key)) d.annotations[key] = value;
    }
  }
  // 14. The default CRI annotations.
  d.annotations[std::string(kSandboxId)] = options.sandbox_id;
  d.annotations[std::string(kSandboxNamespace)] = config.metadata().namespace_();
  d.annotations[std::string(kSandboxUid)] = config.metadata().uid();
  d.annotations[std::string(kSandboxName)] = config.metadata().name();
  d.annotations[std::string(kSandboxLogDirectory)] = config.log_directory();
  if (!v16) d.annotations[std::string(kSandboxImageName)] = options.sandbox_image;
  d.annotations[std::string(kContainerType)] = std::string(kContainerTypeSandbox);

  // Fix-ups of Start: privileged pods get no SELinux label and (2.x) a
  // read-write /sys.
  if (sc.privileged()) {
    d.selinux_label.clear();
    if (!v16) {
      for (Mount& m : d.mounts) {
        if (CleanPath(m.destination) != "/sys") continue;
        auto ro = std::find(m.options.begin(), m.options.end(), "ro");
        if (ro != m.options.end()) *ro = "rw";
        break;
      }
    }
  }

  // At container creation: seccomp, then the user (which resets the
  // additional gids to the primary group).
  HULL_ASSIGN_OR_RETURN(d.seccomp, SeccompFor(sc, options));
  HULL_ASSIGN_OR_RETURN(std::string user, UserString(sc, image));
  if (!user.empty()) {
    HULL_ASSIGN_OR_RETURN(ProcessUser resolved, ResolveUser(user, options.rootfs));
    d.uid = resolved.uid;
    d.gid = resolved.gid;
    d.additional_gids = {resolved.gid};
  }
  return Status::Ok();
}

}  // namespace

std::string CgroupsPathFor(std::string_view cgroup_parent, std::string_view id,
                           CgroupPathForm form) {
  const std::string base = BasePath(cgroup_parent);
  const bool systemd = form == CgroupPathForm::kSystemd ||
                       (form == CgroupPathForm::kAuto && base.ends_with(".slice"));
  if (systemd) return base + ":cri-containerd:" + std::string(id);
  return JoinPath({cgroup_parent, id});
}

SpecJson DefaultUnixSpecJson(CriFlavor flavor, std::string_view containerd_namespace,
                             std::string_view id, std::string_view oci_version) {
  return ToJson(DefaultUnixSpec(flavor, containerd_namespace, id, oci_version));
}

Result<ImageConfig> ParseImageConfig(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("image config: not a JSON object");
  }
  auto config_it = doc.find("config");
  const nlohmann::json& config =
      config_it != doc.end() && config_it->is_object() ? *config_it : doc;
  ImageConfig out;
  auto strings = [&](const char* key, std::vector<std::string>& into) -> Status {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return Status::Ok();
    if (!it->is_array()) return InvalidArgumentError(std::string("image config: ") + key);
    for (const auto& item : *it) {
      if (!item.is_string()) return InvalidArgumentError(std::string("image config: ") + key);
      into.push_back(item.get<std::string>());
    }
    return Status::Ok();
  };
  auto string = [&](const char* key, std::string& into) -> Status {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return InvalidArgumentError(std::string("image config: ") + key);
    into = it->get<std::string>();
    return Status::Ok();
  };
  HULL_RETURN_IF_ERROR(strings("Env", out.env));
  HULL_RETURN_IF_ERROR(strings("Entrypoint", out.entrypoint));
  HULL_RETURN_IF_ERROR(strings("Cmd", out.cmd));
  HULL_RETURN_IF_ERROR(string("WorkingDir", out.working_dir));
  HULL_RETURN_IF_ERROR(string("User", out.user));
  return out;
}

Result<Spec> BuildPauseSpec(const PodSandboxConfig& config, const ImageConfig& image,
                            const PauseSpecOptions& options) {
  if (options.sandbox_id.empty()) return InvalidArgumentError("pause spec: empty sandbox id");
  Draft draft = DefaultUnixSpec(options.flavor, options.containerd_namespace, options.sandbox_id,
                                options.oci_version);
  HULL_RETURN_IF_ERROR_CTX(BuildDraft(config, image, options, draft), "pause spec");
  return Spec::FromJson(ToJson(draft));
}

Result<int> CurrentOomScoreAdj(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError(path + ": not an integer");
  }
  return value;
}

}  // namespace hull::oci
