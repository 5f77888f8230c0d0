// OciCliBackend's Sandbox API calls: the pod's sandbox container for a runtime
// whose pod runs in a sandbox process of its own (runsc's gVisor sandbox).
// containerd's shim sandboxer sends no pause image and no rootfs, so hull
// makes the sandbox container's bundle itself, in <pod bundle>/hull-sandbox:
// a root filesystem holding only hull-pause (copied from beside the shim's
// binary), and the pod's spec from oci::BuildPauseSpec with the bind mounts
// dropped (their sources, CRI's sandbox files, do not exist in shim mode, and
// hull-pause needs none). The container's id is the sandbox id, so the app
// containers, whose specs name it as their io.kubernetes.cri.sandbox-id, join
// it as they join a pause container. docs/sandbox-api.md.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/file_util.h"
#include "shim/backend/oci_cli/oci_cli_backend.h"
#include "shim/backend/oci_cli/run_blocking.h"

namespace hull::shim::oci_cli {
namespace {

constexpr const char* kSandboxDir = "hull-sandbox";
constexpr const char* kPauseName = "hull-pause";
// Each blocking `delete --force` at server exit (containerd allows a shim's
// shutdown a few seconds).
constexpr std::chrono::seconds kDeleteNowTimeout{2};

// hull-pause beside the running binary (the shim: both sit in the same bin/).
Result<std::string> PauseBinary() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ErrnoError("readlink", "/proc/self/exe");
  std::string path = (self.parent_path() / kPauseName).string();
  if (::access(path.c_str(), X_OK) != 0) {
    return NotFoundError(std::string(kPauseName) + " (PID 1 of the pod's sandbox) not found at " +
                         path + ": install it beside the shim");
  }
  return path;
}

// The spec of the sandbox container: the pod's, running /pause from a
// read-only root, without bind mounts.
oci::Spec SandboxSpec(oci::Spec spec) {
  oci::SpecJson& doc = spec.mutable_json();
  doc["process"]["args"] = oci::SpecJson::array({"/pause"});
  doc["process"]["cwd"] = "/";
  // runsc gives the sandbox process the lowest oom_score_adj of its
  // containers; the pause spec's -998 made `runsc start` fail here
  // ("setting oom_score_adj ...: permission denied", measured).
  doc["process"].erase("oomScoreAdj");
  doc["root"] = {{"path", "rootfs"}, {"readonly", true}};
  if (auto mounts = doc.find("mounts"); mounts != doc.end() && mounts->is_array()) {
    oci::SpecJson kept = oci::SpecJson::array();
    for (const auto& m : *mounts) {
      if (m.is_object() && m.value("type", "") != "bind") kept.push_back(m);
    }
    *mounts = std::move(kept);
  }
  return spec;
}

// Writes the sandbox container's bundle under `pod_bundle`; its path.
Result<std::string> WriteSandboxBundle(const std::string& pod_bundle, const oci::Spec& spec) {
  HULL_ASSIGN_OR_RETURN(std::string pause, PauseBinary());
  const std::string dir = pod_bundle + "/" + kSandboxDir;
  // 0711: runsc's sandbox, without capabilities, must reach the root.
  for (const std::string& d : {dir, dir + "/rootfs"}) {
    if (::mkdir(d.c_str(), 0711) != 0 && errno != EEXIST) return ErrnoError("mkdir", d);
  }
  std::error_code ec;
  std::filesystem::copy_file(pause, dir + "/rootfs/pause",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    return InternalError("copy " + pause + " to " + dir + "/rootfs/pause: " + ec.message());
  }
  if (::chmod((dir + "/rootfs/pause").c_str(), 0755) != 0) {
    return ErrnoError("chmod", dir + "/rootfs/pause");
  }
  HULL_RETURN_IF_ERROR(WriteFileAtomic(dir + "/config.json", SandboxSpec(spec).Dump()));
  return dir;
}

void RemoveSandboxBundle(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace

void OciCliBackend::PrepareSandbox(const SandboxRequest& req, Done done) {
  if (!req.spec || !argv_.flavour().sandbox_process) return PostDone(std::move(done), Status());
  if (sandbox_) {
    return PostDone(std::move(done),
                    AlreadyExistsError("the pod's sandbox " + sandbox_->id + " exists"));
  }
  Result<std::string> dir = WriteSandboxBundle(req.bundle, *req.spec);
  if (!dir) {
    RemoveSandboxBundle(req.bundle + "/" + kSandboxDir);
    return PostDone(std::move(done), dir.error().WithContext("sandbox bundle"));
  }
  sandbox_ = SandboxContainer{.id = req.id, .dir = *dir};
  CreateRequest create{.id = req.id, .bundle = *dir, .pid_file = *dir + "/sandbox.pid"};
  Create(create, [this, done = std::move(done)](Status s) {
    if (!s.ok() && !destroying_ && sandbox_) {
      Release(sandbox_->id);
      RemoveSandboxBundle(sandbox_->dir);
      sandbox_.reset();
    }
    done(std::move(s));
  });
}

void OciCliBackend::StartSandbox(std::function<void(int)> on_exit,
                                 std::function<void(Result<pid_t>)> done) {
  if (!sandbox_) {
    return loop_.Post([done = std::move(done)] {
      done(FailedPreconditionError("the pod's sandbox was not created"));
    });
  }
  const std::string id = sandbox_->id;
  const std::string pid_file = sandbox_->dir + "/sandbox.pid";
  Start(id, [this, id, pid_file, on_exit = std::move(on_exit),
             done = std::move(done)](Status s) mutable {
    if (!s.ok()) return done(std::move(s));
    // The pid file names the sandbox process; the shim, its subreaper since
    // `runsc create` exited, reaps it.
    Result<std::string> text = ReadFile(pid_file);
    if (!text) return done(text.error());
    char* end = nullptr;
    long pid = std::strtol(text->c_str(), &end, 10);
    if (pid <= 0 || end == text->c_str()) {
      return done(InternalError("pid file " + pid_file + ": no pid in it"));
    }
    WatchInitExit(id, static_cast<pid_t>(pid), std::move(on_exit));
    done(static_cast<pid_t>(pid));
  });
}

void OciCliBackend::StopSandbox(Done done) {
  if (!sandbox_) return PostDone(std::move(done), Status());
  // The sandbox ends with its PID 1.
  Kill(sandbox_->id, SIGKILL, /*all=*/false, [done = std::move(done)](Status s) {
    done(s.code() == Code::kNotFound ? Status() : std::move(s));
  });
}

void OciCliBackend::TeardownSandbox(Done done) {
  if (!sandbox_) return PostDone(std::move(done), Status());
  SandboxContainer sandbox = std::move(*sandbox_);
  sandbox_.reset();
  // Deletes the containers that joined it first (sandbox_deletes_last).
  Delete(sandbox.id, /*force=*/true, [this, sandbox, done = std::move(done)](Status s) {
    if (!destroying_) Release(sandbox.id);
    RemoveSandboxBundle(sandbox.dir);
    done(s.WithContext("delete the pod's sandbox " + sandbox.id));
  });
}

void OciCliBackend::DestroySandboxNow() {
  // The sandbox process and runsc's gofer are children of this server (its
  // subreaper), and the loop's reaper no longer runs: `runsc delete --force`
  // would wait for them to go and see zombies. So kill the sandbox and reap
  // what exits first; the server is ending, every exit is its own.
  Result<std::string> text = ReadFile(sandbox_->dir + "/sandbox.pid");
  const pid_t pid = text ? static_cast<pid_t>(std::strtol(text->c_str(), nullptr, 10)) : 0;
  if (pid > 0) ::kill(pid, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + kDeleteNowTimeout;
  auto quiet_since = std::chrono::steady_clock::now();
  bool sandbox_reaped = pid <= 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t reaped = ::waitpid(-1, nullptr, WNOHANG);
    if (reaped < 0) break;  // no child left
    if (reaped > 0) {
      sandbox_reaped = sandbox_reaped || reaped == pid;
      quiet_since = std::chrono::steady_clock::now();
      continue;
    }
    // The gofer follows the sandbox shortly.
    if (sandbox_reaped &&
        std::chrono::steady_clock::now() - quiet_since > std::chrono::milliseconds(200)) {
      break;
    }
    ::usleep(10 * 1000);
  }
  std::vector<std::string> ids;
  for (const auto& [id, entry] : containers_) {
    if (entry.joined) ids.push_back(id);
  }
  ids.push_back(sandbox_->id);  // the sandbox last
  for (const std::string& id : ids) {
    // Best effort: the server is ending and nobody is left to tell.
    (void)RunBlocking(argv_.Delete(id, /*force=*/true), kDeleteNowTimeout);
  }
  RemoveSandboxBundle(sandbox_->dir);
  sandbox_.reset();
}

}  // namespace hull::shim::oci_cli
