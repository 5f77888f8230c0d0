// The backend factory and the blocking runtime calls of the one-shot actions
// (`-info`, `delete`). Every backend is chosen here and nowhere else.
#include "shim/backend/make_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "runtime/oci_cli/argv.h"
#include "runtime/oci_cli/oci_cli_backend.h"
#include "runtime/oci_cli/run_blocking.h"
#include "runtime/oci_cli/runtime_error.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/mount/spawner_bundle_files.h"

namespace hull::shim {
namespace {

using namespace std::chrono_literals;
namespace oci_cli = runtime::oci_cli;
using oci_cli::ArgvBuilder;
using oci_cli::FlavourFor;

// containerd allows the runc shim's `delete` 5 s in all; leave it some.
constexpr auto kForceDeleteTimeout = 4s;
constexpr auto kFeaturesTimeout = 10s;

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `binary` as a path: itself if it names a file, else the first match in PATH.
Result<std::string> ResolveBinary(const std::string& binary) {
  if (binary.empty()) return InvalidArgumentError("runtime binary name is empty");
  if (binary.find('/') != std::string::npos) {
    if (IsExecutableFile(binary)) return binary;
    return NotFoundError("runtime binary " + binary + " does not exist or is not executable");
  }
  const char* path_env = ::getenv("PATH");
  std::string_view path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + binary;
    if (IsExecutableFile(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return NotFoundError("runtime binary \"" + binary + "\" not found in PATH");
}

std::string Basename(std::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

std::string SelfExe() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

bool IsVm(const RuntimeOptions& options) {
  return options.binary_name == "vm";
}

Result<std::unique_ptr<Backend>> MakeBackend(EventLoop& loop, Reaper& reaper,
                                             const RuntimeOptions& options, const std::string& ns,
                                             const Logger& log) {
  if (IsVm(options)) {
    // A confined server's VM pod: network, share and QEMU through its
    // spawner (vm_spawner.h).
    return std::unique_ptr<Backend>(
        std::make_unique<vm::VmBackend>(loop, reaper, options, SelfExe(), log));
  }
  HULL_ASSIGN_OR_RETURN(ArgvBuilder argv, PodArgvBuilder(options, ns));
  auto backend = std::make_unique<oci_cli::OciCliBackend>(loop, reaper, std::move(argv));
  if (SpawnerClient* spawner = reaper.spawner()) {
    backend->set_host_writes(oci_cli::OciCliBackend::HostWrites{
        .fit_spec =
            [spawner](const std::string& config_json, std::string_view runtime_max,
                      std::string_view runtime) {
              return FitBundleSpecVia(spawner, config_json, runtime_max, runtime);
            },
        .fit_kernel =
            [spawner](const std::string& config_json, bool joins_sandbox) {
              return FitBundleToSandboxKernelVia(spawner, config_json, joins_sandbox);
            },
        .remove_locks =
            [spawner](const std::string&, const std::string& sandbox) {
              RemoveRunscLocksVia(spawner, sandbox).IgnoreError();
            },
        .remove_file =
            [spawner](const std::string& path) {
              RemoveBundleFileVia(spawner, path).IgnoreError();
            }});
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<ArgvBuilder> PodArgvBuilder(const RuntimeOptions& options, const std::string& ns) {
  HULL_ASSIGN_OR_RETURN(std::string binary, ResolveBinary(options.binary_name));
  // The pod's config: each container's calls log to its own bundle.
  oci_cli::RuntimeConfig config = MakeRuntimeConfig(options, ns, /*bundle=*/"");
  // Run the binary that was checked; the root keeps the configured name.
  config.binary = std::move(binary);
  return ArgvBuilder(FlavourFor(options.binary_name), std::move(config));
}

BackendFactory DefaultBackendFactory(EventLoop& loop, Reaper& reaper, std::string ns, Logger log) {
  return [&loop, &reaper, ns = std::move(ns), log = std::move(log)](const RuntimeOptions& options) {
    return MakeBackend(loop, reaper, options, ns, log);
  };
}

Result<std::string> RuntimeFeatures(const RuntimeOptions& options) {
  if (IsVm(options)) return vm::VmFeaturesJson(options);
  const oci_cli::Flavour& flavour = FlavourFor(options.binary_name);
  HULL_ASSIGN_OR_RETURN(std::string binary, ResolveBinary(options.binary_name));
  ArgvBuilder argv(flavour, oci_cli::RuntimeConfig{.binary = binary});
  const std::string context = std::string(flavour.name) + " features";

  HULL_ASSIGN_OR_RETURN(CommandResult r, oci_cli::RunBlocking(argv.Features(), kFeaturesTimeout));
  if (r.ok()) {
    auto doc = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) return r.out;
    return InternalError(context + ": output is not a JSON object");
  }
  Status failed =
      oci_cli::ClassifyFailure(flavour, "", oci_cli::FailureMessage("", r.err, r.exit_status))
          .WithContext(context);
  if (flavour.build_features == nullptr) return failed;
  // No `features` command: describe the runtime from its version banner.
  HULL_ASSIGN_OR_RETURN(CommandResult version,
                        oci_cli::RunBlocking(argv.Version(), kFeaturesTimeout));
  if (!version.ok()) {
    return UnknownError(context + ": " + binary + " --version: " +
                        oci_cli::FailureMessage("", version.err, version.exit_status));
  }
  return flavour.build_features(version.out);
}

Status ForceDelete(const RuntimeOptions& options, const std::string& ns, const std::string& bundle,
                   const std::string& id) {
  // The VM (if this bundle recorded one) and its run directory.
  if (IsVm(options)) return vm::CleanUpAfterShim(bundle, id);
  const oci_cli::Flavour& flavour = FlavourFor(options.binary_name);
  // The bundle may be gone already; then the runtime logs to stderr only.
  oci_cli::RuntimeConfig config =
      MakeRuntimeConfig(options, ns, IsDirectory(bundle) ? bundle : std::string());
  ArgvBuilder argv(flavour, std::move(config));
  const std::string context = std::string(flavour.name) + " delete --force " + id;

  oci_cli::LogCursor log = oci_cli::LogCursor::At(argv.config().log_path);
  auto r = oci_cli::RunBlocking(argv.Delete(id, /*force=*/true), kForceDeleteTimeout);
  if (!r) return r.error().WithContext(context);
  if (r->ok()) return Status();
  Status failed =
      oci_cli::ClassifyFailure(flavour, argv.config().root + "/" + id,
                               oci_cli::FailureMessage(log.ReadNew(), r->err, r->exit_status));
  if (failed.code() == Code::kNotFound) return Status();
  return failed.WithContext(context);
}

std::string RuntimeRoot(const RuntimeOptions& options, const std::string& ns) {
  std::string root = options.root;
  if (root.empty()) root = "/run/containerd/" + Basename(options.binary_name);
  return root + "/" + ns;
}

std::string RuntimeLockRoot(const RuntimeOptions& options, const std::string& ns) {
  // sandbox_deletes_last: the delete that ends a sandbox removes its
  // orphaned locks (RemoveOrphanRunscLocks).
  if (IsVm(options) || !FlavourFor(options.binary_name).sandbox_deletes_last) return "";
  return RuntimeRoot(options, ns);
}

runtime::oci_cli::RuntimeConfig MakeRuntimeConfig(const RuntimeOptions& options,
                                                  const std::string& ns,
                                                  const std::string& bundle) {
  return runtime::oci_cli::RuntimeConfig{
      .binary = options.binary_name,
      .root = RuntimeRoot(options, ns),
      .log_path = bundle.empty() ? std::string() : bundle + "/log.json",
      .systemd_cgroup = options.systemd_cgroup,
      .no_pivot_root = options.no_pivot_root,
      .no_new_keyring = options.no_new_keyring,
      .criu_path = options.criu_path,
      .criu_image_path = options.criu_image_path,
      .criu_work_path = options.criu_work_path,
      .runtime_flags = options.runtime_flags,
  };
}

}  // namespace hull::shim
