// Memory of idle shims, per layout: every variant in turn starts the pods
// (`ctr run -d ... sleep inf`), waits `settle`, reads smaps_rollup and the
// thread count of every shim process of its kind, and removes them.
#include <thread>

#include "bench/shims/measure.h"
#include "bench/shims/phases.h"

namespace hull::bench {

namespace {

constexpr char kSandboxAnnotation[] = "io.kubernetes.cri.sandbox-id";

struct Layout {
  std::string name;
  int pods;
  int containers_per_pod;
  int rounds;
};

// Starts the layout for `v`, measures its shims, removes everything.
Result<GroupMemory> MeasureLayout(BenchEnv& env, const Variant& v, const Layout& layout,
                                  std::chrono::milliseconds settle) {
  std::vector<std::string> ids;
  Status status;
  for (int p = 0; p < layout.pods && status.ok(); ++p) {
    std::string pod = env.NewId("hb-pod");
    for (int k = 0; k < layout.containers_per_pod && status.ok(); ++k) {
      std::string id = env.NewId("hb-mem");
      std::vector<std::string> flags = {"-d"};
      if (layout.containers_per_pod > 1) {
        flags.push_back("--annotation");
        flags.push_back(std::string(kSandboxAnnotation) + "=" + pod);
      }
      itest::CommandResult r = env.Run(v, flags, id, {"sleep", "inf"});
      ids.push_back(id);
      if (!r.ok()) status = InternalError(v.name + ": ctr run -d " + id + ": " + r.Describe());
    }
  }
  if (!status.ok()) {
    env.RemoveAll(ids).IgnoreError();
    return status;
  }
  std::this_thread::sleep_for(settle);
  Result<GroupMemory> memory = ReadGroupMemory(env.Shims(v.binary));
  HULL_RETURN_IF_ERROR(env.RemoveAll(ids));
  return memory;
}

// The median over rounds of one figure of the per-round samples.
template <typename Get>
std::array<double, kKinds> MedianOf(const std::array<std::vector<GroupMemory>, kKinds>& samples,
                                    Get get) {
  std::array<double, kKinds> out;
  for (int k = 0; k < kKinds; ++k) {
    std::vector<double> values;
    for (const GroupMemory& g : samples[k]) values.push_back(get(g));
    out[k] = Median(values);
  }
  return out;
}

void AddLayoutFigures(const Layout& layout,
                      const std::array<std::vector<GroupMemory>, kKinds>& samples, Report& report) {
  const std::string section =
      "Memory, " + layout.name + " (median of " + std::to_string(layout.rounds) + " rounds)";
  auto add = [&](std::string label, auto get, int decimals, Target target) {
    report.Add({section, std::move(label), MedianOf(samples, get), decimals, target});
  };
  add(
      "shim processes", [](const GroupMemory& g) { return g.processes; }, 0, Target::None());
  add(
      "RSS per shim (kB)", [](const GroupMemory& g) { return g.PerProcess().rss_kb; }, 0,
      Target::RatioAtMost(0.35));
  add(
      "PSS per shim (kB)", [](const GroupMemory& g) { return g.PerProcess().pss_kb; }, 0,
      Target::None());
  add(
      "Private_Dirty per shim (kB)",
      [](const GroupMemory& g) { return g.PerProcess().private_dirty_kb; }, 0,
      Target::RatioAtMost(0.2));
  add(
      "threads per shim", [](const GroupMemory& g) { return g.PerProcess().threads; }, 1,
      Target::HullEquals(1));
  if (layout.pods * layout.containers_per_pod > 1) {
    add(
        "total RSS (kB)", [](const GroupMemory& g) { return g.total.rss_kb; }, 0, Target::None());
    add(
        "total PSS (kB)", [](const GroupMemory& g) { return g.total.pss_kb; }, 0, Target::None());
    add(
        "total Private_Dirty (kB)", [](const GroupMemory& g) { return g.total.private_dirty_kb; },
        0, Target::None());
    add(
        "total PSS per container (kB)",
        [&](const GroupMemory& g) {
          return g.total.pss_kb / (layout.pods * layout.containers_per_pod);
        },
        0, Target::None());
  }
}

}  // namespace

Status MeasureMemory(BenchEnv& env, const PhaseOptions& options, Report& report) {
  const std::vector<Layout> layouts = {
      {"1 idle pod of 1 container", 1, 1, options.memory_rounds},
      {std::to_string(options.pods) + " idle pods of 1 container", options.pods, 1,
       options.big_memory_rounds},
      {std::to_string(options.grouped_pods) + " idle pods of " +
           std::to_string(options.grouped_size) + " containers (grouped by sandbox id)",
       options.grouped_pods, options.grouped_size, options.big_memory_rounds},
  };
  for (const Layout& layout : layouts) {
    std::array<std::vector<GroupMemory>, kKinds> samples;
    for (int round = 0; round < layout.rounds; ++round) {
      for (const Variant* v : RoundOrder(env.variants(), round)) {
        std::fprintf(stderr, "memory: %s, round %d, %s\n", layout.name.c_str(), round + 1,
                     v->name.c_str());
        HULL_ASSIGN_OR_RETURN(GroupMemory g, MeasureLayout(env, *v, layout, options.settle));
        samples[static_cast<int>(v->kind)].push_back(g);
      }
    }
    AddLayoutFigures(layout, samples, report);
  }
  return Status::Ok();
}

}  // namespace hull::bench
