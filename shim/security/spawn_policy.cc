#include "shim/security/spawn_policy.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "base/file_util.h"
#include "shim/backend/make_backend.h"
#include "shim/mount/spawner_mounts.h"

namespace hull::shim {
namespace {

using runtime::oci_cli::Argv;
using runtime::oci_cli::ArgvBuilder;

// Every command ArgvBuilder makes for the backend (not `run`: hull never
// asks a runtime to create and start in one call).
const std::set<std::string_view> kRuntimeCommands = {
    "create", "start",  "restore", "exec", "kill",   "delete", "pause",
    "resume", "update", "ps",      "wait", "events", "list",   "checkpoint"};

Status Refused(const Argv& argv, std::string_view why) {
  std::string call;
  for (const std::string& arg : argv) {
    if (call.size() > 200) {
      call += " ...";
      break;
    }
    call += (call.empty() ? "" : " ") + arg;
  }
  return PermissionDeniedError("spawner refused \"" + call + "\": " + std::string(why));
}

// The value after `flag` in `argv[from, to)`, or nullptr.
const std::string* ValueOf(const Argv& argv, size_t from, size_t to, std::string_view flag) {
  for (size_t i = from; i + 1 < std::min(to, argv.size()); ++i) {
    if (argv[i] == flag) return &argv[i + 1];
  }
  return nullptr;
}

// `dir` is one of the pod's bundles: right below one of policy.bundles, or
// the pod's sandbox bundle (both where they really are).
bool IsPodBundle(const SpawnPolicy& policy, const std::string& dir) {
  if (InBundleDirs(policy.bundles, dir, "")) return true;
  if (policy.sandbox_bundle.empty()) return false;
  std::error_code ec, sandbox_ec;
  const std::filesystem::path real = std::filesystem::canonical(dir, ec);
  const std::filesystem::path sandbox =
      std::filesystem::canonical(policy.sandbox_bundle, sandbox_ec);
  return !ec && !sandbox_ec && real == sandbox;
}

// A Sandbox API pod's hull-sandbox spec is the server's own (made from
// containerd's request, in the one directory of its bundle it writes): it
// must have the shape SandboxContainerSpec gives it. hull's pause as the
// process, the bundle's rootfs as the root, no bind mount (the gofer would
// serve that host tree to the sandbox), no host device, no hook (the
// runtime runs hooks on the host, as root).
Status CheckSandboxSpec(const Argv& argv, const std::string& bundle) {
  Result<std::string> text = ReadFile(bundle + "/config.json");
  if (!text) return Refused(argv, "the sandbox's spec cannot be read");
  const nlohmann::json spec = nlohmann::json::parse(*text, nullptr, false);
  if (!spec.is_object()) return Refused(argv, "the sandbox's spec is not a JSON object");
  const auto process = spec.find("process");
  if (process == spec.end() || !process->is_object() ||
      process->value("args", nlohmann::json()) != nlohmann::json::array({"/pause"})) {
    return Refused(argv, "the sandbox's process is not hull's pause");
  }
  const auto root = spec.find("root");
  if (root == spec.end() || !root->is_object() ||
      root->value("path", nlohmann::json()) != nlohmann::json("rootfs")) {
    return Refused(argv, "the sandbox's root is not its bundle's rootfs");
  }
  if (spec.contains("hooks") && !spec["hooks"].empty()) {
    return Refused(argv, "the sandbox's spec has hooks");
  }
  if (const auto mounts = spec.find("mounts"); mounts != spec.end()) {
    if (!mounts->is_array()) return Refused(argv, "the sandbox's mounts are malformed");
    for (const auto& m : *mounts) {
      bool bind = !m.is_object() || m.value("type", nlohmann::json("")) == nlohmann::json("bind");
      if (m.is_object() && m.contains("options") && m["options"].is_array()) {
        for (const auto& option : m["options"]) {
          if (option == "bind" || option == "rbind") bind = true;
        }
      }
      if (bind) return Refused(argv, "the sandbox's spec binds a host path");
    }
  }
  if (spec.contains("linux") && spec["linux"].is_object() && spec["linux"].contains("devices") &&
      !spec["linux"]["devices"].empty()) {
    return Refused(argv, "the sandbox's spec names host devices");
  }
  return Status::Ok();
}

// An exec's process (its file written for the server by the spawner, its
// content the server's) is bounded by its container's own, from the
// bundle's config.json (containerd's: the bundles are read-only to the
// server): no capability outside the container's bounding set, no-new-
// privileges kept when the container has it, the container's AppArmor
// profile and SELinux label. containerd's exec specs are copies of the
// container's process, so they pass; a taken-over server's privileged exec
// does not. The container is the bundle's (its directory name).
Status CheckExecProcess(const Argv& argv, const std::string& process_file) {
  const std::filesystem::path bundle = std::filesystem::path(process_file).parent_path();
  if (argv.back() != bundle.filename().string()) {
    return Refused(argv, "the process file is not in the container's bundle");
  }
  Result<std::string> config_text = ReadFile((bundle / "config.json").string());
  Result<std::string> process_text = ReadFile(process_file);
  if (!config_text || !process_text) {
    return Refused(argv, "the container's spec or the exec's process cannot be read");
  }
  const nlohmann::json config = nlohmann::json::parse(*config_text, nullptr, false);
  const nlohmann::json process = nlohmann::json::parse(*process_text, nullptr, false);
  if (!config.is_object() || !process.is_object()) {
    return Refused(argv, "the container's spec or the exec's process is not a JSON object");
  }
  static const nlohmann::json kNone = nlohmann::json::object();
  const nlohmann::json& own =
      config.contains("process") && config["process"].is_object() ? config["process"] : kNone;
  auto strings = [](const nlohmann::json& doc, std::string_view key, std::string_view set) {
    std::set<std::string> out;
    auto caps = doc.find(key);
    if (caps == doc.end() || !caps->is_object()) return out;
    auto list = caps->find(set);
    if (list == caps->end() || !list->is_array()) return out;
    for (const auto& cap : *list) {
      if (cap.is_string()) out.insert(cap.get<std::string>());
    }
    return out;
  };
  const std::set<std::string> bounding = strings(own, "capabilities", "bounding");
  for (std::string_view set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
    if (process.contains("capabilities") && process["capabilities"].is_object() &&
        process["capabilities"].contains(set) && !process["capabilities"][set].is_array()) {
      return Refused(argv, "the exec's capabilities are malformed");
    }
    for (const std::string& cap : strings(process, "capabilities", set)) {
      if (!bounding.contains(cap)) {
        return Refused(argv, "the exec asks for " + cap + ", outside its container's bounding set");
      }
    }
  }
  auto flag = [](const nlohmann::json& doc, const char* key) {
    auto it = doc.find(key);
    return it != doc.end() && it->is_boolean() && it->get<bool>();
  };
  if (flag(own, "noNewPrivileges") && !flag(process, "noNewPrivileges")) {
    return Refused(argv, "the exec drops its container's noNewPrivileges");
  }
  for (const char* key : {"apparmorProfile", "selinuxLabel"}) {
    const auto mine = own.find(key);
    if (mine == own.end() || !mine->is_string() || mine->get<std::string>().empty()) continue;
    const auto theirs = process.find(key);
    if (theirs == process.end() || *theirs != *mine) {
      return Refused(argv, std::string("the exec's ") + key + " is not its container's");
    }
  }
  return Status::Ok();
}

Status CheckRuntimeCall(const SpawnPolicy& policy, const SpawnOptions& options) {
  const Argv& argv = options.argv;
  if (options.env.has_value() || !options.cwd.empty()) {
    return Refused(argv, "a runtime call takes the spawner's environment and directory");
  }
  // The pod's global flags, with this container's own --log when there is
  // one (calls that read no log have none). --log is looked for among the
  // global flags only, not in the command's own arguments.
  runtime::oci_cli::RuntimeConfig config = policy.runtime->config();
  const std::string* log = ValueOf(argv, 1, policy.runtime_global_end, "--log");
  if (log != nullptr) {
    const std::filesystem::path log_path(*log);
    if (!log_path.is_absolute() || log_path.filename() != "log.json" ||
        !IsPodBundle(policy, log_path.parent_path().string())) {
      return Refused(argv, "--log is not a bundle's log.json");
    }
    config.log_path = *log;
  }
  const Argv prefix = ArgvBuilder(policy.runtime->flavour(), config).GlobalFlags();
  if (argv.size() <= prefix.size() || !std::equal(prefix.begin(), prefix.end(), argv.begin())) {
    return Refused(argv, "not the configured runtime's binary and global flags");
  }
  const std::string& command = argv[prefix.size()];
  if (!kRuntimeCommands.contains(command)) return Refused(argv, "not a command hull uses");
  if (command == "create" || command == "restore") {
    const std::string* bundle = ValueOf(argv, prefix.size(), argv.size(), "--bundle");
    if (bundle == nullptr || !IsPodBundle(policy, *bundle)) {
      return Refused(argv, "the bundle is not one of this namespace's");
    }
    if (!InBundleDirs(policy.bundles, *bundle, "")) {  // the pod's hull-sandbox
      HULL_RETURN_IF_ERROR(CheckSandboxSpec(argv, *bundle));
    }
  }
  // The files the runtime writes or reads as root for the server: only
  // hull's own names, in one of the pod's bundles (a pid file elsewhere
  // would have the runtime overwrite any file of the host).
  for (const auto& [flag, suffix] :
       {std::pair<std::string_view, std::string_view>{"--pid-file", ".pid"},
        {"--internal-pid-file", ".pid.internal"},
        {"--process", ".process.json"}}) {
    const std::string* value = ValueOf(argv, prefix.size(), argv.size(), flag);
    if (value == nullptr) continue;
    const std::filesystem::path path(*value);
    const std::string name = path.filename().string();
    if (!path.is_absolute() || name.size() <= suffix.size() || !name.ends_with(suffix) ||
        name.starts_with(".") || !IsPodBundle(policy, path.parent_path().string())) {
      return Refused(argv, std::string(flag) + " is not a <name>" + std::string(suffix) +
                               " in one of the pod's bundles");
    }
  }
  if (command == "checkpoint" || command == "restore") {
    // criu dumps as root into these, and restores a process from what is
    // there: never a tree a taken-over server could have filled.
    const std::string* image = ValueOf(argv, prefix.size(), argv.size(), "--image-path");
    for (std::string_view flag : {"--image-path", "--work-path", "--parent-path"}) {
      const std::string* value = ValueOf(argv, prefix.size(), argv.size(), flag);
      if (value == nullptr) continue;
      std::filesystem::path path(*value);
      if (flag == "--parent-path" && path.is_relative() && image != nullptr) {
        path = std::filesystem::path(*image) / path;  // criu's parent is relative to the images
      }
      if (!path.is_absolute()) return Refused(argv, std::string(flag) + " is not absolute");
      std::error_code ec;
      const std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
      if (ec) return Refused(argv, std::string(flag) + " cannot be resolved");
      for (const std::string& tree : policy.server_writable) {
        const std::filesystem::path root = std::filesystem::weakly_canonical(tree, ec);
        const std::filesystem::path rel = real.lexically_relative(root);
        if (!ec && !rel.empty() && *rel.begin() != "..") {
          return Refused(argv, std::string(flag) + " is in " + tree + ", which the server writes");
        }
      }
    }
  }
  if (command == "exec") {
    const std::string* process = ValueOf(argv, prefix.size(), argv.size(), "--process");
    if (process == nullptr) return Refused(argv, "an exec without --process");
    return CheckExecProcess(argv, *process);
  }
  return Status::Ok();
}

Status CheckLogger(const SpawnOptions& options) {
  const Argv& argv = options.argv;
  if (!options.cwd.empty() || !options.env.has_value() || options.env->size() != 2 ||
      !(*options.env)[0].starts_with("CONTAINER_ID=") ||
      !(*options.env)[1].starts_with("CONTAINER_NAMESPACE=")) {
    return Refused(argv, "a logging binary gets only CONTAINER_ID and CONTAINER_NAMESPACE");
  }
  return Status::Ok();
}

}  // namespace

SpawnPolicy MakeSpawnPolicy(const ShimConfig& config, const std::string& ns,
                            const std::vector<std::string>& bundles, const std::string& self_exe) {
  SpawnPolicy policy{.bundles = bundles, .logging_binaries = config.security.logging_binaries};
  if (IsVm(config.runtime)) {
    Result<vm::GuestAssets> assets =
        vm::ResolveGuestAssets(config.runtime.vm, vm::GuestAssetDirs(self_exe));
    if (assets) {
      // Every directory the jail may hide: a boot hides those of them that
      // hold none of its paths.
      policy.qemu.emplace(vm::QemuRule{.assets = std::move(*assets),
                                       .jail = vm::QemuJail(config.runtime.vm, {}),
                                       .kvm = config.runtime.vm.accel == "kvm"});
    } else {
      policy.runtime_error = assets.error();
    }
  } else {
    Result<ArgvBuilder> argv = PodArgvBuilder(config.runtime, ns);
    if (argv) {
      policy.runtime.emplace(std::move(*argv));
      runtime::oci_cli::RuntimeConfig with_log = policy.runtime->config();
      with_log.log_path = "log.json";
      policy.runtime_global_end =
          ArgvBuilder(policy.runtime->flavour(), with_log).GlobalFlags().size();
    } else {
      policy.runtime_error = argv.error();
    }
  }
  return policy;
}

Status CheckSpawn(const SpawnPolicy& policy, const SpawnOptions& options) {
  const Argv& argv = options.argv;
  if (argv.empty()) return InvalidArgumentError("spawn: empty argv");
  for (const std::string& logger : policy.logging_binaries) {
    if (argv[0] == logger) return CheckLogger(options);
  }
  if (policy.runtime) {
    const ArgvBuilder& runtime = *policy.runtime;
    for (const Argv& probe :
         {runtime.Features(), runtime.Version(), runtime.CheckpointProbe(), runtime.CriuCheck()}) {
      if (argv == probe)
        return options.env.has_value() ? Refused(argv, "own environment") : Status::Ok();
    }
    if (argv[0] == runtime.config().binary) return CheckRuntimeCall(policy, options);
  }
  if (policy.qemu && argv[0] == policy.qemu->assets.qemu) {
    return vm::CheckQemuSpawn(*policy.qemu, options);
  }
  if (policy.qemu && !policy.qemu->assets.share_helper.empty() &&
      argv[0] == policy.qemu->assets.share_helper) {
    return vm::CheckShareHelperSpawn(*policy.qemu, options);
  }
  return Refused(argv,
                 "the configuration names no such program (the pod's runtime, QEMU or its "
                 "share helper, [security] logging_binaries)");
}

}  // namespace hull::shim
