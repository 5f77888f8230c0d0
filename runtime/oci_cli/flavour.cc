#include "runtime/oci_cli/flavour.h"

#include "runtime/oci_cli/features.h"
#include "runtime/oci_cli/runsc_features.h"

namespace hull::runtime::oci_cli {
namespace {

// Messages as runc 1.1 prints them (its log.json `msg`, or stderr).
constexpr ErrorPattern kRuncErrors[] = {
    {"container does not exist", Code::kNotFound},
    {"already exists", Code::kAlreadyExists},
    {"no help topic for", Code::kUnimplemented},  // unknown subcommand
    {"container not running", Code::kFailedPrecondition},
    {"container not paused", Code::kFailedPrecondition},
    {"cannot start an already running container", Code::kFailedPrecondition},
    {"cannot start a container in the", Code::kFailedPrecondition},  // paused/stopped state
    {"that is not stopped", Code::kFailedPrecondition},              // delete
    {"cannot exec in a", Code::kFailedPrecondition},                 // paused/stopped container
};
constexpr std::string_view kRuncProcessGone[] = {
    "container not running",
    "process already finished",
    "no such process",
};

// Messages as crun 1.8 prints them. crun names the missing file of a
// container that does not exist rather than saying so.
constexpr ErrorPattern kCrunErrors[] = {
    {"{state}/status`: no such file or directory", Code::kNotFound},
    {"cannot open directory '{state}': no such file or directory", Code::kNotFound},
    {"already exists", Code::kAlreadyExists},
    {"unknown command", Code::kUnimplemented},
    {"is not running", Code::kFailedPrecondition},
    {"is not in `created` or `stopped` state", Code::kFailedPrecondition},         // delete
    {"{state}/exec.fifo`: no such file or directory", Code::kFailedPrecondition},  // started
    {"cgroups in hybrid mode not supported", Code::kFailedPrecondition},
};
constexpr std::string_view kCrunProcessGone[] = {
    "no such process",
    "is not running",
};

constexpr Flavour kRunc{
    .name = "runc",
    .criu_path_flag = "--criu",
    .restore_no_subreaper = true,
    .build_features = nullptr,  // runc >= 1.1 has `runc features`
    .errors = kRuncErrors,
    .process_gone = kRuncProcessGone,
};

constexpr Flavour kCrun{
    .name = "crun",
    .criu_path_flag = {},  // crun loads libcriu itself
    .restore_no_subreaper = false,
    .build_features = &BuildCrunFeatures,  // crun < 1.9 has no `crun features`
    .spec_version_max = &CrunSpecVersionMax,
    .errors = kCrunErrors,
    .process_gone = kCrunProcessGone,
};

// Messages as runsc 20221219 (Debian 12) prints them: lower-case Go errors,
// each as a JSON log entry without a newline after it.
constexpr ErrorPattern kRunscErrors[] = {
    // `loading container "x": file does not exist`, `loading sandbox: ...`
    {"file does not exist", Code::kNotFound},
    {"already exists", Code::kAlreadyExists},
    {"cannot execute in container", Code::kFailedPrecondition},  // paused/stopped
    {"cannot pause container", Code::kFailedPrecondition},
    {"cannot resume container", Code::kFailedPrecondition},
    {"cannot start container", Code::kFailedPrecondition},
    {"cannot delete container that is not stopped", Code::kFailedPrecondition},
    {"sandbox is not running", Code::kFailedPrecondition},
    {"not running", Code::kFailedPrecondition},
    // The sandbox process is gone, its state file is not (yet).
    {"connecting to control server at pid", Code::kFailedPrecondition},
};
constexpr std::string_view kRunscProcessGone[] = {
    "not running",
    "no such process",
    "connecting to control server at pid",
};

// runsc loads a spec's seccomp filter into the sandbox only when told to;
// without it a container's RuntimeDefault or Localhost profile is ignored.
constexpr std::string_view kRunscGlobalFlags[] = {"--oci-seccomp"};

constexpr Flavour kRunsc{
    .name = "runsc",
    .criu_path_flag = {},  // gVisor saves its own state, no criu
    .restore_no_subreaper = false,
    .build_features = &BuildRunscFeatures,  // runsc has no `features` command
    .errors = kRunscErrors,
    .process_gone = kRunscProcessGone,
    .joined_exit_from_wait = true,
    .stdio_at_start_too = true,
    .stats_from_events = true,
    .sandbox_deletes_last = true,
    .sandbox_process = true,
    .no_container_cgroup = true,
    .sandbox_kernel = true,
    .exec_internal_pid_flag = "--internal-pid-file",
    .global_flags = kRunscGlobalFlags,
    .no_update =
        "runsc has no update command: the cgroup of a gVisor sandbox's own "
        "container is set when the sandbox is created",
    .no_checkpoint =
        "runsc checkpoint is experimental in runsc 20221219 (Debian 12) and does "
        "not return with --leave-running; hull does not offer it",
    .no_oom =
        "runsc reports no OOM kills: the sentry accounts memory itself, and the host's "
        "OOM killer kills the whole sandbox",
};

}  // namespace

const Flavour& RunscFlavour() {
  return kRunsc;
}

const Flavour& RuncFlavour() {
  return kRunc;
}
const Flavour& CrunFlavour() {
  return kCrun;
}

const Flavour& FlavourFor(std::string_view binary) {
  std::string_view base = binary.substr(binary.rfind('/') + 1);
  if (base.starts_with("crun")) return kCrun;
  if (base.starts_with("runsc")) return kRunsc;
  return kRunc;
}

}  // namespace hull::runtime::oci_cli
