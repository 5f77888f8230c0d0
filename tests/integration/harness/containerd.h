// PrivateContainerd: a containerd of the test's own, with root, state,
// sockets, config, CNI config and log in one temporary directory, so tests
// never touch a system-wide containerd. The object owns the daemon process;
// its destructor also removes what shims, runc and CNI left behind from this
// instance (processes, mounts, sockets, the bridge, the directory itself).
//
// Layout of dir() (/tmp/hull-itest-XXXXXX):
//   config.toml, containerd.log, containerd.sock(.ttrpc)
//   root/  state/  tmp/  fifo/ (ctr's stdio FIFOs)  cni/net.d/  cni/ipam/
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness/command.h"
#include "tests/integration/harness/containerd2.h"
#include "tests/integration/harness/spawn_internal.h"

namespace hull::itest {

namespace internal {
class SharedHostDirs;
}

// What hull's servers read as HULL_CONFIG when a test names nothing else:
// the defaults (confined servers, docs/security.md), and one logging binary
// for their spawner to start: $DIR/logger.sh, where tests that use one put
// it.
inline constexpr const char* kHarnessServerConfig =
    "[security]\nlogging_binaries = [\"$DIR/logger.sh\"]\n";
// The same, confined in so many words, whatever the default.
inline constexpr const char* kConfinedServerConfig =
    "[security]\nconfine = true\nlogging_binaries = [\"$DIR/logger.sh\"]\n";

struct ContainerdOptions {
  // Loads the CRI plugin (with the pod network, see docs/testing.md).
  bool enable_cri = false;
  // TOML appended to config.toml. It may add tables but not re-open the ones
  // the harness writes (TOML forbids defining a table twice).
  std::string extra_config;
  // TOML appended after the CRI runtimes "runc" and "hull", e.g.
  //   [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.hull-crun]
  //     runtime_type = "io.containerd.hull.v2"
  // Only used with enable_cri.
  std::string runtime_handlers_toml;
  // Put first in containerd's PATH so it finds containerd-shim-hull-v2;
  // "" means HullShimDir(), or <build>/bin (where shim/ puts the binary)
  // when it is not built yet.
  std::string shim_dir;
  // "" picks overlayfs when the kernel has it, else native.
  std::string snapshotter;
  // "" runs the host's containerd (Debian's 1.6.20, from PATH) with a
  // version 2 config; a directory with bin/containerd and bin/ctr (see
  // Containerd2Dir()) runs that containerd 2.x and its ctr, with a version 3
  // config, and puts bin/ on containerd's PATH after shim_dir (so its own
  // containerd-shim-runc-v2 serves runtime type io.containerd.runc.v2).
  // runtime_handlers_toml may name tables as for 1.6
  // ([plugins."io.containerd.grpc.v1.cri".containerd.runtimes.X]); on 2.x
  // they are moved to plugins."io.containerd.cri.v1.runtime".
  std::string containerd_dir;
  // Non-empty: written to <dir>/hull-server.toml, which containerd's
  // environment names as HULL_CONFIG, so hull's servers read it at start
  // (the [ttrpc] and [security] sections); "$DIR" in it is the daemon's
  // directory. Left empty, it is kHarnessServerConfig. A runtime handler's
  // own file (ctr's --runtime-config-path, a CRI handler's ConfigPath)
  // replaces it for that handler's servers (docs/config.md).
  std::string hull_server_config;
  // How long Start/Restart wait for the daemon to answer.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
};

class PrivateContainerd {
 public:
  // Writes the config, starts containerd and waits until `ctr version`
  // answers. On failure returns nullptr, with the reason and the tail of
  // containerd's log in *error, and removes what it created. When no other
  // instance is alive, it first tears down instance directories left by test
  // processes that died (killed by ctest's timeout, say: containerd and its
  // shims outlive them).
  static std::unique_ptr<PrivateContainerd> Start(const ContainerdOptions& options,
                                                  std::string* error);
  // Stops containerd (SIGTERM, then SIGKILL), kills the shims and containers
  // it started, unmounts everything under dir(), removes the shims' sockets,
  // the CNI bridge and cache entries, and the directory.
  ~PrivateContainerd();
  PrivateContainerd(const PrivateContainerd&) = delete;
  PrivateContainerd& operator=(const PrivateContainerd&) = delete;

  const std::string& dir() const { return dir_; }
  std::string address() const { return dir_ + "/containerd.sock"; }
  std::string ttrpc_address() const { return address() + ".ttrpc"; }
  std::string root() const { return dir_ + "/root"; }
  std::string state() const { return dir_ + "/state"; }
  std::string log_path() const { return dir_ + "/containerd.log"; }
  // The CNI network (and bridge) name of this instance, with enable_cri.
  const std::string& cni_network() const { return cni_network_; }
  const std::string& snapshotter() const { return snapshotter_; }
  pid_t pid() const { return daemon_.pid; }
  // True when this is a containerd 2.x (options.containerd_dir set).
  bool v2() const { return !options_.containerd_dir.empty(); }

  // `ctr -a <address> -n <ns> args...` with this instance's snapshotter, and
  // `--fifo-dir <dir>/fifo` added to `run`, `task start` and `task exec`.
  CommandResult Ctr(const std::vector<std::string>& args, const std::string& ns = "default",
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));
  std::unique_ptr<BackgroundCommand> CtrBackground(const std::vector<std::string>& args,
                                                   const std::string& ns = "default");

  // Builds the test images with tools/mkimage (cached in <source>/build/images)
  // and imports busybox and pause into namespace `ns`.
  bool ImportImages(const std::string& ns, std::string* error);

  // SIGKILLs containerd and starts it again on the same config and
  // directories; shims keep running, as after a daemon crash.
  bool Restart(std::string* error);
  // The first half of Restart: SIGKILLs containerd only (its shims live on).
  // Restart() starts it again.
  void Kill();

  // The last `lines` lines of containerd's log.
  std::string LogTail(size_t lines = 60) const;

 private:
  PrivateContainerd() = default;
  bool Launch(std::string* error);
  bool WriteConfig(std::string* error);
  void StopDaemon(std::chrono::milliseconds grace);
  std::vector<std::string> CtrArgv(const std::vector<std::string>& args,
                                   const std::string& ns) const;
  std::vector<std::string> CtrEnv() const;

  ContainerdOptions options_;
  std::string dir_;
  std::string cni_network_;
  std::string snapshotter_;
  internal::Child daemon_;
  std::unique_ptr<internal::SharedHostDirs> shared_dirs_;
};

}  // namespace hull::itest
