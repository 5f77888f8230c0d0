// bench_cri_pod: pod start through CRI, as kubelet asks for it, on a private
// containerd 1.6.20 with its CRI plugin and the pod network (CNI bridge on
// 127.201.0.0/24, the harness's): RunPodSandbox to the sandbox ready (the
// call returns when it is; PodSandboxStatus then says SANDBOX_READY), and to
// the first container running (RunPodSandbox + CreateContainer +
// StartContainer; ContainerStatus then says CONTAINER_RUNNING), for the
// runtime handlers `hull-vm` (hull's vm backend), `hull` (hull with runc) and
// `runc` (containerd's Go runc shim), interleaved in the same run. The pod is
// the CRI tests' (1.5 CPUs, 256 MiB: a VM of 2 vCPUs and 320 MiB). Each
// call is timed by the CRI client itself (CriClient::TimedCall), without
// the Python client's start-up. Also the host PSS of one idle VM pod (QEMU
// plus its shim).
// Prints a Markdown table. Needs root and the guest image next to the shim
// (tools/guest-image --out <build>/guest-image). Usage: bench_cri_pod [--runs N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
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
  Stats ready, running, stop_remove;
  Stats qemu_pss_kb, shim_pss_kb, pod_pss_kb;  // idle VM pods
};

int Main(int argc, char** argv) {
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
  }
  const std::string load_before = LoadAverage();
  char config_dir[] = "/tmp/hull-bench-cri-XXXXXX";
  if (::mkdtemp(config_dir) == nullptr) return 1;
  const std::string vm_config = std::string(config_dir) + "/hull-vm.toml";
  std::ofstream(vm_config) << "runtime = \"vm\"\n[vm]\nagent_timeout_ms = 150000\n";
  const std::string table = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.hull-vm";
  itest::ContainerdOptions options{
      .enable_cri = true,
      .runtime_handlers_toml = table + "]\n  runtime_type = \"io.containerd.hull.v2\"\n" + table +
                               ".options]\n  ConfigPath = \"" + vm_config + "\"\n"};
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

  std::vector<Handler> handlers = {{.name = "hull-vm", .label = "hull-vm (vm backend, TCG)"},
                                   {.name = "hull", .label = "hull (runc)"},
                                   {.name = "runc", .label = "Go runc shim"}};
  auto fail = [&](const std::string& what, const itest::CriReply& r) {
    std::cerr << "bench_cri_pod: " << what << ": " << r.error << "\n"
              << containerd->LogTail(40) << "\n";
    return 1;
  };
  int n = 0;
  for (int run = 0; run < runs; ++run) {
    for (Handler& h : handlers) {
      const std::string name = "p" + std::to_string(n++);
      json pod_config =
          itest::PodSandboxConfigJson(name, cgroup_parent, containerd->dir() + "/pods/" + name);
      itest::CriReply pod = cri.TimedCall(
          "RunPodSandbox", {{"config", pod_config}, {"runtime_handler", h.name}}, kCriTimeout);
      if (!pod.ok) return fail("RunPodSandbox " + h.name, pod);
      const std::string pod_id = pod.body.value("pod_sandbox_id", "");
      itest::CriReply status = cri.Call("PodSandboxStatus", {{"pod_sandbox_id", pod_id}});
      if (!status.ok || status.body["status"].value("state", "") != "SANDBOX_READY") {
        return fail("pod " + name + " is not ready", status);
      }
      json config = itest::BusyboxContainerConfig("c", kImage);
      config["command"] = {"sleep", "3600"};
      itest::CriReply created = cri.TimedCall(
          "CreateContainer",
          {{"pod_sandbox_id", pod_id}, {"config", config}, {"sandbox_config", pod_config}},
          kCriTimeout);
      if (!created.ok) return fail("CreateContainer " + h.name, created);
      const std::string id = created.body.value("container_id", "");
      itest::CriReply started =
          cri.TimedCall("StartContainer", {{"container_id", id}}, kCriTimeout);
      if (!started.ok) return fail("StartContainer " + h.name, started);
      itest::CriReply cstatus = cri.Call("ContainerStatus", {{"container_id", id}});
      if (!cstatus.ok || cstatus.body["status"].value("state", "") != "CONTAINER_RUNNING") {
        return fail("container of " + name + " is not running", cstatus);
      }
      h.ready.samples.push_back(pod.call_ms);
      h.running.samples.push_back(pod.call_ms + created.call_ms + started.call_ms);

      if (h.name == "hull-vm") {
        // The idle pod's host memory: QEMU and the shim that started it.
        std::this_thread::sleep_for(5s);
        std::ifstream in(tasks + pod_id + "/hull-vm.json");
        json record = json::parse(in, nullptr, false);
        pid_t qemu = record.is_object() ? record.value("qemu_pid", 0) : 0;
        if (qemu > 0) {
          const long q = itest::PssKb(qemu), shim = itest::PssKb(itest::ParentShim(qemu));
          h.qemu_pss_kb.samples.push_back(static_cast<double>(q));
          h.shim_pss_kb.samples.push_back(static_cast<double>(shim));
          h.pod_pss_kb.samples.push_back(static_cast<double>(q + shim));
        }
      }
      itest::CriReply stop =
          cri.TimedCall("StopPodSandbox", {{"pod_sandbox_id", pod_id}}, kCriTimeout);
      if (!stop.ok) return fail("StopPodSandbox " + h.name, stop);
      itest::CriReply remove =
          cri.TimedCall("RemovePodSandbox", {{"pod_sandbox_id", pod_id}}, kCriTimeout);
      if (!remove.ok) return fail("RemovePodSandbox " + h.name, remove);
      h.stop_remove.samples.push_back(stop.call_ms + remove.call_ms);
      std::cerr << "bench_cri_pod: run " << run + 1 << "/" << runs << " " << h.name << ": ready "
                << pod.call_ms << " ms, running " << pod.call_ms + created.call_ms + started.call_ms
                << " ms\n";
    }
  }
  containerd.reset();
  itest::RemoveCgroupParent(cgroup_parent);
  std::error_code ec;
  std::filesystem::remove_all(config_dir, ec);

  std::cout << "Runs: " << runs << " per handler, interleaved; load average " << load_before
            << " at the start, " << LoadAverage() << " at the end.\n\n";
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
  row("&nbsp;&nbsp;of which the shim (kB)", [](const Handler& h) { return h.shim_pss_kb.Cell(); });
  return 0;
}

}  // namespace
}  // namespace hull::bench

int main(int argc, char** argv) {
  return hull::bench::Main(argc, argv);
}
