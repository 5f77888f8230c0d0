// What integration tests ask of the host: whether they can run at all
// (SkipReason), where the source and build trees are, and the leak checks a
// test makes after tearing something down (mounts, processes, sockets, fds).
// All functions read /proc and the filesystem afresh on each call.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hull::itest {

// "" when tests that need root and containerd can run here; otherwise why not
// (not root, containerd/ctr/runc missing, no /proc).
std::string SkipReason();

// The source and build trees, from HULL_SOURCE_DIR / HULL_BINARY_DIR.
std::string SourceDir();
std::string BinaryDir();

// The directory holding the built containerd-shim-hull-v2 (searched in the
// build tree: ., shim/, bin/), or "" when it has not been built.
std::string HullShimDir();

// Mount points (from /proc/self/mountinfo, unescaped) at or under `prefix`,
// in mountinfo order.
std::vector<std::string> MountsUnder(const std::string& prefix);

// Live processes (not zombies) whose NUL-separated cmdline, joined with
// spaces, contains `cmdline_substring`. Never includes the caller.
std::vector<pid_t> ProcessesMatching(const std::string& cmdline_substring);

// The QEMU of a VM pod whose run directory is `run_dir`: hull names it on
// QEMU's command line (`-name hull:<run dir>`), and nothing else's.
std::vector<pid_t> QemusOf(const std::string& run_dir);

// The process's parent (from /proc/<pid>/stat); -1 when it is gone.
pid_t ParentPid(pid_t pid);

// Live processes whose comm (/proc/<pid>/comm, at most 15 characters) is
// `comm`.
std::vector<pid_t> ProcessesNamed(const std::string& comm);

// A hull server and its spawner (its child named hull-spawner, when it is
// confined: docs/security.md), in pid order: the processes that move
// together between cgroups.
std::vector<pid_t> ServerAndSpawner(pid_t server);

// Unix sockets (by file type) at any depth under `dir`.
std::vector<std::string> SocketsUnder(const std::string& dir);

// The names of the entries directly in `dir`, sorted; none when it does not
// exist.
std::vector<std::string> EntriesIn(const std::string& dir);

// The fd numbers open in process `pid` (from /proc/<pid>/fd).
std::vector<int> OpenFds(pid_t pid);

// The paths of the named pipes (FIFOs) these processes have open, e.g. the
// stdio FIFOs a shim holds for its containers.
std::vector<std::string> NamedPipesOpenIn(const std::vector<pid_t>& pids);

// True when the process exists and is not a zombie.
bool ProcessAlive(pid_t pid);

// The process's proportional set size in kB (/proc/<pid>/smaps_rollup's
// Pss); 0 when it cannot be read.
long PssKb(pid_t pid);

// A QEMU process's PSS in kB, split by mapping: "guest RAM" (its largest
// mapping that is not executable: anonymous, memfd or a template's RAM
// file), "TCG translation cache" (rwx anonymous mappings), "files" (QEMU and
// its libraries) and "heap, stacks, other". Empty when it cannot be read.
std::map<std::string, long> QemuPssSplitKb(pid_t pid);

// `path` (a directory) bind-mounted on itself with shared propagation, as a
// volume with mountPropagation HostToContainer or Bidirectional needs
// (containerd's CRI refuses a source whose mount is private); unmounted,
// with everything mounted below it since, when this goes. ok() is false
// (and error() says why) when it could not be made.
class SharedMount {
 public:
  explicit SharedMount(std::string path);
  ~SharedMount();
  SharedMount(const SharedMount&) = delete;
  SharedMount& operator=(const SharedMount&) = delete;
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

// Polls `condition` every `interval` until it holds or `timeout` passes.
// Returns the last result. For conditions nothing can notify us about.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval = std::chrono::milliseconds(20));

}  // namespace hull::itest
