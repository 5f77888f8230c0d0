#include "runtime/oci_cli/argv.h"

#include <string_view>

namespace hull::runtime::oci_cli {
namespace {

void AddIf(Argv& argv, bool cond, const char* flag) {
  if (cond) argv.emplace_back(flag);
}

void AddValueIf(Argv& argv, const char* flag, const std::string& value) {
  if (value.empty()) return;
  argv.emplace_back(flag);
  argv.push_back(value);
}

}  // namespace

std::string InternalPidFile(const std::string& pid_file) {
  return pid_file + ".internal";
}

Argv ArgvBuilder::Base(const char* command) const {
  Argv argv = GlobalFlags();
  argv.emplace_back(command);
  return argv;
}

Argv ArgvBuilder::GlobalFlags() const {
  Argv argv{config_.binary};
  AddValueIf(argv, "--root", config_.root);
  if (!config_.log_path.empty()) {
    argv.insert(argv.end(), {"--log", config_.log_path, "--log-format", "json"});
  }
  AddIf(argv, config_.systemd_cgroup, "--systemd-cgroup");
  if (!flavour_.criu_path_flag.empty() && !config_.criu_path.empty()) {
    argv.emplace_back(flavour_.criu_path_flag);
    argv.push_back(config_.criu_path);
  }
  for (std::string_view flag : flavour_.global_flags) argv.emplace_back(flag);
  for (const auto& [key, value] : config_.runtime_flags) argv.push_back("--" + key + "=" + value);
  return argv;
}

Argv ArgvBuilder::Create(const CreateRequest& req) const {
  Argv argv = Base("create");
  argv.insert(argv.end(), {"--bundle", req.bundle, "--pid-file", req.pid_file});
  AddValueIf(argv, "--console-socket", req.stdio.console_socket);
  AddIf(argv, config_.no_pivot_root, "--no-pivot");
  AddIf(argv, config_.no_new_keyring, "--no-new-keyring");
  argv.push_back(req.id);
  return argv;
}

Argv ArgvBuilder::Start(const std::string& id) const {
  Argv argv = Base("start");
  argv.push_back(id);
  return argv;
}

Argv ArgvBuilder::Restore(const CreateRequest& req) const {
  Argv argv = Base("restore");
  argv.insert(argv.end(), {"--detach", "--bundle", req.bundle, "--pid-file", req.pid_file});
  AddValueIf(argv, "--console-socket", req.stdio.console_socket);
  AddIf(argv, config_.no_pivot_root, "--no-pivot");
  argv.insert(argv.end(), {"--image-path", req.checkpoint});
  AddValueIf(argv, "--work-path", config_.criu_work_path);
  AddIf(argv, flavour_.restore_no_subreaper, "--no-subreaper");
  argv.push_back(req.id);
  return argv;
}

Argv ArgvBuilder::Exec(const ExecRequest& req) const {
  Argv argv = Base("exec");
  argv.insert(argv.end(), {"--process", req.process_json, "--detach", "--pid-file", req.pid_file});
  if (!flavour_.exec_internal_pid_flag.empty()) {
    argv.emplace_back(flavour_.exec_internal_pid_flag);
    argv.push_back(InternalPidFile(req.pid_file));
  }
  AddValueIf(argv, "--console-socket", req.stdio.console_socket);
  argv.push_back(req.id);
  return argv;
}

Argv ArgvBuilder::Kill(const std::string& id, int signal, bool all) const {
  Argv argv = Base("kill");
  AddIf(argv, all, "--all");
  argv.push_back(id);
  argv.push_back(std::to_string(signal));
  return argv;
}

Argv ArgvBuilder::KillProcess(const std::string& id, pid_t pid, int signal) const {
  Argv argv = Base("kill");
  argv.insert(argv.end(), {"--pid", std::to_string(pid), id, std::to_string(signal)});
  return argv;
}

Argv ArgvBuilder::Delete(const std::string& id, bool force) const {
  Argv argv = Base("delete");
  AddIf(argv, force, "--force");
  argv.push_back(id);
  return argv;
}

Argv ArgvBuilder::Pause(const std::string& id) const {
  Argv argv = Base("pause");
  argv.push_back(id);
  return argv;
}

Argv ArgvBuilder::Resume(const std::string& id) const {
  Argv argv = Base("resume");
  argv.push_back(id);
  return argv;
}

Argv ArgvBuilder::Update(const std::string& id) const {
  Argv argv = Base("update");
  argv.insert(argv.end(), {"--resources", "-", id});
  return argv;
}

Argv ArgvBuilder::Ps(const std::string& id) const {
  Argv argv = Base("ps");
  argv.insert(argv.end(), {"--format", "json", id});
  return argv;
}

Argv ArgvBuilder::Checkpoint(const CheckpointRequest& req) const {
  Argv argv = Base("checkpoint");
  argv.insert(argv.end(),
              {"--image-path", req.image_path.empty() ? config_.criu_image_path : req.image_path});
  AddValueIf(argv, "--work-path", req.work_path.empty() ? config_.criu_work_path : req.work_path);
  AddValueIf(argv, "--parent-path", req.parent_path);
  AddIf(argv, !req.exit, "--leave-running");
  AddIf(argv, req.open_tcp, "--tcp-established");
  AddIf(argv, req.external_unix_sockets, "--ext-unix-sk");
  AddIf(argv, req.terminal, "--shell-job");
  AddIf(argv, req.file_locks, "--file-locks");
  for (const auto& ns : req.empty_namespaces) AddValueIf(argv, "--empty-ns", ns);
  AddValueIf(argv, "--manage-cgroups-mode", req.cgroups_mode);
  argv.push_back(req.id);
  return argv;
}

Argv ArgvBuilder::Wait(const std::string& id) const {
  Argv argv = Base("wait");
  argv.push_back(id);
  return argv;
}

Argv ArgvBuilder::EventsStats(const std::string& id) const {
  Argv argv = Base("events");
  argv.insert(argv.end(), {"--stats", id});
  return argv;
}

Argv ArgvBuilder::List() const {
  Argv argv = Base("list");
  argv.insert(argv.end(), {"--format", "json"});
  return argv;
}

Argv ArgvBuilder::CheckpointProbe() const {
  return {config_.binary, "checkpoint", "--help"};
}

Argv ArgvBuilder::CriuCheck() const {
  return {config_.criu_path.empty() ? std::string("criu") : config_.criu_path, "check"};
}

Argv ArgvBuilder::Features() const {
  return {config_.binary, "features"};
}

Argv ArgvBuilder::Version() const {
  return {config_.binary, "--version"};
}

}  // namespace hull::runtime::oci_cli
