// Tearing down one PrivateContainerd directory: what its containerd, shims,
// runc and CNI left inside and outside it. Used by the destructor, and for
// instances whose test process died (ctest's timeout kills only the test:
// containerd leads its own process group and survives it).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "tests/integration/harness/cleanup_internal.h"
#include "tests/integration/harness/command.h"
#include "tests/integration/harness/host.h"
#include "tests/integration/harness/host_internal.h"

namespace hull::itest::internal {

namespace fs = std::filesystem;

namespace {

constexpr auto kKillWait = std::chrono::seconds(10);
// The per-runtime directory of containerd's state; one bundle per <ns>/<id>.
constexpr const char* kTaskStateDir = "/state/io.containerd.runtime.v2.task";
// containerd 2.x's sandbox bundles (sandboxer "shim"), also <ns>/<id>.
constexpr const char* kSandboxStateDir = "/state/io.containerd.sandbox.controller.v1.shim";
// Where the stock runc shim keeps runc's state (its default runc root).
constexpr const char* kRuncShimRoot = "/run/containerd/runc";
// What hull's `start` writes into every bundle it serves.
constexpr const char* kHullBundleConfig = "hull-config.toml";

bool InOtherPidNamespace(pid_t pid) {
  std::error_code ec1, ec2;
  auto theirs = fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec1);
  auto ours = fs::read_symlink("/proc/self/ns/pid", ec2);
  return !ec1 && !ec2 && theirs != ours;
}

// Every shim was started with `-address <dir>/containerd.sock`, so anything
// whose command line names the directory is the instance's (containerd,
// shims, QEMU, stray ctr).
void KillProcesses(const std::string& dir) {
  KillAndWait(ProcessesMatching(dir + "/"), kKillWait);
}

// Containers are found through their bundles: runc's state for the stock
// shim, and init.pid (a PID-namespace init takes its namespace down with
// it). Each bundle's `address` names the shim's socket outside the directory.
void KillContainersAndRemoveSockets(const std::string& dir) {
  std::error_code ec;
  for (const auto& ns : fs::directory_iterator(dir + kTaskStateDir, ec)) {
    std::error_code ec2;
    for (const auto& bundle : fs::directory_iterator(ns.path(), ec2)) {
      const std::string ns_name = ns.path().filename();
      const std::string id = bundle.path().filename();

      const std::string runc_root = std::string(kRuncShimRoot) + "/" + ns_name;
      if (::access((runc_root + "/" + id).c_str(), F_OK) == 0) {
        RunCommand({"runc", "--root", runc_root, "delete", "--force", id},
                   std::chrono::seconds(20));
      }
      std::string init_pid = Trim(ReadFile(bundle.path() / "init.pid"));
      if (!init_pid.empty() && init_pid.find_first_not_of("0123456789") == std::string::npos) {
        pid_t pid = static_cast<pid_t>(std::stol(init_pid));
        // A stale pid may have been reused; a container's init has a PID
        // namespace of its own, which a reused host pid does not.
        if (InOtherPidNamespace(pid)) KillAndWait({pid}, kKillWait);
      }

      std::string address = Trim(ReadFile(bundle.path() / "address"));
      if (!address.starts_with("unix://")) continue;
      std::string socket = address.substr(7);
      struct stat st;
      if (::lstat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(socket.c_str());
    }
  }
}

// What containerd does for a dead shim at its next start, and never will
// here (the directory goes): `containerd-shim-hull-v2 delete` in each of
// hull's bundles. It cleans what the server kept outside the directory: a
// VM pod's run directory under /run/hull/vm with its bind mounts, the pod
// cgroup, the runtime's state.
void RunHullDeletes(const std::string& dir) {
  const std::string shim_dir = HullShimDir();
  if (shim_dir.empty()) return;
  for (const char* state : {kTaskStateDir, kSandboxStateDir}) {
    std::error_code ec;
    for (const auto& ns : fs::directory_iterator(dir + state, ec)) {
      std::error_code ec2;
      for (const auto& bundle : fs::directory_iterator(ns.path(), ec2)) {
        if (::access((bundle.path() / kHullBundleConfig).c_str(), F_OK) != 0) continue;
        RunCommand({shim_dir + "/containerd-shim-hull-v2", "-namespace", ns.path().filename(),
                    "-address", dir + "/containerd.sock", "-id", bundle.path().filename(),
                    "-bundle", bundle.path().string(), "delete"},
                   std::chrono::seconds(20));
      }
    }
  }
}

void RemoveNetwork(const std::string& network) {
  // Pod veths vanish with their network namespaces; the bridge does not.
  if (::access(("/sys/class/net/" + network).c_str(), F_OK) == 0) {
    RunCommand({"ip", "link", "delete", network}, std::chrono::seconds(10));
  }
  // libcni caches each attachment as /var/lib/cni/results/<network>-<id>-<ifname>.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/var/lib/cni/results", ec)) {
    if (entry.path().filename().string().starts_with(network + "-")) fs::remove(entry.path(), ec);
  }
}

}  // namespace

std::string CniNetworkFor(const std::string& dir) {
  return "hullit-" + dir.substr(dir.size() >= 6 ? dir.size() - 6 : 0);
}

void TearDownInstance(const std::string& dir) {
  KillProcesses(dir);
  KillContainersAndRemoveSockets(dir);
  RunHullDeletes(dir);
  for (const auto& m : UnmountUnder(dir)) {
    std::cerr << "hull-itest: could not unmount " << m << "\n";
  }
  RemoveNetwork(CniNetworkFor(dir));
  std::string error;
  if (!RemoveTree(dir, &error)) {
    std::cerr << "hull-itest: could not remove " << dir << ": " << error << "\n";
  }
}

void SweepStaleInstances() {
  const std::string prefix = kInstancePrefix;
  const fs::path parent = fs::path(prefix).parent_path();
  const std::string stem = fs::path(prefix).filename();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    std::error_code type_ec;
    if (entry.path().filename().string().starts_with(stem) &&
        fs::is_directory(entry.symlink_status(type_ec))) {
      std::cerr << "hull-itest: tearing down " << entry.path().string()
                << ", left by a test that did not finish\n";
      TearDownInstance(entry.path());
    }
  }
}

}  // namespace hull::itest::internal
