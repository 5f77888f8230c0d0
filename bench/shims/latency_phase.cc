// ctr-level latency (run --rm, exec) and the task API's throughput, with the
// variants interleaved call by call.
#include <cstdio>
#include <optional>

#include "bench/shims/host_ops.h"
#include "bench/shims/measure.h"
#include "bench/shims/phases.h"
#include "bench/shims/shim_client.h"

namespace hull::bench {

namespace {

using Samples = std::array<std::vector<double>, kKinds>;

std::array<double, kKinds> QuantileOf(const Samples& samples, double q) {
  std::array<double, kKinds> out;
  for (int k = 0; k < kKinds; ++k) out[k] = Quantile(samples[k], q);
  return out;
}

std::vector<double>& Of(Samples& samples, const Variant& v) {
  return samples[static_cast<int>(v.kind)];
}

}  // namespace

Status MeasureRunLatency(BenchEnv& env, const PhaseOptions& options, Report& report) {
  auto run_once = [&](const Variant& v) -> Result<double> {
    std::string id = env.NewId("hb-run");
    auto t0 = Clock::now();
    itest::CommandResult r = env.Run(v, {"--rm"}, id, {"/bin/true"});
    double ms = MillisecondsSince(t0);
    if (!r.ok()) return InternalError(v.name + ": ctr run --rm " + id + ": " + r.Describe());
    return ms;
  };
  for (const Variant& v : env.variants()) HULL_RETURN_IF_ERROR(run_once(v));  // warm-up
  Samples samples;
  for (int i = 0; i < options.run_count; ++i) {
    if (i % 10 == 0) std::fprintf(stderr, "ctr run --rm: %d/%d\n", i, options.run_count);
    for (const Variant* v : RoundOrder(env.variants(), i)) {
      HULL_ASSIGN_OR_RETURN(double ms, run_once(*v));
      Of(samples, *v).push_back(ms);
    }
  }
  HULL_RETURN_IF_ERROR(env.WaitForNoShims(std::chrono::seconds(30)));
  const std::string section =
      "Latency (ms; " + std::to_string(options.run_count) + " runs per variant, interleaved)";
  report.Add({section, "`ctr run --rm busybox /bin/true`, median", QuantileOf(samples, 0.5), 1,
              Target::RatioAtMost(0.85)});
  report.Add({section, "`ctr run --rm busybox /bin/true`, p90", QuantileOf(samples, 0.9), 1,
              Target::None()});
  return Status::Ok();
}

Status MeasureExecAndState(BenchEnv& env, const PhaseOptions& options, Report& report) {
  std::array<std::string, kKinds> ids;
  std::vector<std::string> all_ids;
  for (const Variant& v : env.variants()) {
    std::string id = env.NewId("hb-exec");
    itest::CommandResult r = env.Run(v, {"-d"}, id, {"sleep", "inf"});
    all_ids.push_back(id);
    if (!r.ok()) {
      env.RemoveAll(all_ids).IgnoreError();
      return InternalError(v.name + ": ctr run -d: " + r.Describe());
    }
    ids[static_cast<int>(v.kind)] = id;
  }
  auto exec_once = [&](const Variant& v, const std::string& exec_id) -> Result<double> {
    auto t0 = Clock::now();
    itest::CommandResult r =
        env.Ctr({"task", "exec", "--exec-id", exec_id, ids[static_cast<int>(v.kind)], "/bin/true"});
    double ms = MillisecondsSince(t0);
    if (!r.ok()) return InternalError(v.name + ": ctr task exec: " + r.Describe());
    return ms;
  };

  auto measure = [&]() -> Status {
    for (const Variant& v : env.variants()) HULL_RETURN_IF_ERROR(exec_once(v, "warm"));
    Samples exec;
    for (int i = 0; i < options.exec_count; ++i) {
      if (i % 10 == 0) std::fprintf(stderr, "ctr task exec: %d/%d\n", i, options.exec_count);
      for (const Variant* v : RoundOrder(env.variants(), i)) {
        HULL_ASSIGN_OR_RETURN(double ms, exec_once(*v, "e" + std::to_string(i)));
        Of(exec, *v).push_back(ms);
      }
    }
    const std::string latency =
        "Latency (ms; " + std::to_string(options.exec_count) + " execs per variant, interleaved)";
    report.Add({latency, "`ctr task exec /bin/true`, median", QuantileOf(exec, 0.5), 1,
                Target::RatioAtMost(0.85)});
    report.Add(
        {latency, "`ctr task exec /bin/true`, p90", QuantileOf(exec, 0.9), 1, Target::None()});

    // One client per shim, all made by hull's ttrpc client the same way.
    std::array<std::unique_ptr<ShimClient>, kKinds> clients;
    std::array<pid_t, kKinds> shim_pids;
    for (const Variant& v : env.variants()) {
      int k = static_cast<int>(v.kind);
      HULL_ASSIGN_OR_RETURN(std::string address, ReadShimAddress(env.bundle(ids[k])));
      HULL_ASSIGN_OR_RETURN(clients[k], ShimClient::Dial(address));
      HULL_ASSIGN_OR_RETURN(auto connected, clients[k]->Connect(ids[k], std::chrono::seconds(5)));
      shim_pids[k] = static_cast<pid_t>(connected.shim_pid());
      HULL_ASSIGN_OR_RETURN(auto state, clients[k]->State(ids[k]));
      if (state.status() != containerd::v1::types::RUNNING) {
        return InternalError(v.name + ": State does not say RUNNING");
      }
      HULL_RETURN_IF_ERROR(clients[k]->StateCallsPerSecond(ids[k], 500, 1));  // warm-up
    }
    // Rounds of sequential and pipelined State calls, variants alternating;
    // once as the scheduler places client and shim, once with both pinned to
    // CPU 0 (see CpuPin: that takes the cross-CPU wake-up out of each round
    // trip and leaves the cost of the call itself).
    auto rounds = [&](const std::string& when, bool pinned) -> Status {
      Samples sequential, pipelined;
      for (int round = 0; round < options.state_rounds; ++round) {
        std::fprintf(stderr, "State calls, %s: round %d/%d\n", when.c_str(), round + 1,
                     options.state_rounds);
        for (const Variant* v : RoundOrder(env.variants(), round)) {
          int k = static_cast<int>(v->kind);
          std::optional<CpuPin> pin;
          if (pinned) {
            HULL_ASSIGN_OR_RETURN(CpuPin p, CpuPin::Start({shim_pids[k]}, 0));
            pin.emplace(std::move(p));
          }
          HULL_ASSIGN_OR_RETURN(double one,
                                clients[k]->StateCallsPerSecond(ids[k], options.state_calls, 1));
          HULL_ASSIGN_OR_RETURN(double many,
                                clients[k]->StateCallsPerSecond(ids[k], options.state_calls, 16));
          std::fprintf(stderr, "  %-9s %8.0f calls/s one at a time, %8.0f with 16 in flight\n",
                       v->name.c_str(), one, many);
          sequential[k].push_back(one);
          pipelined[k].push_back(many);
        }
      }
      const std::string section = "Task API throughput (State calls/s from hull's ttrpc client, " +
                                  std::to_string(options.state_calls) + " calls x " +
                                  std::to_string(options.state_rounds) + " rounds, median)";
      report.Add({section, "State calls/s, one at a time, " + when, QuantileOf(sequential, 0.5), 0,
                  Target::RatioAtLeast(2)});
      report.Add({section, "State calls/s, 16 in flight, " + when, QuantileOf(pipelined, 0.5), 0,
                  Target::None()});
      return Status::Ok();
    };
    HULL_RETURN_IF_ERROR(rounds("unpinned", false));
    HULL_RETURN_IF_ERROR(rounds("client and shim on one CPU", true));

    // What serving exec and ~10^5 calls left behind in each shim.
    std::array<double, kKinds> rss, dirty, threads;
    for (int k = 0; k < kKinds; ++k) {
      HULL_ASSIGN_OR_RETURN(ProcessMemory m, ReadProcessMemory(shim_pids[k]));
      rss[k] = m.rss_kb;
      dirty[k] = m.private_dirty_kb;
      threads[k] = m.threads;
    }
    const std::string after = "Memory of the 1-container shim after the exec and State runs";
    report.Add({after, "RSS (kB)", rss, 0, Target::RatioAtMost(0.35)});
    report.Add({after, "Private_Dirty (kB)", dirty, 0, Target::RatioAtMost(0.2)});
    report.Add({after, "threads", threads, 0, Target::HullEquals(1)});
    return Status::Ok();
  };
  Status status = measure();
  Status removed = env.RemoveAll(all_ids);
  return status.ok() ? removed : status;
}

}  // namespace hull::bench
