#include "bench/shims/bench_env.h"

#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "bench/shims/measure.h"

namespace hull::bench {

using namespace std::chrono_literals;

namespace {

constexpr char kBusybox[] = "docker.io/hull/busybox:latest";
constexpr char kGoShim[] = "/usr/bin/containerd-shim-runc-v2";

// The harness logs at debug level (containerd then passes -debug to every
// shim). Production runs at info, and debug logging costs both shims time
// per call, so the bench switches the daemon to info: there is no option for
// it, so rewrite the config and restart the daemon before any shim exists.
Status UseInfoLogLevel(itest::PrivateContainerd& c) {
  const std::string path = c.dir() + "/config.toml";
  std::string config = ReadWholeFile(path);
  const std::string debug = "level = \"debug\"";
  size_t at = config.find(debug);
  if (at == std::string::npos) return InternalError("no debug level in " + path);
  config.replace(at, debug.size(), "level = \"info\"");
  if (!WriteWholeFile(path, config)) return InternalError("write " + path);
  std::string error;
  if (!c.Restart(&error)) return UnavailableError("restart containerd: " + error);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<BenchEnv>> BenchEnv::Create(const BenchOptions& options) {
  if (std::string reason = itest::SkipReason(); !reason.empty()) {
    return FailedPreconditionError("cannot run: " + reason);
  }
  const std::string shim_dir = itest::HullShimDir();
  if (shim_dir.empty()) return FailedPreconditionError("containerd-shim-hull-v2 is not built");

  std::unique_ptr<BenchEnv> env(new BenchEnv());
  std::string error;
  itest::ContainerdOptions containerd_options;
  containerd_options.hull_server_config =
      options.confine ? "[security]\nconfine = true\n" : "[security]\nconfine = false\n";
  env->containerd_ = itest::PrivateContainerd::Start(containerd_options, &error);
  if (env->containerd_ == nullptr) return UnavailableError("start containerd: " + error);
  if (!options.debug_log) HULL_RETURN_IF_ERROR(UseInfoLogLevel(*env->containerd_));
  // The shim-start phase runs `start` itself, with this process's
  // environment: it must name the same config as containerd's.
  ::setenv("HULL_CONFIG", (env->containerd_->dir() + "/hull-server.toml").c_str(), 1);
  if (!env->containerd_->ImportImages("default", &error)) {
    return UnavailableError("import images: " + error);
  }

  const std::string crun_config = env->containerd_->dir() + "/hull-crun.toml";
  if (!WriteWholeFile(crun_config, "runtime = \"crun\"\n")) {
    return InternalError("write " + crun_config);
  }
  // runsc: its state under this containerd's directory, no network (ctr
  // sets up none, and runsc refuses the host's), as the integration tests
  // run it. Its sandbox mounts its chroot under containerd's temp dir, which
  // must be searchable by others (mkdtemp made it 0700).
  const std::string dir = env->containerd_->dir();
  const std::string runsc_config = dir + "/hull-runsc.toml";
  if (!WriteWholeFile(runsc_config, "runtime = \"runsc\"\nroot = \"" + dir +
                                        "/runsc\"\n[runsc_config]\nnetwork = \"none\"\n")) {
    return InternalError("write " + runsc_config);
  }
  for (const std::string& d : {dir, dir + "/tmp"}) {
    std::error_code ec;
    std::filesystem::permissions(
        d, std::filesystem::perms::group_exec | std::filesystem::perms::others_exec,
        std::filesystem::perm_options::add, ec);
    if (ec) return InternalError("chmod " + d + ": " + ec.message());
  }
  const std::string hull = shim_dir + "/containerd-shim-hull-v2";
  env->variants_ = {
      {Kind::kHull, "hull/runc", "io.containerd.hull.v2", "", hull},
      {Kind::kGo, "Go/runc", "io.containerd.runc.v2", "", kGoShim},
      {Kind::kHullCrun, "hull/crun", "io.containerd.hull.v2", crun_config, hull},
      {Kind::kHullRunsc, "hull/runsc", "io.containerd.hull.v2", runsc_config, hull},
  };
  return env;
}

std::string BenchEnv::bundle(const std::string& id) const {
  return containerd_->state() + "/io.containerd.runtime.v2.task/default/" + id;
}

std::string BenchEnv::NewId(const std::string& prefix) {
  return prefix + "-" + std::to_string(next_id_++);
}

itest::CommandResult BenchEnv::Ctr(const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout) {
  return containerd_->Ctr(args, "default", timeout);
}

itest::CommandResult BenchEnv::Run(const Variant& v, const std::vector<std::string>& flags,
                                   const std::string& id, const std::vector<std::string>& command) {
  std::vector<std::string> args = {"run", "--runtime", v.runtime};
  if (!v.config_path.empty()) {
    args.push_back("--runtime-config-path");
    args.push_back(v.config_path);
  }
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(kBusybox);
  args.push_back(id);
  args.insert(args.end(), command.begin(), command.end());
  return Ctr(args);
}

Status BenchEnv::RemoveAll(const std::vector<std::string>& ids) {
  constexpr size_t kBatch = 50;
  for (size_t i = 0; i < ids.size(); i += kBatch) {
    auto first = ids.begin() + static_cast<long>(i);
    auto last = ids.begin() + static_cast<long>(std::min(ids.size(), i + kBatch));
    std::vector<std::string> tasks = {"task", "delete", "--force"};
    tasks.insert(tasks.end(), first, last);
    Ctr(tasks, 300s);  // tasks already gone are reported, not fatal
    std::vector<std::string> containers = {"container", "delete"};
    containers.insert(containers.end(), first, last);
    itest::CommandResult r = Ctr(containers, 300s);
    if (!r.ok()) return InternalError("ctr container delete: " + r.Describe());
  }
  return WaitForNoShims(60s);
}

std::vector<pid_t> BenchEnv::Shims(const std::string& binary) const {
  std::string name = binary.substr(binary.rfind('/') + 1);
  return ProcessesOf(name, containerd_->address());
}

Status BenchEnv::WaitForNoShims(std::chrono::milliseconds timeout) const {
  bool gone = itest::WaitUntil(
      [&] { return Shims(hull_binary()).empty() && Shims(go_binary()).empty(); }, timeout, 50ms);
  return gone ? Status::Ok() : DeadlineExceededError("shims still running after the teardown");
}

std::vector<const Variant*> RoundOrder(const std::vector<Variant>& variants, int round) {
  std::vector<const Variant*> order;
  for (const Variant& v : variants) order.push_back(&v);
  if (round % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace hull::bench
