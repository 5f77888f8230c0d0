#include "shim/mount/spawner_bundle_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>

#include "base/file_util.h"
#include "base/spawner_wire.h"
#include "base/unique_fd.h"
#include "runtime/oci_cli/oci_cli_backend.h"
#include "runtime/oci_cli/sandbox_kernel_spec.h"
#include "runtime/oci_cli/spec_version.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/mount/spawner_mounts.h"
#include "shim/pod/pod_cgroup.h"
#include "shim/pod/pod_size.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;
using spawner_wire::Reader;
using spawner_wire::Writer;

constexpr uint8_t kWrite = 'w';
constexpr uint8_t kRemove = 'r';
constexpr uint8_t kFitSpec = 'f';
constexpr uint8_t kRemoveLocks = 'l';
constexpr uint8_t kFitKernel = 'k';

int ModeOf(std::string_view name) {
  return name.ends_with(".process.json") ? 0600 : 0644;
}

// The bundle directory of `path`, opened without following a symlink, once
// it is one of the pod's bundles where it really is (checked again through
// the descriptor: the server may have swapped it in between).
Result<UniqueFd> OpenBundleOf(const std::vector<std::string>& bundles,
                              const std::string& sandbox_bundle, const fs::path& path) {
  const fs::path dir = path.parent_path();
  auto refused = [&] {
    return PermissionDeniedError("bundle file " + path.string() +
                                 " refused: not in one of the pod's bundles");
  };
  auto is_pod_bundle = [&](const std::string& real) {
    if (InBundleDirs(bundles, real, "")) return true;
    std::error_code ec;
    return !sandbox_bundle.empty() && fs::canonical(sandbox_bundle, ec) == fs::path(real) && !ec;
  };
  if (!path.is_absolute() || !is_pod_bundle(dir.string())) return refused();
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("open", dir.string());
  char real[PATH_MAX];
  const std::string via = "/proc/self/fd/" + std::to_string(fd.get());
  ssize_t n = ::readlink(via.c_str(), real, sizeof real - 1);
  if (n <= 0) return ErrnoError("readlink", via);
  if (!is_pod_bundle(std::string(real, static_cast<size_t>(n)))) return refused();
  return fd;
}

Result<pid_t> BundleFileEntry(const std::vector<std::string>& bundles,
                              const std::string& sandbox_bundle, const std::string& lock_root,
                              std::string_view payload) {
  Reader r(payload);
  uint8_t op = 0;
  std::string path, content, runtime;
  if (payload.size() > 0 && static_cast<uint8_t>(payload[0]) == kRemoveLocks) {
    std::string sandbox;
    if (!r.U8(op) || !r.Str(sandbox) || !r.done()) {
      return InvalidArgumentError("bundle-file: malformed spawner request");
    }
    if (lock_root.empty()) return PermissionDeniedError("remove locks: this runtime keeps none");
    if (sandbox.empty() || sandbox == "." || sandbox == ".." ||
        sandbox.find('/') != std::string::npos) {
      return PermissionDeniedError("remove locks of " + sandbox + " refused: not a sandbox id");
    }
    runtime::oci_cli::RemoveOrphanRunscLocks(lock_root, sandbox);
    return 0;
  }
  uint8_t joins = 0;
  if (!r.U8(op) || !r.Str(path) || ((op == kWrite || op == kFitSpec) && !r.Str(content)) ||
      (op == kFitSpec && !r.Str(runtime)) || (op == kFitKernel && !r.U8(joins)) || !r.done() ||
      (op != kWrite && op != kRemove && op != kFitSpec && op != kFitKernel)) {
    return InvalidArgumentError("bundle-file: malformed spawner request");
  }
  const fs::path p(path);
  const std::string name = p.filename().string();
  const bool fit = op == kFitSpec || op == kFitKernel;
  if (fit ? name != "config.json" : !IsHullBundleFile(name)) {
    return PermissionDeniedError("bundle file " + path + " refused: not a file hull keeps there");
  }
  HULL_ASSIGN_OR_RETURN(UniqueFd dir, OpenBundleOf(bundles, sandbox_bundle, p));
  if (op == kFitKernel) {
    return runtime::oci_cli::FitBundleToSandboxKernel(
        "/proc/self/fd/" + std::to_string(dir.get()) + "/config.json", joins != 0);
  }
  if (op == kFitSpec) {
    // Through the directory checked: its config.json, however it was named.
    return runtime::oci_cli::FitBundleSpecVersion(
               "/proc/self/fd/" + std::to_string(dir.get()) + "/config.json", content, runtime,
               nullptr)
        .WithContext("fit " + path);
  }
  // The directory itself, opened through the checked descriptor, for the
  // *at calls below.
  UniqueFd at(::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!at) return ErrnoError("open", p.parent_path().string());
  if (op == kRemove) {
    if (::unlinkat(at.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoError("remove", path);
    }
    return 0;
  }
  const std::string tmp = "." + name + ".tmp";
  ::unlinkat(at.get(), tmp.c_str(), 0);
  UniqueFd fd(::openat(at.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       ModeOf(name)));
  if (!fd) return ErrnoError("create", p.parent_path().string() + "/" + tmp);
  if (Status s = WriteAll(fd.get(), content, path); !s.ok()) {
    ::unlinkat(at.get(), tmp.c_str(), 0);
    return s;
  }
  fd.reset();
  if (::renameat(at.get(), tmp.c_str(), at.get(), name.c_str()) != 0) {
    Status s = ErrnoError("rename", path);
    ::unlinkat(at.get(), tmp.c_str(), 0);
    return s;
  }
  return 0;
}

// Sends one request to the spawner's bundle-file entry.
Status RunBundleEntry(SpawnerClient* spawner, Writer w) {
  Result<pid_t> done = spawner->Run(kBundleFileSpawnerEntry, w.Take(), {});
  return done ? Status::Ok() : done.error();
}

}  // namespace

bool IsHullBundleFile(std::string_view name) {
  if (name == vm::kVmRecordFile || name == kPodSizeFile || name == kPodCgroupFile) return true;
  if (name.empty() || name[0] == '.' || name.find('/') != std::string_view::npos) return false;
  for (std::string_view suffix : {std::string_view(".pid"), std::string_view(".pid.internal"),
                                  std::string_view(".process.json")}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) return true;
  }
  return false;
}

SpawnerEntry BundleFileSpawnerEntry(std::vector<std::string> bundles, std::string sandbox_bundle,
                                    std::string lock_root) {
  return SpawnerEntry{
      .name = "bundle-file",
      .run = [bundles = std::move(bundles), sandbox_bundle = std::move(sandbox_bundle),
              lock_root = std::move(lock_root)](std::string_view payload, std::vector<UniqueFd>&) {
        return BundleFileEntry(bundles, sandbox_bundle, lock_root, payload);
      }};
}

Status RemoveRunscLocksVia(SpawnerClient* spawner, const std::string& sandbox) {
  Writer w;
  w.U8(kRemoveLocks);
  w.Str(sandbox);
  return RunBundleEntry(spawner, std::move(w));
}

Status WriteBundleFileVia(SpawnerClient* spawner, const std::string& path,
                          std::string_view content) {
  const std::string name = fs::path(path).filename().string();
  if (spawner == nullptr) return WriteFileAtomic(path, content, ModeOf(name));
  Writer w;
  w.U8(kWrite);
  w.Str(path);
  w.Str(content);
  return RunBundleEntry(spawner, std::move(w));
}

Status FitBundleSpecVia(SpawnerClient* spawner, const std::string& config_json,
                        std::string_view runtime_max, std::string_view runtime) {
  if (spawner == nullptr) {
    return runtime::oci_cli::FitBundleSpecVersion(config_json, runtime_max, runtime, nullptr);
  }
  Writer w;
  w.U8(kFitSpec);
  w.Str(config_json);
  w.Str(runtime_max);
  w.Str(runtime);
  return RunBundleEntry(spawner, std::move(w));
}

Status FitBundleToSandboxKernelVia(SpawnerClient* spawner, const std::string& config_json,
                                   bool joins_sandbox) {
  if (spawner == nullptr) {
    return runtime::oci_cli::FitBundleToSandboxKernel(config_json, joins_sandbox);
  }
  Writer w;
  w.U8(kFitKernel);
  w.Str(config_json);
  w.U8(joins_sandbox ? 1 : 0);
  return RunBundleEntry(spawner, std::move(w));
}

Status RemoveBundleFileVia(SpawnerClient* spawner, const std::string& path) {
  if (spawner == nullptr) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove", path);
    return Status::Ok();
  }
  Writer w;
  w.U8(kRemove);
  w.Str(path);
  return RunBundleEntry(spawner, std::move(w));
}

}  // namespace hull::shim
