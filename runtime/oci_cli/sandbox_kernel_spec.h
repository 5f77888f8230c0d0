// How a spec is fitted, before `<runtime> create`, to a runtime whose pod's
// containers share one kernel of the runtime's own (gVisor's sentry:
// Flavour::sandbox_kernel), so that the pod gets what runc would give it or
// a clear refusal (docs/backends.md, "Pod namespaces and sysctls"). Pure
// except FitBundleToSandboxKernel (one file read, one atomic write). Any
// thread.
#pragma once

#include <string>

#include "base/status.h"
#include "oci/spec.h"

namespace hull::runtime::oci_cli {

// Fits `spec` in place; whether it changed it. InvalidArgument, naming what
// was asked, for what the sandbox cannot give:
// - the host's PID or IPC namespace (no entry of the type: hostPID,
//   hostIPC): the containers would see the sandbox's kernel's, silently;
// - a linux.sysctl key outside net.*: the sentry takes no spec sysctls and
//   has no such settings (or fixed ones), so a pod asking for
//   kernel.shm_rmid_forced=1 would run with it unset. net.* passes:
//   containerd 2.x puts two on every pod, and the sandbox's network is the
//   runtime's to configure (docs/backends.md);
// - a maskedPaths or readonlyPaths entry outside /proc and /sys: runsc
//   applies neither list (a masked file stays readable, a read-only
//   directory writable). Entries under /proc and /sys pass: what containerd
//   puts there by default is mostly absent from the sentry's own /proc and
//   /sys, whose writes it mostly refuses (docs/backends.md);
// - a mount with the option shared or rshared (CRI's mountPropagation
//   Bidirectional), naming its destination, or linux.rootfsPropagation
//   shared or rshared: mounts made on the sandbox's kernel never reach the
//   host, and runsc itself fails them with an unknown error. slave and
//   rslave (HostToContainer) pass: the gofer serves the host's files.
// And a container joining the sandbox (`joins_sandbox`) whose PID namespace
// is named by a path /proc/<pid>/ns/pid (CRI's pid=POD, the pause
// container's) loses that entry: gVisor runs a container without one in
// the sandbox's root PID namespace, where the pause process is PID 1; a
// path matches none of its containers, and it would get a namespace of its
// own. Any other PID namespace entry stays.
Result<bool> FitSpecToSandboxKernel(oci::Spec& spec, bool joins_sandbox);

// FitSpecToSandboxKernel on the config.json at `path`, rewriting it
// (atomically) when it changed.
Status FitBundleToSandboxKernel(const std::string& path, bool joins_sandbox);

}  // namespace hull::runtime::oci_cli
