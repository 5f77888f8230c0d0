// bench_shims: hull against containerd's Go runc shim (containerd-shim-runc-v2)
// on one private containerd, with the same runc and busybox rootfs,
// alternating between them; also hull driving crun and runsc. Prints a Markdown table
// (values per variant, the hull/Go ratio, the target). Needs root. Run it
// through bench/run, which builds what it needs; see docs/benchmarks.md.
//
//   bench_shims [--quick] [--phases memory,run,exec,start,alone] [--runs N]
//               [--exec-runs N] [--start-runs N] [--alone-runs N]
//               [--state-calls N] [--state-rounds N] [--pods N]
//               [--grouped-pods N] [--grouped-size N] [--memory-rounds N]
//               [--big-memory-rounds N] [--settle-ms N] [--debug-log] [--unconfined]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "bench/shims/bench_env.h"
#include "bench/shims/measure.h"
#include "bench/shims/phases.h"
#include "bench/shims/report.h"
#include "tests/integration/harness/command.h"

namespace hull::bench {
namespace {

constexpr char kUsage[] =
    "usage: bench_shims [--quick] [--phases memory,run,exec,start,alone] [--runs N]\n"
    "       [--exec-runs N] [--start-runs N] [--alone-runs N] [--state-calls N]\n"
    "       [--state-rounds N] [--pods N] [--grouped-pods N] [--grouped-size N]\n"
    "       [--memory-rounds N] [--big-memory-rounds N] [--settle-ms N] [--debug-log]\n"
    "       [--unconfined]   hull's servers run with [security] confine = false\n"
    "                        (confined, the default, otherwise)\n";

struct Flags {
  PhaseOptions phases;
  BenchOptions env;
  std::set<std::string> selected = {"memory", "run", "exec", "start", "alone"};
};

Result<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  std::map<std::string, int*> ints = {
      {"--runs", &f.phases.run_count},
      {"--exec-runs", &f.phases.exec_count},
      {"--start-runs", &f.phases.start_count},
      {"--alone-runs", &f.phases.alone_count},
      {"--state-calls", &f.phases.state_calls},
      {"--state-rounds", &f.phases.state_rounds},
      {"--pods", &f.phases.pods},
      {"--grouped-pods", &f.phases.grouped_pods},
      {"--grouped-size", &f.phases.grouped_size},
      {"--memory-rounds", &f.phases.memory_rounds},
      {"--big-memory-rounds", &f.phases.big_memory_rounds},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {  // a smoke test of the bench itself, not figures
      f.phases = {.run_count = 3,
                  .exec_count = 3,
                  .start_count = 3,
                  .alone_count = 3,
                  .state_calls = 500,
                  .state_rounds = 2,
                  .pods = 3,
                  .grouped_pods = 2,
                  .grouped_size = 2,
                  .memory_rounds = 1,
                  .big_memory_rounds = 1,
                  .settle = std::chrono::milliseconds(500)};
    } else if (arg == "--debug-log") {
      f.env.debug_log = true;
    } else if (arg == "--unconfined") {
      f.env.confine = false;
    } else if (i + 1 < argc && (ints.contains(arg) || arg == "--settle-ms" || arg == "--phases")) {
      std::string value = argv[++i];
      if (arg == "--phases") {
        f.selected.clear();
        std::stringstream list(value);
        for (std::string p; std::getline(list, p, ',');) f.selected.insert(p);
        continue;
      }
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || n < 1) return InvalidArgumentError(arg + " wants a positive number");
      if (arg == "--settle-ms") {
        f.phases.settle = std::chrono::milliseconds(n);
      } else {
        *ints[arg] = static_cast<int>(n);
      }
    } else {
      return InvalidArgumentError("unknown argument " + arg);
    }
  }
  return f;
}

std::string FirstLine(const std::vector<std::string>& argv) {
  itest::CommandResult r = itest::RunCommand(argv);
  std::string line = r.out.substr(0, r.out.find('\n'));
  return line.empty() ? "?" : line;
}

std::string CpuModel() {
  std::stringstream cpuinfo(ReadWholeFile("/proc/cpuinfo"));
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  }
  return "?";
}

std::string Machine() {
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::string out;
  out += "Date: " + std::string(date) + "\n";
  out += "Machine: nproc " + std::to_string(std::thread::hardware_concurrency()) + ", " +
         CpuModel() + ", Linux " + FirstLine({"uname", "-r"}) + "\n";
  out += "containerd: " + FirstLine({"containerd", "--version"}) + "\n";
  out += "runc: " + FirstLine({"runc", "--version"}) +
         "; crun: " + FirstLine({"crun", "--version"}) +
         "; runsc: " + FirstLine({"runsc", "--version"}) + "\n";
  if (const char* rev = std::getenv("HULL_BENCH_REVISION"); rev != nullptr) {
    out += "hull: " + std::string(rev) + "\n";
  }
  out += "Go shim: /usr/bin/containerd-shim-runc-v2 (" +
         FirstLine({"dpkg-query", "-W", "-f", "${Version}", "containerd"}) + ")\n";
  return out;
}

int Main(int argc, char** argv) {
  Result<Flags> flags = ParseFlags(argc, argv);
  if (!flags) {
    std::fprintf(stderr, "bench_shims: %s\n%s", flags.error().message().c_str(), kUsage);
    return 2;
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "bench_shims: needs root (containerd, runc, mounts)\n");
    return 2;
  }
  const double load_before = LoadAverage();
  Result<std::unique_ptr<BenchEnv>> env = BenchEnv::Create(flags->env);
  if (!env) {
    std::fprintf(stderr, "bench_shims: %s\n", env.error().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "bench_shims: containerd in %s\n", (*env)->containerd().dir().c_str());

  Report report;
  using Phase = Status (*)(BenchEnv&, const PhaseOptions&, Report&);
  const std::vector<std::pair<std::string, Phase>> phases = {
      {"memory", MeasureMemory},   {"run", MeasureRunLatency},     {"exec", MeasureExecAndState},
      {"start", MeasureShimStart}, {"alone", MeasureRuntimeAlone},
  };
  auto started = Clock::now();
  for (const auto& [name, phase] : phases) {
    if (!flags->selected.contains(name)) continue;
    std::fprintf(stderr, "== %s (load %.2f)\n", name.c_str(), LoadAverage());
    if (Status s = phase(**env, flags->phases, report); !s.ok()) {
      std::fprintf(stderr, "bench_shims: %s: %s\n", name.c_str(), s.ToString().c_str());
      std::fprintf(stderr, "containerd log tail:\n%s\n", (*env)->containerd().LogTail(30).c_str());
      return 1;
    }
  }
  char load[256];
  std::snprintf(
      load, sizeof load,
      "Load average (1 min): %.2f before, %.2f after; %.0f s in all. "
      "containerd log level: %s. hull servers confined: %s.",
      load_before, LoadAverage(), MillisecondsSince(started) / 1000,
      flags->env.debug_log ? "debug (shims get -debug)" : "info",
      flags->env.confine ? "yes ([security] confine = true)" : "no ([security] confine = false)");
  report.Note(load);
  std::printf("%s%s", Machine().c_str(), report.Markdown().c_str());
  return 0;
}

}  // namespace
}  // namespace hull::bench

int main(int argc, char** argv) {
  return hull::bench::Main(argc, argv);
}
