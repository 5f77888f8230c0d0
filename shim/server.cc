#include "shim/server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "shim/config/config.h"
#include "shim/pod/pod.h"
#include "shim/publisher.h"
#include "shim/sandbox/pause_process.h"
#include "shim/sandbox/sandbox_service.h"
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

}  // namespace

int RunServer(const ServerArgs& args) {
  // Container processes that runc daemonizes are reparented to the shim.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Log writes fail with EPIPE while containerd is away; that must not kill us.
  ::signal(SIGPIPE, SIG_IGN);

  Logger log = OpenLog(args);
  auto loop_or = EventLoop::Create();
  if (!loop_or) {
    log.Error("{}", loop_or.error().ToString());
    return 1;
  }
  EventLoop& loop = **loop_or;
  auto reaper_or = Reaper::Create(loop);
  if (!reaper_or) {
    log.Error("{}", reaper_or.error().ToString());
    return 1;
  }
  Reaper& reaper = **reaper_or;

  EventPublisher publisher(loop, log, MakeForwardSink(loop, args.ttrpc_address, args.ns));
  ShimContext ctx{
      .loop = loop, .reaper = reaper, .log = log, .publisher = publisher, .ns = args.ns};
  Pod pod(ctx, DefaultBackendFactory(loop, reaper, args.ns, log), Pod::ReadStartPlacement(log));

  std::string socket_path = SocketPath(args.listen_fd);
  ttrpc::ServerOptions server_options;
  // The [ttrpc] limits of the config file (docs/ttrpc.md, "Limits").
  Result<ShimConfig> file_config =
      LoadConfigFile(ConfigFilePath(std::getenv(std::string(kConfigPathEnv).c_str())));
  if (!file_config) log.Warn("ttrpc limits: defaults: {}", file_config.error().ToString());
  const TtrpcLimits limits = file_config ? file_config->ttrpc : TtrpcLimits{};
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
    if (!socket_path.empty()) ::unlink(socket_path.c_str());
    // The pod's sandbox goes first (a vm backend's VM powers off and QEMU
    // exits), then the queued events.
    server.Shutdown([&] {
      pod.WhenTornDown([&] { publisher.Flush(std::chrono::seconds(5), [&] { loop.Stop(); }); });
    });
  };

  const std::string config_path = ConfigFilePath(std::getenv(std::string(kConfigPathEnv).c_str()));
  SandboxService sandbox(
      ctx, pod,
      [&config_path](const std::string& bundle) {
        return ResolveContainerConfig(google::protobuf::Any(), bundle, config_path);
      },
      MakeHostPauseRunner(reaper), stop);
  sandbox.RegisterWith(server);

  TaskService tasks(
      ctx, pod,
      [&config_path](const google::protobuf::Any& options, const std::string& bundle) {
        return ResolveContainerConfig(options, bundle, config_path);
      },
      // A pod created through the Sandbox API ends at ShutdownSandbox only.
      [&] {
        if (!sandbox.holds_server()) stop();
      });
  tasks.RegisterWith(server);

  Status served = server.Serve(UniqueFd(args.listen_fd));
  if (!served.ok()) {
    log.Error("serve: {}", served.ToString());
    return 1;
  }
  auto sigterm = loop.WatchSignal(SIGTERM, stop);
  auto sigint = loop.WatchSignal(SIGINT, stop);
  if (!sigterm || !sigint) {
    log.Error("watch signals failed");
    return 1;
  }
  log.Info("serving namespace {} id {}", args.ns, args.id);
  Status ran = loop.Run();
  if (!ran.ok()) log.Error("{}", ran.ToString());
  pod.Leave();
  if (!socket_path.empty()) ::unlink(socket_path.c_str());
  return ran.ok() ? 0 : 1;
}

}  // namespace hull::shim
