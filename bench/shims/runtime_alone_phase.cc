// runc and crun on their own: what every shim must pay per `ctr run --rm`.
// One bundle (busybox rootfs from the same image, `runc spec` defaults,
// /bin/true), stdio /dev/null, runtime state under the bench's directory.
// Per run: `create --pid-file`, `start`, wait for the container's init to
// exit (through a pidfd: it is not our child), `delete`.
#include <cstdio>

#include "bench/shims/host_ops.h"
#include "bench/shims/measure.h"
#include "bench/shims/phases.h"

namespace hull::bench {

using namespace std::chrono_literals;

namespace {

struct Lifecycle {
  double create_ms = 0, start_ms = 0, wait_ms = 0, delete_ms = 0, total_ms = 0;
};

Result<Lifecycle> RunOnce(const std::string& runtime, const std::string& root,
                          const std::string& bundle, const std::string& id) {
  auto run = [&](std::vector<std::string> args) -> Status {
    args.insert(args.begin(), {runtime, "--root", root});
    HULL_ASSIGN_OR_RETURN(SyncResult r, RunIn(bundle, args, {}, Capture::kMemfd));
    if (r.exit_status != 0) {
      return InternalError(runtime + " " + args[3] + ": exit " + std::to_string(r.exit_status) +
                           ": " + r.output);
    }
    return Status::Ok();
  };
  const std::string pid_file = bundle + "/" + id + ".pid";
  Lifecycle l;
  auto t0 = Clock::now();
  HULL_RETURN_IF_ERROR(run({"create", "--bundle", bundle, "--pid-file", pid_file, id}));
  l.create_ms = MillisecondsSince(t0);
  pid_t pid = static_cast<pid_t>(std::strtol(ReadWholeFile(pid_file).c_str(), nullptr, 10));
  auto t1 = Clock::now();
  HULL_RETURN_IF_ERROR(run({"start", id}));
  l.start_ms = MillisecondsSince(t1);
  auto t2 = Clock::now();
  if (pid > 0) HULL_RETURN_IF_ERROR(WaitForExit(pid, 10s));
  l.wait_ms = MillisecondsSince(t2);
  auto t3 = Clock::now();
  HULL_RETURN_IF_ERROR(run({"delete", id}));
  l.delete_ms = MillisecondsSince(t3);
  l.total_ms = MillisecondsSince(t0);
  std::remove(pid_file.c_str());
  return l;
}

}  // namespace

Status MeasureRuntimeAlone(BenchEnv& env, const PhaseOptions& options, Report& report) {
  const std::string base = env.containerd().dir() + "/bench/alone";
  const std::string bundle = base + "/bundle";
  HULL_RETURN_IF_ERROR(
      ExtractRootfs(itest::SourceDir() + "/build/images/busybox.tar", bundle + "/rootfs"));
  HULL_ASSIGN_OR_RETURN(std::string spec, MakeOciSpec(base + "/spec", {"/bin/true"}));
  if (!WriteWholeFile(bundle + "/config.json", spec)) return InternalError("write config.json");

  const std::vector<std::string> runtimes = {"runc", "crun"};
  std::vector<std::vector<Lifecycle>> samples(runtimes.size());
  for (int i = -1; i < options.alone_count; ++i) {  // i = -1: warm-up
    for (size_t n = 0; n < runtimes.size(); ++n) {
      size_t r = (i % 2 == 0) ? n : runtimes.size() - 1 - n;
      const std::string& runtime = runtimes[r];
      HULL_ASSIGN_OR_RETURN(Lifecycle l, RunOnce(runtime, base + "/" + runtime + "-root", bundle,
                                                 env.NewId("hb-alone")));
      if (i >= 0) samples[r].push_back(l);
    }
  }
  // runc's figures go in the runc columns (hull/runc and Go/runc are the
  // same runc), crun's in hull/crun's.
  auto figure = [&](auto get) {
    std::array<double, kKinds> out;
    for (size_t r = 0; r < runtimes.size(); ++r) {
      std::vector<double> values;
      for (const Lifecycle& l : samples[r]) values.push_back(get(l));
      double m = Median(values);
      if (r == 0) {
        out[static_cast<int>(Kind::kHull)] = m;
        out[static_cast<int>(Kind::kGo)] = m;
      } else {
        out[static_cast<int>(Kind::kHullCrun)] = m;
      }
    }
    return out;
  };
  const std::string section = "The OCI runtime alone, no shim (ms, median of " +
                              std::to_string(options.alone_count) +
                              "; the runc columns show runc, the crun column crun)";
  report.Add({section, "create", figure([](const Lifecycle& l) { return l.create_ms; }), 1,
              Target::None(), false});
  report.Add({section, "start", figure([](const Lifecycle& l) { return l.start_ms; }), 1,
              Target::None(), false});
  report.Add({section, "until /bin/true exited",
              figure([](const Lifecycle& l) { return l.wait_ms; }), 1, Target::None(), false});
  report.Add({section, "delete", figure([](const Lifecycle& l) { return l.delete_ms; }), 1,
              Target::None(), false});
  report.Add({section, "create + start + wait + delete",
              figure([](const Lifecycle& l) { return l.total_ms; }), 1, Target::None(), false});
  return Status::Ok();
}

}  // namespace hull::bench
