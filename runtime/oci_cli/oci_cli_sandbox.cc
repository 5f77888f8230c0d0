// OciCliBackend's Sandbox API calls: the pod's sandbox container for a runtime
// whose pod runs in a sandbox process of its own (runsc's gVisor sandbox).
// containerd's shim sandboxer sends no pause image and no rootfs, so hull
// makes the sandbox container's bundle itself (sandbox_bundle.h) and creates
// it with runsc like any container. The container's id is the sandbox id, so the app
// containers, whose specs name it as their io.kubernetes.cri.sandbox-id, join
// it as they join a pause container. docs/sandbox-api.md.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "base/file_util.h"
#include "runtime/oci_cli/oci_cli_backend.h"
#include "runtime/oci_cli/run_blocking.h"
#include "runtime/oci_cli/sandbox_bundle.h"

namespace hull::runtime::oci_cli {
namespace {

// Each blocking `delete --force` at server exit (containerd allows a shim's
// shutdown a few seconds).
constexpr std::chrono::seconds kDeleteNowTimeout{2};

}  // namespace

void OciCliBackend::PrepareSandbox(const SandboxRequest& req, Done done) {
  if (!req.create_sandbox_process || !argv_.flavour().sandbox_process)
    return PostDone(std::move(done), Status());
  if (sandbox_) {
    return PostDone(std::move(done),
                    AlreadyExistsError("the pod's sandbox " + sandbox_->id + " exists"));
  }
  Result<std::string> pause = PauseBinaryBesideSelf();
  Result<std::string> dir =
      pause ? WriteSandboxBundle(req.bundle, req.spec, *pause) : Result<std::string>(pause);
  if (!dir) return PostDone(std::move(done), dir.error().WithContext("sandbox bundle"));
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
  // what exits first; the server is ending, every exit is its own. A
  // confined server's children are its spawner's: it reaps them, and the
  // server reads their exits, and starts the deletes, through it.
  SpawnerClient* spawner = reaper_.spawner();
  std::vector<SpawnerExit> exits;
  auto reap = [&]() -> pid_t {
    if (spawner == nullptr) return ::waitpid(-1, nullptr, WNOHANG);
    if (exits.empty() && !spawner->ReadExits(exits).ok()) return -1;
    if (exits.empty()) return 0;
    const pid_t reaped = exits.back().pid;
    exits.pop_back();
    return reaped;
  };
  Result<std::string> text = ReadFile(sandbox_->dir + "/sandbox.pid");
  const pid_t pid = text ? static_cast<pid_t>(std::strtol(text->c_str(), nullptr, 10)) : 0;
  if (pid > 0) ::kill(pid, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + kDeleteNowTimeout;
  auto quiet_since = std::chrono::steady_clock::now();
  bool sandbox_reaped = pid <= 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t reaped = reap();
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
    (void)RunBlocking(argv_.Delete(id, /*force=*/true), kDeleteNowTimeout, spawner);
  }
  writes_.remove_locks(argv_.config().root, sandbox_->id);
  RemoveSandboxBundle(sandbox_->dir);
  sandbox_.reset();
}

}  // namespace hull::runtime::oci_cli
