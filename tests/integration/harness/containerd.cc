#include "tests/integration/harness/containerd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/integration/harness/cleanup_internal.h"
#include "tests/integration/harness/containerd_config_internal.h"
#include "tests/integration/harness/host.h"
#include "tests/integration/harness/host_internal.h"

namespace hull::itest {

namespace fs = std::filesystem;

namespace {

constexpr auto kStopGrace = std::chrono::seconds(10);
constexpr long kOverlayfsMagic = 0x794c7630;

std::string PickSnapshotter(const std::string& dir) {
  struct statfs st;
  bool on_overlay = ::statfs(dir.c_str(), &st) == 0 && st.f_type == kOverlayfsMagic;
  bool has_overlay =
      internal::ReadFile("/proc/filesystems").find("\toverlay\n") != std::string::npos;
  return has_overlay && !on_overlay ? "overlayfs" : "native";
}

std::string PickCniBinDir() {
  for (const char* dir : {"/usr/lib/cni", "/opt/cni/bin"}) {
    if (::access((std::string(dir) + "/bridge").c_str(), X_OK) == 0) return dir;
  }
  return "/usr/lib/cni";
}

// Where failed tests keep containerd's log: <build>/Testing/itest-logs/.
std::string KeepLogForFailedTest(const std::string& log_path) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "unknown";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::string dir = BinaryDir() + "/Testing/itest-logs";
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string kept = dir + "/" + name + ".containerd.log";
  fs::copy_file(log_path, kept, fs::copy_options::overwrite_existing, ec);
  return ec ? "" : kept;
}

}  // namespace

std::unique_ptr<PrivateContainerd> PrivateContainerd::Start(const ContainerdOptions& options,
                                                            std::string* error) {
  std::unique_ptr<PrivateContainerd> c(new PrivateContainerd());
  c->options_ = options;
  // Join before anything is created, so a first instance's snapshot is clean.
  // Alone, it also tears down instances whose test process died.
  c->shared_dirs_ = internal::SharedHostDirs::Join(internal::SweepStaleInstances);

  std::string tmpl_string = std::string(internal::kInstancePrefix) + "XXXXXX";
  char* tmpl = tmpl_string.data();
  if (::mkdtemp(tmpl) == nullptr) {
    *error = std::string("mkdtemp: ") + std::strerror(errno);
    return nullptr;
  }
  c->dir_ = tmpl;
  c->cni_network_ = internal::CniNetworkFor(c->dir_);
  c->snapshotter_ = options.snapshotter.empty() ? PickSnapshotter(c->dir_) : options.snapshotter;
  if (c->options_.shim_dir.empty()) {
    c->options_.shim_dir = HullShimDir().empty() ? BinaryDir() + "/bin" : HullShimDir();
  }

  std::error_code ec;
  for (const char* sub : {"/root", "/state", "/tmp", "/fifo", "/cni/net.d", "/cni/ipam"}) {
    fs::create_directories(c->dir_ + sub, ec);
    if (ec) {
      *error = "mkdir " + c->dir_ + sub + ": " + ec.message();
      return nullptr;
    }
  }
  if (!c->WriteConfig(error) || !c->Launch(error)) return nullptr;
  return c;
}

bool PrivateContainerd::WriteConfig(std::string* error) {
  internal::ConfigInputs in{.dir = dir_,
                            .snapshotter = snapshotter_,
                            .cni_network = cni_network_,
                            .cni_bin_dir = PickCniBinDir()};
  if (!internal::WriteFile(dir_ + "/config.toml", internal::ContainerdConfigToml(options_, in))) {
    *error = "write " + dir_ + "/config.toml failed";
    return false;
  }
  if (options_.enable_cri &&
      !internal::WriteFile(dir_ + "/cni/net.d/10-" + cni_network_ + ".conflist",
                           internal::CniConflist(in))) {
    *error = "write the CNI config failed";
    return false;
  }
  return true;
}

bool PrivateContainerd::Launch(std::string* error) {
  internal::Fd log(::open(log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log.valid()) {
    *error = "open " + log_path() + ": " + std::strerror(errno);
    return false;
  }
  const char* path = std::getenv("PATH");
  std::string env_path = options_.shim_dir + ":" +
                         (v2() ? options_.containerd_dir + "/bin:" : std::string()) +
                         (path != nullptr ? path : "") +
                         ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  const std::string containerd = v2() ? options_.containerd_dir + "/bin/containerd" : "containerd";
  internal::SpawnOptions spawn{.argv = {containerd, "--config", dir_ + "/config.toml"},
                               .extra_env = {"PATH=" + env_path},
                               .pipe_stdin = false,
                               .output_fd = log.get()};
  std::string server_config = options_.hull_server_config;
  if (server_config.empty()) server_config = kHarnessServerConfig;
  for (size_t at = server_config.find("$DIR"); at != std::string::npos;
       at = server_config.find("$DIR", at + dir_.size())) {
    server_config.replace(at, 4, dir_);
  }
  const std::string hull_config = dir_ + "/hull-server.toml";
  std::ofstream(hull_config) << server_config;
  spawn.extra_env.push_back("HULL_CONFIG=" + hull_config);
  if (!internal::Spawn(spawn, &daemon_, error)) return false;

  // Ready when the socket answers; give up early if the daemon dies.
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (internal::WaitPidfd(daemon_.pidfd.get(), std::chrono::milliseconds(0))) {
      int status = internal::Reap(daemon_.pid);
      daemon_ = {};
      *error = "containerd exited with status " + std::to_string(status) +
               " before answering; log tail:\n" + LogTail();
      return false;
    }
    if (::access(address().c_str(), F_OK) == 0) {
      CommandResult r = Ctr({"version"}, "default", std::chrono::seconds(10));
      if (r.ok()) return true;
      last = r.err;
    }
    internal::WaitPidfd(daemon_.pidfd.get(), std::chrono::milliseconds(20));
  }
  *error = "containerd did not answer within " + std::to_string(options_.start_timeout.count()) +
           " ms (" + internal::Trim(last) + "); log tail:\n" + LogTail();
  StopDaemon(std::chrono::seconds(1));
  return false;
}

void PrivateContainerd::StopDaemon(std::chrono::milliseconds grace) {
  if (daemon_.pid <= 0) return;
  internal::TerminateAndReap(daemon_, grace);
  daemon_ = {};
}

void PrivateContainerd::Kill() {
  if (daemon_.pid > 0) {
    ::kill(daemon_.pid, SIGKILL);  // the daemon only: its shims live on
    internal::Reap(daemon_.pid);
    daemon_ = {};
  }
}

bool PrivateContainerd::Restart(std::string* error) {
  Kill();
  return Launch(error);
}

std::vector<std::string> PrivateContainerd::CtrEnv() const {
  return {"CONTAINERD_SNAPSHOTTER=" + snapshotter_};
}

// ctr makes the stdio FIFOs of `run`, `task start` and `task exec` in
// /run/containerd/fifo unless told otherwise, and does not always remove them
// (a detached task's stay until its delete). Kept in the private directory,
// they go with it.
std::vector<std::string> PrivateContainerd::CtrArgv(const std::vector<std::string>& args,
                                                    const std::string& ns) const {
  std::vector<std::string> argv = {v2() ? options_.containerd_dir + "/bin/ctr" : "ctr", "-a",
                                   address(), "-n", ns};
  size_t command_words = 0;
  if (!args.empty() && args[0] == "run") {
    command_words = 1;
  } else if (args.size() >= 2 && (args[0] == "task" || args[0] == "tasks" || args[0] == "t") &&
             (args[1] == "start" || args[1] == "exec")) {
    command_words = 2;
  }
  argv.insert(argv.end(), args.begin(), args.begin() + command_words);
  if (command_words > 0 && std::find(args.begin(), args.end(), "--fifo-dir") == args.end()) {
    argv.push_back("--fifo-dir");
    argv.push_back(dir_ + "/fifo");
  }
  argv.insert(argv.end(), args.begin() + command_words, args.end());
  return argv;
}

CommandResult PrivateContainerd::Ctr(const std::vector<std::string>& args, const std::string& ns,
                                     std::chrono::milliseconds timeout) {
  return RunCommand(CtrArgv(args, ns), timeout, "", CtrEnv());
}

std::unique_ptr<BackgroundCommand> PrivateContainerd::CtrBackground(
    const std::vector<std::string>& args, const std::string& ns) {
  return BackgroundCommand::Start(CtrArgv(args, ns), CtrEnv());
}

bool PrivateContainerd::ImportImages(const std::string& ns, std::string* error) {
  const std::string cache = SourceDir() + "/build/images";
  CommandResult built =
      RunCommand({SourceDir() + "/tools/mkimage", cache}, std::chrono::minutes(5));
  if (!built.ok()) {
    *error = "tools/mkimage: " + built.Describe();
    return false;
  }
  for (const char* image : {"busybox.tar", "pause.tar"}) {
    CommandResult r = Ctr({"images", "import", cache + "/" + image}, ns, std::chrono::minutes(2));
    if (!r.ok()) {
      *error = std::string("ctr images import ") + image + ": " + r.Describe();
      return false;
    }
  }
  return true;
}

std::string PrivateContainerd::LogTail(size_t lines) const {
  std::string log = internal::ReadFile(log_path());
  size_t start = log.size();
  if (start > 0 && log[start - 1] == '\n') --start;  // the last line's own newline
  for (size_t count = 0; start > 0;) {
    size_t nl = log.rfind('\n', start - 1);
    if (nl == std::string::npos) {
      start = 0;
    } else if (++count == lines) {
      start = nl + 1;
      break;
    } else {
      start = nl;
    }
  }
  return log.substr(start);
}

PrivateContainerd::~PrivateContainerd() {
  if (!dir_.empty() && ::testing::Test::HasFailure()) {
    std::string kept = KeepLogForFailedTest(log_path());
    std::cerr << "--- containerd log tail (" << dir_ << ", kept as " << kept << ") ---\n"
              << LogTail() << "--- end of containerd log ---\n";
  }
  StopDaemon(kStopGrace);
  if (!dir_.empty()) internal::TearDownInstance(dir_);
  shared_dirs_.reset();
}

}  // namespace hull::itest
