// bench_vm: the vm backend's figures on a private containerd (docs/benchmarks.md,
// "The vm backend"): QEMU start to the agent's Hello (from the pod's
// hull-vm.json), `ctr run --rm` to its exit, `ctr run -d` (boot + first
// container start), `ctr task exec` latency, and the host memory of one idle
// VM pod (QEMU's PSS split by mapping, plus the shim), next to hull with runc and
// containerd's Go runc shim in the same run.
// Prints a Markdown table. Needs root and the guest image next to the shim
// (tools/guest-image --out <build>/guest-image). Usage: bench_vm [--runs N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/vm/bench_stats.h"
#include "tests/integration/harness/harness.h"

namespace hull::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr char kImage[] = "docker.io/hull/busybox:latest";

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::istringstream fields(text.substr(text.rfind(')') + 1));
  std::string state;
  pid_t parent = 0;
  fields >> state >> parent;
  return parent;
}

int Main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
  }
  std::string error;
  auto containerd = itest::PrivateContainerd::Start({}, &error);
  if (!containerd) {
    std::cerr << "bench_vm: start containerd: " << error << "\n";
    return 1;
  }
  if (!containerd->ImportImages("default", &error)) {
    std::cerr << "bench_vm: import images: " << error << "\n";
    return 1;
  }
  const std::string vm_config = containerd->dir() + "/hull-vm.toml";
  std::ofstream(vm_config) << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\n";
  // Columns: hull with runc, hull with the vm backend, containerd's Go runc
  // shim (the yardstick, in the same run).
  enum Kind { kHullRunc = 0, kHullVm = 1, kGoShim = 2, kKinds = 3 };
  auto run = [&](int kind, std::vector<std::string> flags, const std::string& id,
                 std::vector<std::string> cmd) {
    std::vector<std::string> args = {
        "run", "--runtime", kind == kGoShim ? "io.containerd.runc.v2" : "io.containerd.hull.v2"};
    if (kind == kHullVm) args.insert(args.end(), {"--runtime-config-path", vm_config});
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(kImage);
    args.push_back(id);
    args.insert(args.end(), cmd.begin(), cmd.end());
    return containerd->Ctr(args, "default", 180s);
  };
  const std::string tasks = containerd->state() + "/io.containerd.runtime.v2.task/default/";

  Stats run_rm[kKinds], run_d[kKinds], exec[kKinds], ready;
  std::map<std::string, long> qemu_pss;
  long shim_pss[kKinds] = {0, 0, 0};
  long qemu_total = 0;
  int id = 0;
  for (int i = 0; i < runs; ++i) {
    for (int kind = 0; kind < kKinds; ++kind) {
      auto t0 = Clock::now();
      auto r = run(kind, {"--rm"}, "rm" + std::to_string(id++), {"echo", "hi"});
      if (!r.ok() || r.out != "hi\n") {
        std::cerr << "bench_vm: ctr run --rm: " << r.Describe() << "\n";
        return 1;
      }
      run_rm[kind].samples.push_back(Ms(Clock::now() - t0));
    }
  }
  for (int kind = 0; kind < kKinds; ++kind) {
    const std::string pod = "pod" + std::to_string(kind);
    auto t0 = Clock::now();
    auto r = run(kind, {"-d"}, pod, {"sleep", "100000"});
    if (!r.ok()) {
      std::cerr << "bench_vm: ctr run -d: " << r.Describe() << "\n";
      return 1;
    }
    run_d[kind].samples.push_back(Ms(Clock::now() - t0));
    for (int i = 0; i < runs; ++i) {
      auto e0 = Clock::now();
      auto e = containerd->Ctr({"task", "exec", "--exec-id", "e" + std::to_string(i), pod, "true"},
                               "default", 60s);
      if (!e.ok()) {
        std::cerr << "bench_vm: exec: " << e.Describe() << "\n";
        return 1;
      }
      exec[kind].samples.push_back(Ms(Clock::now() - e0));
    }
    std::this_thread::sleep_for(3s);  // let the idle pod settle before reading memory
    // The shim: the parent of QEMU (vm) or of the container's init.
    pid_t child = 0;
    std::istringstream ls(containerd->Ctr({"task", "ls"}).out);
    for (std::string line; std::getline(ls, line);) {
      std::istringstream f(line);
      std::string task;
      pid_t pid = 0;
      if (f >> task >> pid && task == pod) child = pid;
    }
    if (kind == kHullVm) {
      std::ifstream in(tasks + pod + "/hull-vm.json");
      auto record = nlohmann::json::parse(in, nullptr, false);
      if (record.is_object()) child = record.value("qemu_pid", 0);
    }
    shim_pss[kind] = itest::PssKb(ParentOf(child));
    if (kind == kHullVm) {
      std::ifstream in(tasks + pod + "/hull-vm.json");
      auto record = nlohmann::json::parse(in, nullptr, false);
      if (record.is_object()) {
        ready.samples.push_back(record.value("agent_ready_ms", 0.0));
        pid_t qemu = record.value("qemu_pid", 0);
        qemu_total = itest::PssKb(qemu);
        qemu_pss = itest::QemuPssSplitKb(qemu);
      }
    }
    containerd->Ctr({"task", "kill", "-s", "SIGKILL", pod});
    itest::WaitUntil([&] { return containerd->Ctr({"task", "rm", pod}).ok(); }, 60s, 200ms);
    containerd->Ctr({"container", "rm", pod});
  }
  // Boot to agent-ready for every `--rm` run is not kept (the bundle goes);
  // more samples from extra detached pods.
  for (int i = 1; i < runs; ++i) {
    const std::string pod = "ready" + std::to_string(i);
    if (!run(kHullVm, {"-d"}, pod, {"sleep", "100000"}).ok()) break;
    std::ifstream in(tasks + pod + "/hull-vm.json");
    auto record = nlohmann::json::parse(in, nullptr, false);
    if (record.is_object()) ready.samples.push_back(record.value("agent_ready_ms", 0.0));
    containerd->Ctr({"task", "kill", "-s", "SIGKILL", pod});
    itest::WaitUntil([&] { return containerd->Ctr({"task", "rm", pod}).ok(); }, 60s, 200ms);
    containerd->Ctr({"container", "rm", pod});
  }

  std::cout << "Runs: " << runs << "; load average at the end: " << LoadAverage() << "\n\n";
  auto row = [](const std::string& figure, const std::string& vm, const std::string& runc,
                const std::string& go) {
    std::cout << "| " << figure << " | " << vm << " | " << runc << " | " << go << " |\n";
  };
  row("figure (ms: median (min-max))", "hull/vm", "hull/runc", "Go runc shim");
  std::cout << "|---|---:|---:|---:|\n";
  row("QEMU start to agent ready", ready.Cell(), "—", "—");
  row("`ctr run --rm` echo, to exit", run_rm[kHullVm].Cell(), run_rm[kHullRunc].Cell(),
      run_rm[kGoShim].Cell());
  row("`ctr run -d` (boot + first container start)", run_d[kHullVm].Cell(), run_d[kHullRunc].Cell(),
      run_d[kGoShim].Cell());
  row("`ctr task exec` true", exec[kHullVm].Cell(), exec[kHullRunc].Cell(), exec[kGoShim].Cell());
  row("shim PSS, idle pod (kB)", std::to_string(shim_pss[kHullVm]),
      std::to_string(shim_pss[kHullRunc]), std::to_string(shim_pss[kGoShim]));
  row("QEMU PSS, idle pod (kB)", std::to_string(qemu_total), "—", "—");
  for (const auto& [part, kb] : qemu_pss) {
    row("&nbsp;&nbsp;of which " + part + " (kB)", std::to_string(kb), "", "");
  }
  return 0;
}

}  // namespace
}  // namespace hull::bench

int main(int argc, char** argv) {
  return hull::bench::Main(argc, argv);
}
