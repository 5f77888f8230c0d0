// A shim's `start` until its server answers Connect, done the way containerd
// 1.6 does it: a bundle with config.json and a `log` FIFO that is being read,
// argv `-namespace default -address <grpc> -publish-binary <containerd> -id
// <id> start`, cwd = bundle, env + GOMAXPROCS=2 + TTRPC_ADDRESS, stdout and
// stderr read to EOF. Then hull's ttrpc client dials the printed address and
// calls Connect until it is answered. The clock runs from the spawn of
// `start` to that first answer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "bench/shims/host_ops.h"
#include "bench/shims/measure.h"
#include "bench/shims/phases.h"
#include "bench/shims/shim_client.h"

namespace hull::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct StartSample {
  double start_exit_ms = 0;  // `start` printed its address and exited
  double connect_ms = 0;     // first answered Connect
  ProcessMemory fresh;       // the server right after, holding no container
};

class StartRun {
 public:
  StartRun(BenchEnv& env, const std::string& binary, const std::string& spec)
      : env_(env), binary_(binary), spec_(spec) {}

  Result<StartSample> Measure() {
    id_ = env_.NewId("hb-start");
    bundle_ = env_.containerd().dir() + "/bench/start/" + id_;
    HULL_RETURN_IF_ERROR(PrepareBundle());
    const std::string grpc = env_.containerd().address();
    std::vector<std::string> flags = {
        binary_,           "-namespace",          "default", "-address", grpc,
        "-publish-binary", "/usr/bin/containerd", "-id",     id_};
    flags.push_back("start");

    StartSample sample;
    auto t0 = Clock::now();
    HULL_ASSIGN_OR_RETURN(
        SyncResult start,
        RunIn(bundle_, flags, {"GOMAXPROCS=2", "TTRPC_ADDRESS=" + grpc + ".ttrpc"}));
    sample.start_exit_ms = MillisecondsSince(t0);
    if (start.exit_status != 0) {
      return InternalError(binary_ + " start: exit " + std::to_string(start.exit_status) + ": " +
                           start.output);
    }
    address_ = start.output;
    while (!address_.empty() && std::isspace(static_cast<unsigned char>(address_.back()))) {
      address_.pop_back();
    }
    // The server is being spawned; call Connect until it answers.
    const auto deadline = t0 + 10s;
    Status last;
    while (Clock::now() < deadline) {
      auto client = ShimClient::Dial(address_);
      if (client) {
        auto connected = (*client)->Connect(id_, 2s);
        if (connected) {
          sample.connect_ms = MillisecondsSince(t0);
          server_pid_ = static_cast<pid_t>(connected->shim_pid());
          client_ = std::move(*client);
          break;
        }
        last = connected.error();
      } else {
        last = client.error();
      }
      std::this_thread::sleep_for(100us);
    }
    if (client_ == nullptr) return last.WithContext(binary_ + ": no answer to Connect");
    HULL_ASSIGN_OR_RETURN(sample.fresh, ReadProcessMemory(server_pid_));
    return sample;
  }

  // Shutdown, then the `delete` action as containerd runs it after a shim
  // exits, then whatever socket and files are left.
  void CleanUp() {
    if (client_ != nullptr) {
      client_->Shutdown(id_);
      client_.reset();
    }
    if (server_pid_ > 0) WaitForExit(server_pid_, 10s).IgnoreError();
    const std::string grpc = env_.containerd().address();
    if (fs::exists(bundle_)) {
      RunIn(bundle_,
            {binary_, "-namespace", "default", "-address", grpc, "-publish-binary",
             "/usr/bin/containerd", "-id", id_, "-bundle", bundle_, "delete"},
            {"TTRPC_ADDRESS=" + grpc + ".ttrpc"})
          .status()
          .IgnoreError();
    }
    if (address_.starts_with("unix://")) {
      std::error_code ec;
      std::string socket = address_.substr(7);
      if (fs::is_socket(socket, ec)) fs::remove(socket, ec);
    }
    log_.reset();
    std::error_code ec;
    fs::remove_all(bundle_, ec);
  }

 private:
  // config.json, and the log FIFO held open for reading as containerd does
  // (the Go server opens it for writing and fails without it).
  Status PrepareBundle() {
    std::error_code ec;
    fs::create_directories(bundle_, ec);
    if (ec) return InternalError("mkdir " + bundle_ + ": " + ec.message());
    if (!WriteWholeFile(bundle_ + "/config.json", spec_)) {
      return InternalError("write " + bundle_ + "/config.json");
    }
    const std::string log = bundle_ + "/log";
    if (::mkfifo(log.c_str(), 0700) != 0) return ErrnoError("mkfifo", log);
    log_ = UniqueFd(::open(log.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!log_) return ErrnoError("open", log);
    return Status::Ok();
  }

  BenchEnv& env_;
  std::string binary_;
  std::string spec_;
  std::string id_, bundle_, address_;
  UniqueFd log_;
  pid_t server_pid_ = 0;
  std::unique_ptr<ShimClient> client_;
};

}  // namespace

Status MeasureShimStart(BenchEnv& env, const PhaseOptions& options, Report& report) {
  HULL_ASSIGN_OR_RETURN(std::string spec,
                        MakeOciSpec(env.containerd().dir() + "/bench/spec", {"sleep", "inf"}));
  // hull/runc and hull/crun run the same binary here; the runtime is not
  // involved before Create.
  const std::vector<Variant>& all = env.variants();
  std::vector<Variant> shims = {all[static_cast<int>(Kind::kHull)],
                                all[static_cast<int>(Kind::kGo)]};
  std::array<std::vector<StartSample>, kKinds> samples;
  for (int i = -1; i < options.start_count; ++i) {  // i = -1: warm-up
    if (i % 10 == 0) std::fprintf(stderr, "shim start: %d/%d\n", i, options.start_count);
    for (const Variant* v : RoundOrder(shims, i + 1)) {
      StartRun run(env, v->binary, spec);
      Result<StartSample> sample = run.Measure();
      run.CleanUp();
      if (!sample) return sample.error();
      if (i >= 0) samples[static_cast<int>(v->kind)].push_back(*sample);
    }
  }
  auto figure = [&](auto get, double q) {
    std::array<double, kKinds> out = NotMeasuredRow();
    for (int k = 0; k < kKinds; ++k) {
      if (samples[k].empty()) continue;
      std::vector<double> values;
      for (const StartSample& s : samples[k]) values.push_back(get(s));
      out[k] = Quantile(values, q);
    }
    return out;
  };
  const std::string latency =
      "Shim start (ms; " + std::to_string(options.start_count) + " per shim, interleaved)";
  report.Add({latency, "`start` until the first answered Connect, median",
              figure([](const StartSample& s) { return s.connect_ms; }, 0.5), 1, Target::None()});
  report.Add({latency, "`start` until the first answered Connect, p90",
              figure([](const StartSample& s) { return s.connect_ms; }, 0.9), 1, Target::None()});
  report.Add({latency, "`start` until it exits (address printed), median",
              figure([](const StartSample& s) { return s.start_exit_ms; }, 0.5), 1,
              Target::None()});
  const std::string memory = "Memory of a fresh shim server (no container, after Connect; median)";
  report.Add({memory, "RSS (kB)", figure([](const StartSample& s) { return s.fresh.rss_kb; }, 0.5),
              0, Target::None()});
  report.Add({memory, "PSS (kB)", figure([](const StartSample& s) { return s.fresh.pss_kb; }, 0.5),
              0, Target::None()});
  report.Add({memory, "Private_Dirty (kB)",
              figure([](const StartSample& s) { return s.fresh.private_dirty_kb; }, 0.5), 0,
              Target::None()});
  report.Add({memory, "threads", figure([](const StartSample& s) { return s.fresh.threads; }, 0.5),
              0, Target::None()});
  return Status::Ok();
}

}  // namespace hull::bench
