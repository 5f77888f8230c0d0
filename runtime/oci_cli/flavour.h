// Flavour: everything that differs between the OCI CLI runtimes hull drives
// (runc, crun, runsc), as data. The argv builder, error mapping and features code
// read this table; nothing else in hull asks which runtime it is talking to.
// Constant, static storage; any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::runtime::oci_cli {

// One runtime error message pattern: a case-insensitive substring of the
// runtime's message, and the code the failure gets when it matches.
// "{state}" in `text` stands for the container's state directory
// (<root>/<id>), which crun names in its "no such container" messages.
struct ErrorPattern {
  std::string_view text;
  Code code;
};

// Builds a features document (OCI runtime-spec features.md) from the
// runtime's `--version` output, for runtimes without a `features` command.
using FeaturesBuilder = Result<std::string> (*)(std::string_view version_output);

// The newest runtime-spec version a runtime takes, from its `--version`
// output ("" when unknown).
using SpecVersionMaxFn = std::string (*)(std::string_view version_output);

struct Flavour {
  std::string_view name;  // "runc", "crun", "runsc": for logs and error messages
  // Global flag that names the criu binary ("--criu"); empty: the runtime has
  // none and finds criu itself.
  std::string_view criu_path_flag;
  // `restore` accepts --no-subreaper (the shim is the subreaper already).
  bool restore_no_subreaper = false;
  // Fallback for `RuntimeFeatures` when `<runtime> features` fails; null: none.
  FeaturesBuilder build_features = nullptr;
  // Non-null: the runtime refuses a config.json whose ociVersion is newer
  // than it takes (crun), so Create first fits the spec to the runtime
  // (spec_version.h). The version comes from `<runtime> features`
  // (ociVersionMax), else from this function of `<runtime> --version`.
  // Null: the runtime does not check ociVersion (runc, runsc).
  SpecVersionMaxFn spec_version_max = nullptr;
  // Runtime messages -> codes, first match wins; unmatched: Unknown.
  std::span<const ErrorPattern> errors;
  // Kill messages that mean the process has already exited.
  std::span<const std::string_view> process_gone;

  // gVisor's differences (all false/empty for runc and crun):
  // A container that joins a sandbox (CRI container-type "container") has
  // the sandbox's pid in its pid file: its init's exit comes from
  // `<runtime> wait <id>` after `start`, which prints {"id":..,"exitStatus":N}.
  // The sandbox's own container exits with the sandbox process, like runc's.
  bool joined_exit_from_wait = false;
  // A container that joins a sandbox gets its stdio at `start`, the sandbox
  // at `create`; hull hands the container's stdio to both calls.
  bool stdio_at_start_too = false;
  // Stats come from `<runtime> events --stats <id>`, not from the cgroup.
  bool stats_from_events = false;
  // Deleting a sandbox container first deletes the other containers of the
  // sandbox (`list`, then `delete --force` each), which would otherwise be
  // left as stale state when the sandbox goes.
  bool sandbox_deletes_last = false;
  // The Sandbox API's pod runs in a sandbox process the runtime makes: a
  // container of CRI type "sandbox" created from the pod's spec, with
  // hull-pause as its PID 1 (oci_cli_sandbox.cc). False: hull's own pause
  // process holds the pod's namespaces.
  bool sandbox_process = false;
  // The container has no host cgroup of its own (its processes run inside
  // the sandbox; the host cgroup, if any, is the sandbox's): kill --all's
  // wait for the container to empty asks `<runtime> ps` instead of reading
  // the cgroup.
  bool no_container_cgroup = false;
  // The pod's containers run on one kernel of the runtime's own (gVisor's
  // sentry), not the host's: Create fits the spec to it first
  // (sandbox_kernel_spec.h: sysctls it cannot set are refused, pid=POD
  // joins the sandbox's root PID namespace).
  bool sandbox_kernel = false;
  // An exec's pid file names a runtime process on the host that proxies the
  // process in the sandbox (`runsc exec`); killing it leaves the process
  // running, holding the exec's stdio. The exec writes the sandbox's own pid
  // to `<pid file>.internal` with this flag, and signals go to that pid with
  // `kill --pid`.
  std::string_view exec_internal_pid_flag;
  // Global flags every call carries (runsc's --oci-seccomp: without it
  // runsc ignores the spec's linux.seccomp).
  std::span<const std::string_view> global_flags;
  // Non-empty: the runtime cannot do this here, and the call is answered
  // Unimplemented with this reason instead of running the runtime.
  std::string_view no_update;
  std::string_view no_checkpoint;
  std::string_view no_oom;
};

// The flavour for a runtime binary ("runc", "/usr/bin/crun", ...), chosen by
// its basename (crun*, runsc*); anything else is driven as runc, whose CLI
// the other OCI runtimes copy.
const Flavour& FlavourFor(std::string_view binary);

const Flavour& RuncFlavour();
const Flavour& CrunFlavour();
const Flavour& RunscFlavour();

}  // namespace hull::runtime::oci_cli
