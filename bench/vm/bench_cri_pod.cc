// bench_cri_pod: pod start through CRI, as kubelet asks for it, on a private
// containerd 1.6.20 with its CRI plugin and the pod network (CNI bridge on
// 127.201.0.0/24, the harness's): RunPodSandbox to the sandbox ready (the
// call returns when it is; PodSandboxStatus then says SANDBOX_READY), and to
// the first container running (RunPodSandbox + CreateContainer +
// StartContainer; ContainerStatus then says CONTAINER_RUNNING), for the
// runtime handlers `hull-vm-clone` (hull's vm backend, [vm] templates = true:
// every pod a clone of the template, built by a first pod that is not
// counted), `hull-vm` (the vm backend's cold boots), `hull` (hull with runc)
// and `runc` (containerd's Go runc shim), interleaved in the same run. The
// pod is the CRI tests' (1.5 CPUs, 256 MiB: a VM of 2 vCPUs and 376 MiB).
// Each call is timed by the CRI client itself (CriClient::TimedCall),
// without the Python client's start-up. Then the host PSS per idle pod with
// 1 and with N pods of a handler running at once (QEMU and the shim for VM
// pods, the shim for the others), 5 s after the last container started.
// Prints Markdown tables. Needs root and the guest image next to the shim
// (tools/guest-image --out <build>/guest-image).
// Usage: bench_cri_pod [--runs N] [--density N (10)] [--unconfined];
// HULL_BENCH_VM_TOML adds lines to the VM handlers' [vm] table; the VM
// handlers' servers are confined, as by default (docs/security.md, "VM pods
// confined"), or with --unconfined have [security] confine = false.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/vm/bench_stats.h"
#include "tests/integration/cri/cri_client.h"
#include "tests/integration/cri/cri_pod.h"
#include "tests/integration/harness/harness.h"

namespace hull::bench {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
constexpr char kImage[] = "docker.io/hull/busybox:latest";
constexpr auto kCriTimeout = 180s;

struct Handler {
  std::string name;   // CRI runtime handler
  std::string label;  // column title
  bool vm = false;
  Stats ready, running, stop_remove;
  Stats qemu_pss_kb, shim_pss_kb, pod_pss_kb;  // idle VM pods
  std::map<int, double> pss_per_pod_kb;        // by pods running at once
  // VM pods: QEMU's PSS per pod split by mapping, by pods running at once.
  std::map<int, std::map<std::string, long>> qemu_split_kb;
};

int Main(int argc, char** argv) {
  int runs = 3;
  int density = 10;
  bool confine = true;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--unconfined") confine = false;
    if (std::string(argv[i]) == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (std::string(argv[i]) == "--density" && i + 1 < argc) density = std::atoi(argv[++i]);
  }
  // More [vm] keys for both VM handlers (e.g. kernel_args), from the
  // environment: HULL_BENCH_VM_TOML='kernel_args = "norandmaps"'.
  const char* vm_toml_env = std::getenv("HULL_BENCH_VM_TOML");
  const std::string vm_toml = vm_toml_env != nullptr ? vm_toml_env : "";
  const std::string load_before = LoadAverage();
  char config_dir[] = "/tmp/hull-bench-cri-XXXXXX";
  if (::mkdtemp(config_dir) == nullptr) return 1;
  std::string handlers_toml;
  for (const char* name : {"hull-vm", "hull-vm-clone"}) {
    const std::string config = std::string(config_dir) + "/" + name + ".toml";
    std::ofstream(config) << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\n"
                          << vm_toml << "\ntemplates = "
                          << (std::string(name) == "hull-vm-clone" ? "true" : "false") << "\n"
                          << "[security]\nconfine = " << (confine ? "true" : "false") << "\n";
    const std::string table =
        std::string("[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.") + name;
    handlers_toml += table + "]\n  runtime_type = \"io.containerd.hull.v2\"\n" + table +
                     ".options]\n  ConfigPath = \"" + config + "\"\n";
  }
  itest::ContainerdOptions options{.enable_cri = true, .runtime_handlers_toml = handlers_toml};
  std::string error;
  auto containerd = itest::PrivateContainerd::Start(options, &error);
  if (!containerd) {
    std::cerr << "bench_cri_pod: start containerd: " << error << "\n";
    return 1;
  }
  if (!containerd->ImportImages("k8s.io", &error)) {
    std::cerr << "bench_cri_pod: import images: " << error << "\n";
    return 1;
  }
  itest::CriClient cri(containerd->address());
  if (!itest::WaitForCriImage(cri, kImage)) {
    std::cerr << "bench_cri_pod: CRI never saw " << kImage << "\n";
    return 1;
  }
  const std::string cgroup_parent = itest::TestCgroupParent("hull-bench-cri", "pods");
  const std::string tasks = containerd->state() + "/io.containerd.runtime.v2.task/k8s.io/";

  std::vector<Handler> handlers = {
      {.name = "hull-vm-clone", .label = "hull-vm, template clones (TCG)", .vm = true},
      {.name = "hull-vm", .label = "hull-vm, cold boots (TCG)", .vm = true},
      {.name = "hull", .label = "hull (runc)"},
      {.name = "runc", .label = "Go runc shim"}};
  auto fail = [&](const std::string& what, const itest::CriReply& r) {
    std::cerr << "bench_cri_pod: " << what << ": " << r.error << "\n"
              << containerd->LogTail(40) << "\n";
    return 1;
  };
  int n = 0;
  struct Pod {
    std::string id;
    itest::CriReply run, created, started;
  };
  // A pod of `h` with a busybox `sleep`, both checked.
  auto start_pod = [&](Handler& h, Pod* out) -> int {
    const std::string name = "p" + std::to_string(n++);
    json pod_config =
        itest::PodSandboxConfigJson(name, cgroup_parent, containerd->dir() + "/pods/" + name);
    out->run = cri.TimedCall("RunPodSandbox", {{"config", pod_config}, {"runtime_handler", h.name}},
                             kCriTimeout);
    if (!out->run.ok) return fail("RunPodSandbox " + h.name, out->run);
    out->id = out->run.body.value("pod_sandbox_id", "");
    itest::CriReply status = cri.Call("PodSandboxStatus", {{"pod_sandbox_id", out->id}});
    if (!status.ok || status.body["status"].value("state", "") != "SANDBOX_READY") {
      return fail("pod " + name + " is not ready", status);
    }
    json config = itest::BusyboxContainerConfig("c", kImage);
    config["command"] = {"sleep", "3600"};
    out->created = cri.TimedCall(
        "CreateContainer",
        {{"pod_sandbox_id", out->id}, {"config", config}, {"sandbox_config", pod_config}},
        kCriTimeout);
    if (!out->created.ok) return fail("CreateContainer " + h.name, out->created);
    const std::string id = out->created.body.value("container_id", "");
    out->started = cri.TimedCall("StartContainer", {{"container_id", id}}, kCriTimeout);
    if (!out->started.ok) return fail("StartContainer " + h.name, out->started);
    itest::CriReply cstatus = cri.Call("ContainerStatus", {{"container_id", id}});
    if (!cstatus.ok || cstatus.body["status"].value("state", "") != "CONTAINER_RUNNING") {
      return fail("container of " + name + " is not running", cstatus);
    }
    return 0;
  };
  auto stop_pod = [&](Handler& h, const std::string& pod_id, double* ms) -> int {
    itest::CriReply stop =
        cri.TimedCall("StopPodSandbox", {{"pod_sandbox_id", pod_id}}, kCriTimeout);
    if (!stop.ok) return fail("StopPodSandbox " + h.name, stop);
    itest::CriReply remove =
        cri.TimedCall("RemovePodSandbox", {{"pod_sandbox_id", pod_id}}, kCriTimeout);
    if (!remove.ok) return fail("RemovePodSandbox " + h.name, remove);
    if (ms != nullptr) *ms = stop.call_ms + remove.call_ms;
    return 0;
  };
  // The host memory of an idle pod: QEMU and hull's processes that started
  // it (VM pods: the server, a confined server's spawner, QEMU's share
  // helper), or the shim serving it.
  struct Pss {
    long qemu = 0, shim = 0;
    pid_t qemu_pid = 0;
  };
  auto pss_of = [&](const Handler& h, const std::string& pod_id) {
    Pss p;
    if (h.vm) {
      std::ifstream in(tasks + pod_id + "/hull-vm.json");
      json record = json::parse(in, nullptr, false);
      pid_t qemu = record.is_object() ? record.value("qemu_pid", 0) : 0;
      if (qemu > 0) {
        const pid_t shim = itest::ParentShim(qemu);
        p = {itest::PssKb(qemu), itest::PssKb(shim), qemu};
        // A confined server's spawner (QEMU's parent) is the shim's too.
        const pid_t parent = itest::ParentPid(qemu);
        if (parent != shim) p.shim += itest::PssKb(parent);
        // And QEMU's share helper, its sibling (docs/security.md, "QEMU's jail").
        for (pid_t helper : itest::ProcessesNamed("virtfs-proxy-he")) {
          if (itest::ParentPid(helper) == parent) p.shim += itest::PssKb(helper);
        }
      }
      return p;
    }
    for (pid_t pid : itest::ProcessesMatching("-id " + pod_id)) {
      if (itest::Cmdline(pid).find("containerd-shim") != std::string::npos) {
        p.shim += itest::PssKb(pid);
      }
    }
    return p;
  };

  // The clone handler's template: built by a pod that is not counted in the
  // table (one sample; printed under it).
  double first_ready_ms = 0, first_running_ms = 0;
  {
    Pod warm;
    if (int rc = start_pod(handlers[0], &warm); rc != 0) return rc;
    first_ready_ms = warm.run.call_ms;
    first_running_ms = warm.run.call_ms + warm.created.call_ms + warm.started.call_ms;
    if (int rc = stop_pod(handlers[0], warm.id, nullptr); rc != 0) return rc;
  }
  for (int run = 0; run < runs; ++run) {
    for (Handler& h : handlers) {
      Pod pod;
      if (int rc = start_pod(h, &pod); rc != 0) return rc;
      h.ready.samples.push_back(pod.run.call_ms);
      h.running.samples.push_back(pod.run.call_ms + pod.created.call_ms + pod.started.call_ms);
      if (h.vm) {
        std::this_thread::sleep_for(5s);
        Pss p = pss_of(h, pod.id);
        h.qemu_pss_kb.samples.push_back(static_cast<double>(p.qemu));
        h.shim_pss_kb.samples.push_back(static_cast<double>(p.shim));
        h.pod_pss_kb.samples.push_back(static_cast<double>(p.qemu + p.shim));
      }
      double ms = 0;
      if (int rc = stop_pod(h, pod.id, &ms); rc != 0) return rc;
      h.stop_remove.samples.push_back(ms);
      std::cerr << "bench_cri_pod: run " << run + 1 << "/" << runs << " " << h.name << ": ready "
                << pod.run.call_ms << " ms, running "
                << pod.run.call_ms + pod.created.call_ms + pod.started.call_ms << " ms\n";
    }
  }
  // Density: 1, then `density` idle pods of one handler at once; PSS per pod.
  std::vector<int> counts = {1};
  if (density > 1) counts.push_back(density);
  for (Handler& h : handlers) {
    for (int count : counts) {
      std::vector<Pod> pods(static_cast<size_t>(count));
      for (Pod& pod : pods) {
        if (int rc = start_pod(h, &pod); rc != 0) return rc;
      }
      std::this_thread::sleep_for(5s);
      long total = 0;
      for (const Pod& pod : pods) {
        Pss p = pss_of(h, pod.id);
        total += p.qemu + p.shim;
        if (p.qemu_pid > 0) {
          for (const auto& [part, kb] : itest::QemuPssSplitKb(p.qemu_pid)) {
            h.qemu_split_kb[count][part] += kb / count;
          }
        }
      }
      h.pss_per_pod_kb[count] = static_cast<double>(total) / count;
      std::cerr << "bench_cri_pod: " << h.name << ": " << count << " idle pods, " << total / count
                << " kB PSS each\n";
      for (const Pod& pod : pods) {
        if (int rc = stop_pod(h, pod.id, nullptr); rc != 0) return rc;
      }
    }
  }
  containerd.reset();
  itest::RemoveCgroupParent(cgroup_parent);
  std::error_code ec;
  std::filesystem::remove_all(config_dir, ec);

  std::cout << "Runs: " << runs << " per handler, interleaved; load average " << load_before
            << " at the start, " << LoadAverage()
            << " at the end. VM pods' servers confined: " << (confine ? "yes" : "no") << ".\n\n";
  std::cout << "| figure (ms: median (min-max))";
  for (const Handler& h : handlers) std::cout << " | " << h.label;
  std::cout << " |\n|---";
  for (size_t i = 0; i < handlers.size(); ++i) std::cout << "|---:";
  std::cout << "|\n";
  auto row = [&](const std::string& figure, auto cell) {
    std::cout << "| " << figure;
    for (const Handler& h : handlers) std::cout << " | " << cell(h);
    std::cout << " |\n";
  };
  row("RunPodSandbox, to the sandbox ready", [](const Handler& h) { return h.ready.Cell(); });
  row("RunPodSandbox + CreateContainer + StartContainer, to the first container running",
      [](const Handler& h) { return h.running.Cell(); });
  row("StopPodSandbox + RemovePodSandbox", [](const Handler& h) { return h.stop_remove.Cell(); });
  row("host PSS of the idle pod, QEMU + shim (kB, median (min-max))",
      [](const Handler& h) { return h.pod_pss_kb.Cell(); });
  row("&nbsp;&nbsp;of which QEMU (kB)", [](const Handler& h) { return h.qemu_pss_kb.Cell(); });
  row("&nbsp;&nbsp;of which hull's processes (kB)",
      [](const Handler& h) { return h.shim_pss_kb.Cell(); });
  for (int count : counts) {
    row("host PSS per idle pod, " + std::to_string(count) + " pod" + (count > 1 ? "s" : "") +
            " running (kB; VM pods: QEMU + shim; others: the shim)",
        [count](const Handler& h) {
          auto it = h.pss_per_pod_kb.find(count);
          return it == h.pss_per_pod_kb.end() ? std::string("—")
                                              : std::to_string(static_cast<long>(it->second));
        });
    std::set<std::string> parts;
    for (const Handler& h : handlers) {
      if (auto it = h.qemu_split_kb.find(count); it != h.qemu_split_kb.end()) {
        for (const auto& [part, kb] : it->second) parts.insert(part);
      }
    }
    for (const std::string& part : parts) {
      row("&nbsp;&nbsp;of which QEMU's " + part + " (kB)", [count, part](const Handler& h) {
        auto it = h.qemu_split_kb.find(count);
        if (it == h.qemu_split_kb.end()) return std::string("—");
        auto kb = it->second.find(part);
        return std::to_string(kb == it->second.end() ? 0L : kb->second);
      });
    }
  }
  std::cout << "\nThe first pod of the shape (" << handlers[0].label
            << "; it builds the template, then runs as its first clone), one sample: ready "
            << first_ready_ms << " ms, first container running " << first_running_ms << " ms.\n";
  return 0;
}

}  // namespace
}  // namespace hull::bench

int main(int argc, char** argv) {
  return hull::bench::Main(argc, argv);
}
