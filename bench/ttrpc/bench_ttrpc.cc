// bench_ttrpc: how fast hull's ttrpc round trips are and how small an idle
// server is. The driver forks and execs itself as the server (`--serve`),
// handing it the listening socket on fd 3 as containerd's shim start does,
// then measures unary Echo calls (100-byte payload) with 1 and 16 calls in
// flight, and reads the server's /proc/<pid>/smaps_rollup. Single thread per
// process; prints a table.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::ttrpc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kService[] = "hull.bench.Echo";
constexpr char kMethod[] = "Echo";
constexpr size_t kPayloadSize = 100;

int Die(const Status& status) {
  std::fprintf(stderr, "bench_ttrpc: %s\n", status.ToString().c_str());
  return 1;
}

// The server process: serves Echo on the listener at fd 3 until SIGTERM.
int Serve() {
  auto loop = EventLoop::Create();
  if (!loop) return Die(loop.error());
  Server server(**loop);
  server.Register(kService, kMethod, [](const CallContext&, std::string payload, Responder r) {
    r.Reply(std::move(payload));
  });
  if (Status s = server.Serve(UniqueFd(3)); !s.ok()) return Die(s);
  auto term = (*loop)->WatchSignal(SIGTERM, [&] { server.Shutdown([&] { (*loop)->Stop(); }); });
  if (!term) return Die(term.error());
  if (Status s = (*loop)->Run(); !s.ok()) return Die(s);
  return 0;
}

struct Figures {
  double calls_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Runs `total` Echo calls keeping `in_flight` outstanding; per-call latency
// is from Call() to its callback.
Figures RunCalls(EventLoop& loop, Client& client, int total, int in_flight) {
  const std::string payload(kPayloadSize, 'x');
  std::vector<double> latencies_us;
  latencies_us.reserve(static_cast<size_t>(total));
  int started = 0;
  int finished = 0;
  bool failed = false;
  std::function<void()> start_one = [&] {
    if (started == total) return;
    ++started;
    auto sent = Clock::now();
    client.Call(kService, kMethod, payload, {}, [&, sent](Result<std::string> reply) {
      latencies_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
      if (!reply || reply->size() != kPayloadSize) failed = true;
      ++finished;
      start_one();
    });
  };
  auto begin = Clock::now();
  for (int i = 0; i < in_flight; ++i) start_one();
  loop.RunUntil([&] { return finished == total || failed; }, std::chrono::minutes(5));
  double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  if (failed || finished != total) {
    std::fprintf(stderr, "bench_ttrpc: calls failed\n");
    std::exit(1);
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    return latencies_us[static_cast<size_t>(p * (latencies_us.size() - 1))];
  };
  return Figures{.calls_per_second = total / seconds, .p50_us = pct(0.50), .p99_us = pct(0.99)};
}

// Fields of /proc/<pid>/smaps_rollup, in kB.
std::map<std::string, long> ReadSmapsRollup(pid_t pid) {
  std::map<std::string, long> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  long value;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    char name[64];
    if (std::sscanf(line.c_str(), "%63[^:]: %ld kB", name, &value) == 2) out[name] = value;
  }
  return out;
}

int Drive(int calls) {
  std::string address = "@hull-bench-ttrpc-" + std::to_string(::getpid());
  // The listener is made here and inherited on fd 3, as with the shim.
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, address.data() + 1, address.size() - 1);
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener.get(), 16) != 0) {
    return Die(ErrnoError("bind/listen", address));
  }
  pid_t server = ::fork();
  if (server == 0) {
    // dup2 onto itself would keep FD_CLOEXEC; clear it explicitly then.
    if (listener.get() == 3 ? ::fcntl(3, F_SETFD, 0) != 0 : ::dup2(listener.get(), 3) != 3) {
      _exit(127);
    }
    ::execl("/proc/self/exe", "bench_ttrpc", "--serve", static_cast<char*>(nullptr));
    _exit(127);
  }
  listener.reset();
  auto fresh = ReadSmapsRollup(server);  // may be mid-startup; re-read below

  auto loop = EventLoop::Create();
  if (!loop) return Die(loop.error());
  auto client = Client::Connect(**loop, address);
  if (!client) return Die(client.error());
  RunCalls(**loop, **client, 2000, 1);  // warm-up; also waits for the server to start
  fresh = ReadSmapsRollup(server);
  Figures sequential = RunCalls(**loop, **client, calls, 1);
  Figures pipelined = RunCalls(**loop, **client, calls, 16);
  auto after = ReadSmapsRollup(server);
  client->reset();
  // Let the server notice the closed connection before the last reading.
  (*loop)->RunUntil([] { return false; }, std::chrono::milliseconds(200));
  auto idle = ReadSmapsRollup(server);

  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);

  std::printf("hull ttrpc, unary Echo, %zu-byte payload, unix socket, %d calls per row\n\n",
              kPayloadSize, calls);
  std::printf("| calls in flight | calls/s | p50 (us) | p99 (us) |\n");
  std::printf("|---:|---:|---:|---:|\n");
  std::printf("| 1 | %.0f | %.1f | %.1f |\n", sequential.calls_per_second, sequential.p50_us,
              sequential.p99_us);
  std::printf("| 16 | %.0f | %.1f | %.1f |\n\n", pipelined.calls_per_second, pipelined.p50_us,
              pipelined.p99_us);
  std::printf("| server process (kB) | Rss | Pss | Private_Dirty |\n");
  std::printf("|---|---:|---:|---:|\n");
  auto row = [](const char* what, std::map<std::string, long>& m) {
    std::printf("| %s | %ld | %ld | %ld |\n", what, m["Rss"], m["Pss"], m["Private_Dirty"]);
  };
  row("after 2000 warm-up calls", fresh);
  row("after all calls, client connected", after);
  row("idle, client gone", idle);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hull::ttrpc

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--serve") == 0) return hull::ttrpc::Serve();
  int calls = argc > 1 ? std::atoi(argv[1]) : 100000;
  if (calls <= 0) calls = 100000;
  return hull::ttrpc::Drive(calls);
}
