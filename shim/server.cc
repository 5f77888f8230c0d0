#include "shim/server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "base/spawner.h"
#include "runtime/oci_cli/flavour.h"
#include "runtime/oci_cli/sandbox_bundle.h"
#include "shim/backend/make_backend.h"
#include "shim/backend/vm/vm_spawner.h"
#include "shim/cli/start.h"
#include "shim/config/config.h"
#include "shim/config/server_config.h"
#include "shim/mount/spawner_bundle_files.h"
#include "shim/mount/spawner_mounts.h"
#include "shim/pod/pod.h"
#include "shim/pod/pod_cgroup.h"
#include "shim/publisher.h"
#include "shim/sandbox/pause_process.h"
#include "shim/sandbox/sandbox_service.h"
#include "shim/security/confine.h"
#include "shim/security/read_only_host.h"
#include "shim/security/spawn_policy.h"
#include "shim/stdio/spawner_files.h"
#include "shim/task_service.h"
#include "ttrpc/server.h"

namespace hull::shim {
namespace {

// The shim logs to the bundle's `log` FIFO, which containerd reads and copies
// to its own log. containerd opened it before `start`, so this never blocks.
Logger OpenLog(const ServerArgs& args) {
  UniqueFd fd(::open("log", O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return Logger::Null();
  Logger log = Logger::ToFd(std::move(fd));
  if (args.debug) log.set_level(LogLevel::kDebug);
  return log;
}

// The path of the unix socket on `fd`, to remove it on exit.
std::string SocketPath(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  if (addr.sun_family != AF_UNIX || addr.sun_path[0] == '\0') return "";
  return std::string(addr.sun_path);
}

// The server's working directory: the bundle `start` ran it in.
std::string WorkingDirectory() {
  char buf[4096];
  if (::getcwd(buf, sizeof buf) == nullptr) return ".";
  return buf;
}

// The id a bundle is named for (containerd's <state>/<ns>/<id>), for messages.
std::string BundleId(const std::string& bundle) {
  size_t slash = bundle.find_last_of('/');
  return slash == std::string::npos ? bundle : bundle.substr(slash + 1);
}

// Where a confined server's temporary files go (console sockets whose
// bundle path is too long): the host's /tmp is read-only to it.
constexpr char kServerTmpDir[] = "/run/hull/tmp";

// What a confined server still writes (docs/security.md, "The server's view
// of the host"): hull's run directory (VM pods, the template cache, its
// temporary files), the cgroups, /proc (its children's OOM scores) but for
// the sysctls and sysrq, and for runsc its own bundle's hull-sandbox (a
// Sandbox API pod's sandbox bundle). Made when missing. Not its pod's
// bundles: their specs are containerd's, and hull's files there are written
// by the spawner (spawner_bundle_files.h).
Result<HostView> ServerHostView(const ShimConfig& config, const std::vector<std::string>& bundles,
                                const std::string& sandbox_bundle) {
  HostView view{.writable = {"/proc", "/sys/fs/cgroup", "/run/hull"},
                .read_only = {"/proc/sys", "/proc/sysrq-trigger"}};
  for (const std::string& tree : view.writable) HULL_RETURN_IF_ERROR(MakeDirs(tree, 0711));
  HULL_RETURN_IF_ERROR(MakeDirs(kServerTmpDir, 0700));
  // containerd's task directory of the namespace may not be there yet (a
  // shim sandboxer's first pod): made beside the plugin's own, as
  // containerd would, never elsewhere (a server started outside
  // containerd's layout).
  for (const std::string& dir : bundles) {
    if (::mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST && errno != ENOENT) {
      return ErrnoError("mkdir", dir);
    }
  }
  if (!IsVm(config.runtime) &&
      runtime::oci_cli::FlavourFor(config.runtime.binary_name).sandbox_process) {
    // 0711: runsc's sandbox, without capabilities, must reach its root.
    if (::mkdir(sandbox_bundle.c_str(), 0711) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir", sandbox_bundle);
    }
    view.writable.push_back(sandbox_bundle);
  }
  return view;
}

// [security] confine: forks the spawner, then confines this process. The
// spawner is forked first so that nothing it starts inherits the filter.
// Its entries: the pause process, the rootfs mounts of bundles beside the
// server's own (the server keeps no CAP_SYS_ADMIN), following the server
// into its cgroup (pod_cgroup.h), and a VM pod's network and share
// (vm_spawner.h). It starts only what
// the server's configuration names (SpawnPolicy), and logs each refusal to
// the shim's log itself.
Result<std::unique_ptr<SpawnerClient>> StartConfined(const ShimConfig& config,
                                                     const std::string& ns, Logger& log) {
  const std::vector<std::string> bundles = BundleDirs(WorkingDirectory());
  const std::string sandbox_bundle =
      WorkingDirectory() + "/" + std::string(runtime::oci_cli::kSandboxBundleDir);
  std::vector<SpawnerEntry> entries(kBundleFileSpawnerEntry + 1);
  entries[kPauseSpawnerEntry] = PauseSpawnerEntry();
  std::vector<SpawnerEntry> mounts = MountSpawnerEntries(bundles);
  entries[kMountSpawnerEntry] = std::move(mounts[0]);
  entries[kUnmountSpawnerEntry] = std::move(mounts[1]);
  entries[kFollowCgroupSpawnerEntry] = FollowCgroupSpawnerEntry();
  entries[stdio::kLogFileSpawnerEntry] = stdio::LogFileSpawnerEntry();
  entries[kBundleFileSpawnerEntry] =
      BundleFileSpawnerEntry(bundles, sandbox_bundle, RuntimeLockRoot(config.runtime, ns));
  HULL_ASSIGN_OR_RETURN(HostView host_view, ServerHostView(config, bundles, sandbox_bundle));
  SpawnPolicy policy = MakeSpawnPolicy(config, ns, bundles, SelfExecutable());
  policy.sandbox_bundle = sandbox_bundle;
  policy.server_writable = host_view.writable;
  // A VM pod's network and share entries only for a vm server: another
  // pod's server has no tap to make and no share to mount ("no such entry").
  if (IsVm(config.runtime)) {
    const vm::VmPod vm_pod = vm::ReadVmPod(WorkingDirectory());
    std::vector<SpawnerEntry> vm_entries = vm::VmSpawnerEntries(vm_pod);
    entries[vm::kVmNetworkSpawnerEntry] = std::move(vm_entries[0]);
    entries[vm::kVmShareSpawnerEntry] = std::move(vm_entries[1]);
    if (policy.qemu) policy.qemu->pod = vm_pod;
  }
  if (!policy.runtime_error.ok()) {
    log.Warn("spawner: no runtime calls allowed: {}", policy.runtime_error.ToString());
  }
  UniqueFd log_fd(::open("log", O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  const int spawner_log_fd = log_fd.get();
  Logger spawner_log = log_fd ? Logger::ToFd(std::move(log_fd), "hull-spawner") : Logger::Null();
  // An entry's refusal is logged by the spawner too, as a Spawn's is.
  for (SpawnerEntry& entry : entries) {
    auto logged = [spawner_log, name = entry.name](const Status& status) {
      if (status.code() == Code::kPermissionDenied) {
        spawner_log.Error("spawner refused {}: {}", name, status.ToString());
      }
    };
    if (entry.run) {
      entry.run = [run = std::move(entry.run), logged](std::string_view payload,
                                                       std::vector<UniqueFd>& fds) {
        Result<pid_t> done = run(payload, fds);
        if (!done) logged(done.error());
        return done;
      };
    }
    if (entry.call) {
      entry.call = [call = std::move(entry.call), logged](std::string_view payload,
                                                          std::vector<UniqueFd>& fds) {
        Result<SpawnerReply> done = call(payload, fds);
        if (!done) logged(done.error());
        return done;
      };
    }
  }
  SpawnCheck check = [policy = std::move(policy), spawner_log](const SpawnOptions& options) {
    Status allowed = CheckSpawn(policy, options);
    if (!allowed.ok()) spawner_log.Error("{}", allowed.ToString());
    return allowed;
  };
  HULL_ASSIGN_OR_RETURN(
      std::unique_ptr<SpawnerClient> spawner,
      SpawnerClient::Start(std::move(entries), {spawner_log_fd}, std::move(check)));
  // tools/seccomp-calls --log: measuring the allow-list, never for use.
  const char* measuring = std::getenv("HULL_SECCOMP_LOG");
  const bool log_unlisted = measuring != nullptr && std::string_view(measuring) == "1";
  if (log_unlisted) {
    log.Warn(
        "confine: HULL_SECCOMP_LOG=1: syscalls outside the allow-list are let through and "
        "logged by the kernel");
  }
  HULL_RETURN_IF_ERROR(SeeHostReadOnly(host_view).WithContext("confine: the host read-only"));
  if (::setenv("TMPDIR", kServerTmpDir, 1) != 0) return ErrnoError("setenv", "TMPDIR");
  HULL_RETURN_IF_ERROR(ConfineServer(log_unlisted));
  std::string caps;
  for (const std::string& name : ConfinedCapabilityNames())
    caps += (caps.empty() ? "" : ",") + name;
  log.Info(
      "confined: spawner pid {}, capabilities {}, NoNewPrivs, seccomp allow-list, the host "
      "read-only but {} tree(s)",
      spawner->pid(), caps, host_view.writable.size());
  return spawner;
}

}  // namespace

int RunServer(const ServerArgs& args) {
  // Container processes that runc daemonizes are reparented to the shim.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Log writes fail with EPIPE while containerd is away; that must not kill us.
  ::signal(SIGPIPE, SIG_IGN);

  Logger log = OpenLog(args);
  // The server's own settings ([ttrpc], [security], log_level) are what
  // `start` resolved for the container it was started for: the config file
  // under containerd's options, so a handler's ConfigPath file counts. A
  // later container cannot change them (CheckServerWideKeys).
  const std::string config_path = ConfigFilePath(std::getenv(std::string(kConfigPathEnv).c_str()));
  Result<ServerConfig> loaded = LoadServerConfig(WorkingDirectory(), config_path);
  if (!loaded) log.Warn("server settings: defaults: {}", loaded.error().ToString());
  const ShimConfig server_config = loaded ? loaded->config : ShimConfig{};
  if (!args.debug) log.set_level(server_config.log_level);
  if (loaded) {
    log.Info("server settings from {}: confine = {}", loaded->origin,
             server_config.security.confine);
  }
  if (!server_config.security.confine && !server_config.security.logging_binaries.empty()) {
    log.Warn(
        "security.logging_binaries is not applied: the server runs unconfined "
        "(security.confine = false), and starts any binary:// logger");
  }
  // The socket is unlinked at exit through its directory opened now: a
  // confined server's view of it is read-only, this descriptor's is not.
  const std::string socket_path = SocketPath(args.listen_fd);
  const size_t socket_slash = socket_path.find_last_of('/');
  UniqueFd socket_dir;
  if (socket_slash != std::string::npos) {
    socket_dir.reset(::open(socket_slash == 0 ? "/" : socket_path.substr(0, socket_slash).c_str(),
                            O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  auto unlink_socket = [&] {
    if (socket_path.empty()) return;
    if (socket_dir) {
      ::unlinkat(socket_dir.get(), socket_path.c_str() + socket_slash + 1, 0);
    } else {
      ::unlink(socket_path.c_str());
    }
  };
  std::unique_ptr<SpawnerClient> spawner;
  if (server_config.security.confine) {
    auto confined = StartConfined(server_config, args.ns, log);
    if (!confined) {
      log.Error("{}", confined.error().ToString());
      return 1;
    }
    spawner = std::move(*confined);
  }

  auto loop_or = EventLoop::Create();
  if (!loop_or) {
    log.Error("{}", loop_or.error().ToString());
    return 1;
  }
  EventLoop& loop = **loop_or;
  std::function<void()> stop_server;
  auto reaper_or = spawner ? Reaper::CreateWithSpawner(loop, *spawner,
                                                       [&](const Status& lost) {
                                                         log.Error("{}", lost.ToString());
                                                         if (stop_server) stop_server();
                                                       })
                           : Reaper::Create(loop);
  if (!reaper_or) {
    log.Error("{}", reaper_or.error().ToString());
    return 1;
  }
  Reaper& reaper = **reaper_or;

  EventPublisher publisher(loop, log, MakeForwardSink(loop, args.ttrpc_address, args.ns));
  ShimContext ctx{
      .loop = loop, .reaper = reaper, .log = log, .publisher = publisher, .ns = args.ns};
  Pod pod(ctx, DefaultBackendFactory(loop, reaper, args.ns, log), Pod::ReadStartPlacement(log));

  ttrpc::ServerOptions server_options;
  // The [ttrpc] limits of the config file (docs/ttrpc.md, "Limits").
  const TtrpcLimits& limits = server_config.ttrpc;
  server_options.max_connections = limits.max_connections;
  server_options.max_calls_per_connection = limits.max_calls_per_connection;
  server_options.partial_frame_deadline =
      std::chrono::milliseconds(limits.partial_frame_timeout_ms);
  server_options.on_error = [&log](const Status& s) { log.Warn("ttrpc: {}", s.ToString()); };
  ttrpc::Server server(loop, server_options);

  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    log.Info("shutting down");
    // Stop accepting at once so a new `start` does not find us, then let
    // calls in flight and queued events finish.
    unlink_socket();
    // The pod's sandbox goes first (a vm backend's VM powers off and QEMU
    // exits), then the queued events.
    server.Shutdown([&] {
      pod.WhenTornDown([&] { publisher.Flush(std::chrono::seconds(5), [&] { loop.Stop(); }); });
    });
  };

  // When the server ends is the lifetime's to decide; `stop` is how.
  ServerLifetime lifetime(
      loop, [&pod] { return pod.AllDeleted(); }, stop);
  stop_server = [&lifetime] { lifetime.EndNow(); };
  SandboxService sandbox(
      ctx, pod,
      [&](const std::string& bundle) -> Result<ShimConfig> {
        HULL_ASSIGN_OR_RETURN(ShimConfig config,
                              ResolveContainerConfig(google::protobuf::Any(), bundle, config_path));
        HULL_RETURN_IF_ERROR(CheckServerWideKeys(
            server_config, config, "create sandbox " + BundleId(bundle),
            ContainerConfigOrigin(google::protobuf::Any(), bundle, config_path), log));
        return config;
      },
      MakeHostPauseRunner(reaper), lifetime);
  sandbox.RegisterWith(server);

  TaskService tasks(
      ctx, pod,
      [&](const google::protobuf::Any& options, const std::string& bundle) -> Result<ShimConfig> {
        HULL_ASSIGN_OR_RETURN(ShimConfig config,
                              ResolveContainerConfig(options, bundle, config_path));
        HULL_RETURN_IF_ERROR(
            CheckServerWideKeys(server_config, config, "create " + BundleId(bundle),
                                ContainerConfigOrigin(options, bundle, config_path), log));
        return config;
      },
      lifetime);
  tasks.RegisterWith(server);

  Status served = server.Serve(UniqueFd(args.listen_fd));
  if (!served.ok()) {
    log.Error("serve: {}", served.ToString());
    return 1;
  }
  auto sigterm = loop.WatchSignal(SIGTERM, stop_server);
  auto sigint = loop.WatchSignal(SIGINT, stop_server);
  if (!sigterm || !sigint) {
    log.Error("watch signals failed");
    return 1;
  }
  log.Info("serving namespace {} id {}", args.ns, args.id);
  Status ran = loop.Run();
  if (!ran.ok()) log.Error("{}", ran.ToString());
  pod.Leave();
  unlink_socket();
  return ran.ok() ? 0 : 1;
}

}  // namespace hull::shim
