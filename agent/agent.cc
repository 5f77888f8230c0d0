#include "agent/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "agent/agent_service.h"
#include "agent/container_service.h"
#include "agent/guest_init.h"
#include "agent/guest_network.h"
#include "agent/port_server.h"
#include "base/event_loop.h"
#include "base/reaper.h"
#include "ttrpc/server.h"

namespace hull::agent {
namespace {

// Seconds since the guest booted (CLOCK_BOOTTIME), as "4.32".
std::string Uptime() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::to_string(ts.tv_sec) + "." + std::to_string(ts.tv_nsec / 10'000'000 + 100).substr(1);
}

// The agent's log: one line to stderr (the guest's console when PID 1), with
// the guest's uptime, which is what boot timing needs.
void Log(const std::string& message) {
  std::string line = "hull-agent [" + Uptime() + "] " + message + "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

[[noreturn]] void PowerOffOrExit(bool power_off, int code) {
  if (power_off) {
    Status s = PowerOff();
    Log("power off failed: " + s.ToString());
    // PID 1 must not exit; there is nothing left to do but wait.
    for (;;) ::pause();
  }
  std::exit(code);
}

int Fatal(const AgentOptions& options, const Status& status) {
  Log("fatal: " + status.ToString());
  PowerOffOrExit(options.power_off, 1);
}

// How long, once the sandbox is destroyed, calls still in flight (long-polls)
// keep the guest up before they are failed and it powers off.
constexpr std::chrono::milliseconds kShutdownGrace{500};

}  // namespace

int RunAgent(const AgentOptions& options) {
  ::signal(SIGPIPE, SIG_IGN);
  if (options.init) {
    // Nothing can be logged before /dev/console is there: remember when the
    // kernel started the agent.
    std::string started = Uptime();
    Status s = InitGuest(options.modules_list);
    if (!s.ok()) return Fatal(options, s.WithContext("init"));
    Log("guest ready (agent started at " + started + ")");
  }
  if (::getpid() != 1 && ::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return Fatal(options, ErrnoError("prctl(PR_SET_CHILD_SUBREAPER)"));
  }

  std::string path = options.port_path;
  if (path.empty()) {
    Result<std::string> found = FindVirtioPort(options.port_name, options.port_wait);
    if (!found) return Fatal(options, found.error());
    path = *found;
  }
  UniqueFd port(::open(path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!port) return Fatal(options, ErrnoError("open agent port", path));

  auto loop = EventLoop::Create();
  if (!loop) return Fatal(options, loop.error());
  // Every orphan of the guest comes here; exits nobody claims are kept by
  // the Reaper until the container code claims or discards them.
  auto reaper = Reaper::Create(**loop);
  if (!reaper) return Fatal(options, reaper.error());

  ttrpc::Server server(**loop, ttrpc::ServerOptions{
                                   .require_same_user = false,
                                   .shutdown_grace = kShutdownGrace,
                                   .on_error = [](const Status& s) { Log(s.ToString()); },
                               });
  ContainerService containers(**loop, **reaper,
                              ContainerOptions{.runtime = options.runtime,
                                               .runtime_root = options.runtime_root,
                                               .state_dir = options.state_dir,
                                               .log = Log,
                                               .set_pod_memory_max = SetPodMemoryMax});
  bool powering_off = false;
  // DestroySandbox has been answered, but its reply may still wait in the
  // connection's buffer (the port refuses writes, EAGAIN, until the guest
  // has seen the host attach): the server's shutdown closes the connection
  // once its replies are written, and only then does the guest go down.
  AgentService service(
      **loop,
      AgentHooks{.power_off =
                     [&] {
                       Log("sandbox destroyed: flushing replies");
                       server.Shutdown([&] {
                         powering_off = true;
                         (*loop)->Stop();
                       });
                     },
                 .configure_network =
                     [](const ::hull::agent::v1::Network& network) {
                       auto start = std::chrono::steady_clock::now();
                       Status s = ConfigureGuestNetwork(network);
                       auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
                       Log("network: " + std::to_string(network.interfaces_size()) +
                           " interface(s), " + std::to_string(network.routes_size()) +
                           " route(s) in " + std::to_string(us) + " us" +
                           (s.ok() ? "" : ": " + s.ToString()));
                       return s;
                     },
                 .refresh_from_host = RefreshFromHost,
                 .set_pod_memory_max =
                     [&containers](uint64_t bytes) { return containers.SetPodMemoryMax(bytes); }});
  service.Register(server);
  containers.Register(server);

  PortServer port_server(**loop, server, std::move(port));
  port_server.set_on_change([&port_server, &path](bool attached) {
    Log(std::string(attached ? "host attached to " : "host detached from ") + path +
        " (connection " + std::to_string(port_server.connections()) + ")");
  });
  port_server.Start();
  Log("serving " + std::string(kAgentService) + " on " + path);

  Status ran = (*loop)->Run();
  if (!ran.ok()) return Fatal(options, ran);
  if (powering_off) {
    Log("powering off");
    PowerOffOrExit(options.power_off, 0);
  }
  return 0;
}

}  // namespace hull::agent
