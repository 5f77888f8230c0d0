// The shim's side of the backends: the factory that turns a pod's
// RuntimeOptions (shim/config) into one Backend (runtime/backend.h: the OCI
// CLI runtimes of runtime/oci_cli/, or the vm backend of shim/backend/vm/),
// and the blocking runtime calls of the one-shot actions. Every backend is
// chosen here and nowhere else. The shim speaks of the Backend interface and
// its request types as its own (the using-declarations below).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/oci_cli/argv.h"
#include "shim/config/runtime_options.h"

namespace hull::shim {

using runtime::Backend;
using runtime::CheckpointRequest;
using runtime::CreateRequest;
using runtime::Done;
using runtime::ExecRequest;
using runtime::ProcessStdio;
using runtime::SandboxRequest;

// The pod runs in the vm backend (`runtime = "vm"`, the key that otherwise
// names runc, crun or runsc).
bool IsVm(const RuntimeOptions& options);

// Makes the backend of one pod from the runtime options of its first
// container.
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(const RuntimeOptions&)>;

// The production factory. `ns` is the containerd namespace (it names the
// runtime root); `log` is the server's (the vm backend logs its VM's life).
BackendFactory DefaultBackendFactory(EventLoop& loop, Reaper& reaper, std::string ns,
                                     Logger log = Logger::Null());

// The backend for one pod (what DefaultBackendFactory makes).
Result<std::unique_ptr<Backend>> MakeBackend(EventLoop& loop, Reaper& reaper,
                                             const RuntimeOptions& options, const std::string& ns,
                                             const Logger& log = Logger::Null());

// The OCI runtime features document (JSON) of the runtime `options` selects:
// `<runtime> features` where the runtime has it, else one hull builds. Blocks;
// for `containerd-shim-hull-v2 -info`, never for the server.
Result<std::string> RuntimeFeatures(const RuntimeOptions& options);

// Synchronous best-effort `<runtime> delete --force <id>` for the `delete`
// action (a crashed server left the container behind). Blocks.
Status ForceDelete(const RuntimeOptions& options, const std::string& ns, const std::string& bundle,
                   const std::string& id);
// The runtime root for namespace `ns`: `<root>/<ns>`, where an empty root
// means /run/containerd/<basename of binary>.
std::string RuntimeRoot(const RuntimeOptions& options, const std::string& ns);

// The runtime root whose orphaned sandbox lock files hull removes (runsc's:
// RemoveOrphanRunscLocks), or "" (runc, crun, vm: their state only the
// runtime writes). A confined server's spawner removes them for it
// (spawner_bundle_files.h): the root is read-only to the server.
std::string RuntimeLockRoot(const RuntimeOptions& options, const std::string& ns);

// The argv builder of an OCI CLI runtime pod (not vm): the binary resolved
// in PATH, no --log (each container's calls log to its own bundle).
Result<runtime::oci_cli::ArgvBuilder> PodArgvBuilder(const RuntimeOptions& options,
                                                     const std::string& ns);

// The OCI CLI runtime config for one container of `bundle`.
runtime::oci_cli::RuntimeConfig MakeRuntimeConfig(const RuntimeOptions& options,
                                                  const std::string& ns, const std::string& bundle);

}  // namespace hull::shim
