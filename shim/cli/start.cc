#include "shim/cli/start.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/spawn.h"
#include "cgroups/cgroups.h"
#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"
#include "oci/spec.h"
#include "shim/cli/bootstrap_output.h"
#include "shim/cli/placement.h"
#include "shim/cli/shim_socket.h"
#include "shim/cli/socket_address.h"
#include "shim/config/config.h"
#include "shim/config/server_config.h"
#include "shim/config/start_input.h"
#include "shim/pod/pod.h"

extern char** environ;

namespace hull::shim {
namespace {

using containerd::runtime::bootstrap::v1::BootstrapParams;

// Runs `undo` on scope exit unless dismissed.
class ScopeGuard {
 public:
  explicit ScopeGuard(std::function<void()> undo) : undo_(std::move(undo)) {}
  ~ScopeGuard() {
    if (undo_) undo_();
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  void Dismiss() { undo_ = nullptr; }

 private:
  std::function<void()> undo_;
};

// What `start` prints: decided once from what containerd sent and set, the
// daemon's build and the config's start_output (bootstrap_output.h).
std::string Output(const std::string& address, const StartRequest& req,
                   const std::optional<BootstrapParams>& bootstrap, const ShimConfig& config,
                   const Logger& log) {
  DaemonSignals signals{.bootstrap_params = bootstrap.has_value(),
                        .max_shim_version_set = !req.env.max_shim_version.empty()};
  // Read the daemon only when it can change the answer.
  if (config.start_output == StartOutputMode::kAuto && !signals.bootstrap_params &&
      signals.max_shim_version_set) {
    signals.daemon_module_major = DaemonModuleMajor(::getppid());
  }
  StartOutputFormat format = ChooseStartOutput(config.start_output, signals);
  log.Info("start {}: answering containerd with {} (module major {})", req.cmd.id,
           StartOutputName(format),
           signals.daemon_module_major ? std::to_string(*signals.daemon_module_major) : "unknown");
  return FormatStartOutput(format, address);
}

// <bundle>/address: the address, no newline, replaced atomically. containerd
// 1.6/1.7 read it to reconnect after a restart.
Status WriteAddressFile(const std::string& bundle, const std::string& address) {
  return WriteFileAtomic(bundle + "/address", address, 0644);
}

// The server's argv: what containerd's shim library passes its own server.
std::vector<std::string> ServerArgv(const StartRequest& req, bool debug) {
  std::vector<std::string> argv = {req.self_exe, "-namespace", req.cmd.ns,     "-id",
                                   req.cmd.id,   "-address",   req.cmd.address};
  if (!req.cmd.publish_binary.empty()) {
    argv.insert(argv.end(), {"-publish-binary", req.cmd.publish_binary});
  }
  if (debug) argv.push_back("-debug");
  return argv;
}

// The server's environment: ours, plus TTRPC_ADDRESS from BootstrapParams
// when containerd did not set it.
std::optional<std::vector<std::string>> ServerEnv(const StartRequest& req,
                                                  const std::optional<BootstrapParams>& bootstrap) {
  if (!req.env.ttrpc_address.empty() || !bootstrap ||
      bootstrap->containerd_ttrpc_address().empty()) {
    return std::nullopt;
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back("TTRPC_ADDRESS=" + bootstrap->containerd_ttrpc_address());
  return env;
}

bool WantsDebug(const StartRequest& req, const std::optional<BootstrapParams>& bootstrap) {
  return req.cmd.debug || (bootstrap && bootstrap->log_level() <=
                                            containerd::runtime::bootstrap::v1::LOG_LEVEL_DEBUG);
}

// The server's cgroup if it were not placed in the pod: shim_cgroup when
// set, else the one it inherits from this process.
Result<std::string> ServerOrigin(const ShimConfig& config) {
  if (!config.shim_cgroup.empty()) return config.shim_cgroup;
  HULL_ASSIGN_OR_RETURN(cgroups::ProcessCgroups own, cgroups::ReadProcessCgroups(::getpid()));
  if (!own.unified) return FailedPreconditionError("this process has no cgroup v2 path");
  return *own.unified;
}

// What `start` reads from the bundle: the spec, the grouping id and, for a
// pause container, the pod's size.
struct StartBundle {
  std::string group;
  std::optional<oci::Spec> spec;
  std::optional<oci::PodSize> pod_size;
};

// A bundle without config.json is a sandbox that containerd 2.x's shim
// sandboxer creates through the Sandbox API (CreateSandbox brings the
// PodSandboxConfig): `-id` is the sandbox id, which is what the pod's
// containers group by, and the pod is sized and its cgroup placed at
// CreateSandbox, in the server.
Result<StartBundle> ReadStartBundle(const StartRequest& req, const ShimConfig& config,
                                    const Logger& log) {
  const std::string path = req.bundle + "/" + std::string(oci::kConfigFileName);
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) {
    log.Info("start {}: no {}: a sandbox (Sandbox API)", req.cmd.id, oci::kConfigFileName);
    return StartBundle{.group = req.cmd.id};
  }
  HULL_ASSIGN_OR_RETURN(oci::Spec spec, oci::Spec::Load(path));
  StartBundle bundle{.group = GroupingId(spec.Annotations(), req.cmd.id)};
  HULL_ASSIGN_OR_RETURN(bundle.pod_size, Pod::Size(req.bundle, spec, config.sizing.policy, log,
                                                   "start " + req.cmd.id));
  bundle.spec = std::move(spec);
  return bundle;
}

// The children of `pid` (a confined server's spawner, docs/security.md),
// from /proc/<pid>/task/<pid>/children; none when it cannot be read.
std::vector<pid_t> ChildrenOf(pid_t pid) {
  const std::string id = std::to_string(pid);
  Result<std::string> text = ReadFile("/proc/" + id + "/task/" + id + "/children");
  std::vector<pid_t> children;
  if (!text) return children;
  size_t at = 0;
  while (at < text->size()) {
    size_t end = text->find(' ', at);
    if (end == std::string::npos) end = text->size();
    if (end > at) children.push_back(static_cast<pid_t>(std::stol(text->substr(at, end - at))));
    at = end + 1;
  }
  return children;
}

}  // namespace

std::string SelfExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  std::string path(buf, static_cast<size_t>(n));
  // Replaced on disk since we started (an upgrade): only the link still works.
  if (path.ends_with(" (deleted)")) return "/proc/self/exe";
  return path;
}

Result<std::string> RunStart(const StartRequest& request, const Logger& log) {
  StartRequest req = request;
  if (req.cmd.ns.empty()) return InvalidArgumentError("-namespace is required");
  if (req.cmd.id.empty()) return InvalidArgumentError("-id is required");

  Result<StartInput> input = DecodeStartInput(req.stdin_data, req.cmd.id, req.cmd.ns);
  if (!input) return input.error().WithContext("start: read stdin");
  const std::optional<BootstrapParams>& bootstrap = input->bootstrap;
  if (bootstrap && req.cmd.address.empty()) req.cmd.address = bootstrap->containerd_grpc_address();

  Result<ShimConfig> config =
      ResolveConfig(req.env.config_path, input->options ? &*input->options : nullptr);
  if (!config) return config.error().WithContext("start");

  Result<StartBundle> bundle = ReadStartBundle(req, *config, log);
  if (!bundle) return bundle.error().WithContext("start");
  const std::string& group = bundle->group;

  std::string socket_dir = req.env.socket_dir;
  if (bootstrap && bootstrap->has_socket_dir() && !bootstrap->socket_dir().empty()) {
    socket_dir = bootstrap->socket_dir();
  }
  const std::string address = SocketAddress(socket_dir, req.cmd.address, req.cmd.ns, group);
  HULL_ASSIGN_OR_RETURN(std::string socket_path, SocketPath(address));

  // The resolved config goes into every bundle: the server reads it at Create
  // and `delete` after a crash.
  HULL_RETURN_IF_ERROR_CTX(
      WriteBundleConfig(
          req.bundle, *config,
          ConfigOrigin(input->options ? &*input->options : nullptr, req.env.config_path)),
      "start: store config");

  Result<ShimListener> listener = ListenShimSocket(socket_path);
  if (!listener) return listener.error().WithContext("start: create shim socket");
  if (listener->existing) {
    log.Info("start {}: joining the live shim of group {} at {}", req.cmd.id, group, address);
    HULL_RETURN_IF_ERROR_CTX(WriteAddressFile(req.bundle, address), "start");
    return Output(address, req, bootstrap, *config, log);
  }

  // What a failed start undoes: the server (an owned child, killed and
  // reaped), the socket, the address file, the pod cgroup it prepared.
  std::optional<OwnedChild> child;
  bool wrote_address = false;
  std::optional<PodCgroupSetup> pod;
  ScopeGuard undo([&] {
    child.reset();
    ::unlink(socket_path.c_str());
    if (wrote_address) ::unlink((req.bundle + "/address").c_str());
    if (pod) Pod::UndoStart(req.bundle, *pod);
  });

  HULL_RETURN_IF_ERROR_CTX(WriteAddressFile(req.bundle, address), "start");
  wrote_address = true;

  if (bundle->spec) {
    Result<std::optional<PodCgroupSetup>> prepared = Pod::PrepareAtStart(
        req.bundle, "start " + req.cmd.id, *bundle->spec, *config, bundle->pod_size,
        [&config] { return ServerOrigin(*config); }, log);
    if (!prepared) return prepared.error().WithContext("start");
    pod = std::move(*prepared);
  }

  if (req.env.sched_core) HULL_RETURN_IF_ERROR_CTX(CreateSchedCoreCookie(), "start");

  SpawnOptions spawn;
  spawn.argv = ServerArgv(req, WantsDebug(req, bootstrap));
  spawn.env = ServerEnv(req, bootstrap);
  spawn.cwd = req.bundle;
  spawn.fds = {{3, listener->fd.get()}};
  spawn.new_process_group = true;
  Result<pid_t> pid = Spawn(spawn);
  // The server has its copy; this process must not keep the socket open.
  listener->fd.reset();
  if (!pid) return pid.error().WithContext("start: run the shim server");
  child.emplace(*pid);

  auto place = [&](pid_t server) -> Status {
    if (pod && !pod->placement.shim_leaf.empty()) {
      HULL_RETURN_IF_ERROR_CTX(Pod::PlaceServer(*pod, server), "start");
    } else if (!config->shim_cgroup.empty()) {
      HULL_RETURN_IF_ERROR_CTX(cgroups::MoveProcess(server, config->shim_cgroup),
                               "start: move the shim to shim_cgroup");
    }
    return AdjustOomScore(server, ::getppid()).WithContext("start: set the shim's OOM score");
  };
  HULL_RETURN_IF_ERROR(place(*pid));
  // A confined server forks its spawner as it starts: one forked before the
  // move above is moved after it (one forked later inherits the new place,
  // since a move and a fork of the same process exclude each other).
  for (pid_t spawner : ChildrenOf(*pid)) HULL_RETURN_IF_ERROR(place(spawner));

  log.Info("start {}: server pid {} listening at {}", req.cmd.id, *pid, address);
  child->Release();
  undo.Dismiss();
  return Output(address, req, bootstrap, *config, log);
}

}  // namespace hull::shim
