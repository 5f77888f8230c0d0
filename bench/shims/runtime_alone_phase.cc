// runc and crun on their own: what every shim must pay per `ctr run --rm`
// and per `ctr task exec`. The busybox rootfs from the same image, `runc
// spec` defaults, output to a memfd (the container inherits it), runtime
// state under the bench's directory, no shim and no containerd.
// Lifecycle: `create --pid-file`, `start`, wait for the container's init to
// exit (through a pidfd: it is not our child), `delete`.
// Exec: `exec <id> /bin/true` in the foreground into a container running
// `sleep inf`.
#include <cstdio>
#include <filesystem>

#include "bench/shims/host_ops.h"
#include "bench/shims/measure.h"
#include "bench/shims/phases.h"

namespace hull::bench {

using namespace std::chrono_literals;

namespace {

// One OCI runtime CLI with its own state root, run in `bundle`.
struct RuntimeCli {
  std::string runtime, root, bundle;

  Status Run(std::vector<std::string> args) const {
    const std::string verb = args.front();
    args.insert(args.begin(), {runtime, "--root", root});
    HULL_ASSIGN_OR_RETURN(SyncResult r, RunIn(bundle, args, {}, Capture::kMemfd));
    if (r.exit_status != 0) {
      return InternalError(runtime + " " + verb + ": exit " + std::to_string(r.exit_status) + ": " +
                           r.output);
    }
    return Status::Ok();
  }

  // create + start; the init's pid.
  Result<pid_t> CreateAndStart(const std::string& id) const {
    const std::string pid_file = bundle + "/" + id + ".pid";
    HULL_RETURN_IF_ERROR(Run({"create", "--bundle", bundle, "--pid-file", pid_file, id}));
    pid_t pid = static_cast<pid_t>(std::strtol(ReadWholeFile(pid_file).c_str(), nullptr, 10));
    std::remove(pid_file.c_str());
    HULL_RETURN_IF_ERROR(Run({"start", id}));
    return pid;
  }
};

struct Lifecycle {
  double create_ms = 0, start_ms = 0, wait_ms = 0, delete_ms = 0, total_ms = 0;
};

Result<Lifecycle> RunOnce(const RuntimeCli& cli, const std::string& id) {
  const std::string pid_file = cli.bundle + "/" + id + ".pid";
  Lifecycle l;
  auto t0 = Clock::now();
  HULL_RETURN_IF_ERROR(cli.Run({"create", "--bundle", cli.bundle, "--pid-file", pid_file, id}));
  l.create_ms = MillisecondsSince(t0);
  pid_t pid = static_cast<pid_t>(std::strtol(ReadWholeFile(pid_file).c_str(), nullptr, 10));
  std::remove(pid_file.c_str());
  auto t1 = Clock::now();
  HULL_RETURN_IF_ERROR(cli.Run({"start", id}));
  l.start_ms = MillisecondsSince(t1);
  auto t2 = Clock::now();
  if (pid > 0) HULL_RETURN_IF_ERROR(WaitForExit(pid, 10s));
  l.wait_ms = MillisecondsSince(t2);
  auto t3 = Clock::now();
  HULL_RETURN_IF_ERROR(cli.Run({"delete", id}));
  l.delete_ms = MillisecondsSince(t3);
  l.total_ms = MillisecondsSince(t0);
  return l;
}

// runc's figure goes in both runc columns (hull/runc and Go/runc drive the
// same runc), crun's in hull/crun's; runsc is not measured alone.
std::array<double, kKinds> Columns(double runc, double crun) {
  std::array<double, kKinds> out = NotMeasuredRow();
  out[static_cast<int>(Kind::kHull)] = runc;
  out[static_cast<int>(Kind::kGo)] = runc;
  out[static_cast<int>(Kind::kHullCrun)] = crun;
  return out;
}

}  // namespace

Status MeasureRuntimeAlone(BenchEnv& env, const PhaseOptions& options, Report& report) {
  const std::string base = env.containerd().dir() + "/bench/alone";
  const std::string rootfs = base + "/rootfs";
  HULL_RETURN_IF_ERROR(ExtractRootfs(itest::SourceDir() + "/build/images/busybox.tar", rootfs));
  // Two bundles on the one rootfs: /bin/true for the lifecycle, sleep for exec.
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"true", {"/bin/true"}}, {"sleep", {"sleep", "inf"}}}) {
    HULL_ASSIGN_OR_RETURN(std::string spec, MakeOciSpec(base + "/spec", args, rootfs));
    std::error_code ec;
    std::filesystem::create_directories(base + "/" + name, ec);
    if (!WriteWholeFile(base + "/" + name + "/config.json", spec)) {
      return InternalError("write " + base + "/" + name + "/config.json");
    }
  }
  const std::vector<std::string> runtimes = {"runc", "crun"};
  auto cli = [&](size_t r, const std::string& bundle) {
    return RuntimeCli{runtimes[r], base + "/" + runtimes[r] + "-root", base + "/" + bundle};
  };

  std::vector<std::vector<Lifecycle>> lifecycles(runtimes.size());
  std::vector<std::vector<double>> execs(runtimes.size());
  std::vector<std::string> sleepers;
  for (size_t r = 0; r < runtimes.size(); ++r) {
    sleepers.push_back(env.NewId("hb-alone-sleep"));
    HULL_RETURN_IF_ERROR(cli(r, "sleep").CreateAndStart(sleepers[r]));
  }
  auto measure = [&]() -> Status {
    for (int i = -1; i < options.alone_count; ++i) {  // i = -1: warm-up
      if (i % 10 == 0) std::fprintf(stderr, "runtime alone: %d/%d\n", i, options.alone_count);
      for (size_t n = 0; n < runtimes.size(); ++n) {
        size_t r = (i % 2 == 0) ? n : runtimes.size() - 1 - n;
        HULL_ASSIGN_OR_RETURN(Lifecycle l, RunOnce(cli(r, "true"), env.NewId("hb-alone")));
        auto t0 = Clock::now();
        HULL_RETURN_IF_ERROR(cli(r, "sleep").Run({"exec", sleepers[r], "/bin/true"}));
        double exec_ms = MillisecondsSince(t0);
        if (i >= 0) {
          lifecycles[r].push_back(l);
          execs[r].push_back(exec_ms);
        }
      }
    }
    return Status::Ok();
  };
  Status status = measure();
  for (size_t r = 0; r < runtimes.size(); ++r) {
    cli(r, "sleep").Run({"delete", "--force", sleepers[r]}).IgnoreError();
  }
  HULL_RETURN_IF_ERROR(status);

  auto figure = [&](auto get) {
    std::array<double, 2> m;
    for (size_t r = 0; r < runtimes.size(); ++r) {
      std::vector<double> values;
      for (const Lifecycle& l : lifecycles[r]) values.push_back(get(l));
      m[r] = Median(values);
    }
    return Columns(m[0], m[1]);
  };
  const std::string section = "The OCI runtime alone, no shim (ms, median of " +
                              std::to_string(options.alone_count) +
                              "; the runc columns show runc, the crun column crun)";
  auto add = [&](std::string label, std::array<double, kKinds> values) {
    report.Add({section, std::move(label), values, 1, Target::None(), false});
  };
  add("create", figure([](const Lifecycle& l) { return l.create_ms; }));
  add("start", figure([](const Lifecycle& l) { return l.start_ms; }));
  add("until /bin/true exited", figure([](const Lifecycle& l) { return l.wait_ms; }));
  add("delete", figure([](const Lifecycle& l) { return l.delete_ms; }));
  add("create + start + wait + delete", figure([](const Lifecycle& l) { return l.total_ms; }));
  add("exec /bin/true (foreground)", Columns(Median(execs[0]), Median(execs[1])));
  return Status::Ok();
}

}  // namespace hull::bench
