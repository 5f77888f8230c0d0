// ArgvBuilder: the one place the command lines of the OCI CLI runtimes are
// made, from the backend's options and a call's request. Pure: no I/O, so
// every argv can be checked exactly in unit tests. runc, crun and runsc
// differ only through their Flavour.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/oci_cli/flavour.h"

namespace hull::runtime::oci_cli {

using Argv = std::vector<std::string>;

// What every call of one backend shares: the binary and its global flags.
struct RuntimeConfig {
  std::string binary;    // path, or name looked up in PATH
  std::string root;      // --root, namespace included: /run/containerd/runc/<ns>
  std::string log_path;  // --log, written as JSON; empty: no --log
  bool systemd_cgroup = false;
  bool no_pivot_root = false;
  bool no_new_keyring = false;
  std::string criu_path;        // empty: the runtime's default criu
  std::string criu_image_path;  // default checkpoint image dir
  std::string criu_work_path;   // default criu work dir
  // --<key>=<value> global flags (runsc's [runsc_config]), in key order.
  std::map<std::string, std::string> runtime_flags;
};

// Where an exec's in-sandbox pid is written, next to its pid file
// (Flavour::exec_internal_pid_flag).
std::string InternalPidFile(const std::string& pid_file);

class ArgvBuilder {
 public:
  ArgvBuilder(const Flavour& flavour, RuntimeConfig config)
      : flavour_(flavour), config_(std::move(config)) {}

  // create --bundle B --pid-file P [--console-socket S] [--no-pivot]
  //        [--no-new-keyring] <id>
  Argv Create(const CreateRequest& req) const;
  // start <id>
  Argv Start(const std::string& id) const;
  // restore --detach --bundle B --pid-file P [--console-socket S] [--no-pivot]
  //         --image-path <checkpoint> [--work-path W] [--no-subreaper] <id>
  Argv Restore(const CreateRequest& req) const;
  // exec --process <json> --detach --pid-file P
  //      [<exec_internal_pid_flag> InternalPidFile(P)] [--console-socket S] <id>
  Argv Exec(const ExecRequest& req) const;
  // kill [--all] <id> <signal>
  Argv Kill(const std::string& id, int signal, bool all) const;
  // kill --pid <pid> <id> <signal>: one process of the container, by the pid
  // the runtime itself gave it (Flavour::exec_internal_pid_flag).
  Argv KillProcess(const std::string& id, pid_t pid, int signal) const;
  // delete [--force] <id>
  Argv Delete(const std::string& id, bool force) const;
  Argv Pause(const std::string& id) const;
  Argv Resume(const std::string& id) const;
  // update --resources - <id>: the LinuxResources JSON goes on stdin.
  Argv Update(const std::string& id) const;
  // ps --format json <id>
  Argv Ps(const std::string& id) const;
  // checkpoint --image-path I [--work-path W] [--parent-path P]
  //            [--leave-running] [--tcp-established] [--ext-unix-sk]
  //            [--shell-job] [--file-locks] [--empty-ns NS]...
  //            [--manage-cgroups-mode M] <id>
  Argv Checkpoint(const CheckpointRequest& req) const;
  // `<runtime> checkpoint --help`: succeeds only where the runtime was built
  // with checkpoint support.
  Argv CheckpointProbe() const;
  // `criu check`, with the configured criu binary.
  Argv CriuCheck() const;
  // wait <id>: blocks until the container's init exits (runsc).
  Argv Wait(const std::string& id) const;
  // events --stats <id>: one JSON stats event (runsc).
  Argv EventsStats(const std::string& id) const;
  // list --format json: every container under the root (runsc).
  Argv List() const;
  // `<runtime> features` (OCI features document on stdout).
  Argv Features() const;
  // `<runtime> --version`.
  Argv Version() const;

  // The binary and its global flags: what every call but features,
  // --version and the checkpoint probe starts with.
  Argv GlobalFlags() const;

  const RuntimeConfig& config() const { return config_; }
  const Flavour& flavour() const { return flavour_; }

 private:
  // GlobalFlags() + `command`.
  Argv Base(const char* command) const;

  const Flavour& flavour_;
  RuntimeConfig config_;
};

}  // namespace hull::runtime::oci_cli
