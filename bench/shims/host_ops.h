// Host operations the start and runtime-alone phases need beyond ctr: run a
// program synchronously in a given directory and environment (as containerd
// runs a shim's `start`), wait for a process that is not our child, and
// prepare an OCI bundle from the busybox image. Blocking; main thread only.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace hull::bench {

struct SyncResult {
  int exit_status = 0;  // exit code, or 128 + signal
  std::string output;   // stdout and stderr together, as containerd reads `start`
};

// How RunIn collects output. kPipe reads to EOF, as containerd reads `start`
// (so it also waits for any process that inherited the output). kMemfd lets
// descendants keep the descriptor: `runc create` hands its stdio to the
// container, which lives on after `create` returns.
enum class Capture { kPipe, kMemfd };

// Runs argv (argv[0] an absolute path or found in PATH) in `cwd` with
// the current environment plus `extra_env` ("K=V"), stdin /dev/null, in a new
// process group, and waits for it (and, with kPipe, for EOF on its output).
Result<SyncResult> RunIn(const std::string& cwd, const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra_env = {},
                         Capture capture = Capture::kPipe);

// Waits until process `pid` (any process, not only a child) has exited.
Status WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Unpacks the single layer of the OCI image-layout tarball `image_tar`
// (tools/mkimage's busybox.tar) into `rootfs`.
Status ExtractRootfs(const std::string& image_tar, const std::string& rootfs);

// `runc spec`'s default config, with the process changed to `args` without a
// terminal, and root.path `rootfs`: what the runtime-alone phase runs, and a
// valid config.json for `start` (which reads its annotations).
Result<std::string> MakeOciSpec(const std::string& scratch_dir,
                                const std::vector<std::string>& args,
                                const std::string& rootfs = "rootfs");

// Pins the calling thread and every thread of `pids` to one CPU for as long
// as the object lives, and restores their masks after. With client and
// server on one CPU a round trip is two context switches; on different CPUs
// it also pays a cross-CPU wake-up, which on a VM with an idle (halted) vCPU
// goes through the hypervisor and costs tens of microseconds. A one-thread
// server that sleeps in epoll_wait pays that on every call; Go's runtime
// spins before it parks, so it mostly does not.
class CpuPin {
 public:
  static Result<CpuPin> Start(const std::vector<pid_t>& pids, int cpu);
  CpuPin(CpuPin&& other) noexcept : saved_(std::move(other.saved_)) {}
  CpuPin& operator=(CpuPin&&) = delete;
  ~CpuPin();

 private:
  CpuPin() = default;
  std::vector<std::pair<pid_t, cpu_set_t>> saved_;  // tid 0: the caller
};

}  // namespace hull::bench
