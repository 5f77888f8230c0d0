// The built shim binary's `start` and `delete`, run the way containerd runs
// them: flags, cwd = bundle, stdin, stdout and stderr read separately. The
// test process is a child subreaper so the servers `start` leaves behind are
// reparented to it and can be stopped and reaped.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/spawn.h"
#include "base/unique_fd.h"
#include "containerd/runc/v1/options.pb.h"
#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/any.pb.h"
#include "shim/cli/sha256.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace hull::shim {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kBinary[] = HULL_SHIM_BINARY;
constexpr char kAddress[] = "/run/hull-test/containerd.sock";  // never dialled
constexpr char kPublishBinary[] = "/usr/bin/containerd";

struct ShimRun {
  int exit_status = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the shim with `args` in `cwd`, feeding `stdin_data`, until it exits
// and both output pipes reach EOF.
ShimRun RunShim(const std::vector<std::string>& args, const fs::path& cwd,
                const std::vector<std::string>& extra_env, const std::string& stdin_data = "") {
  ShimRun run;
  auto in = MakePipe();
  auto out = MakePipe();
  auto err = MakePipe();
  EXPECT_TRUE(in && out && err);
  SpawnOptions options;
  options.argv = {kBinary};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  options.env = env;
  options.cwd = cwd.string();
  options.fds = {{0, in->read.get()}, {1, out->write.get()}, {2, err->write.get()}};
  // containerd starts shims in a new process group.
  options.new_process_group = true;
  auto pid = Spawn(options);
  EXPECT_TRUE(pid.has_value()) << pid.error().ToString();
  if (!pid) return run;
  in->read.reset();
  out->write.reset();
  err->write.reset();
  EXPECT_EQ(::write(in->write.get(), stdin_data.data(), stdin_data.size()),
            static_cast<ssize_t>(stdin_data.size()));
  in->write.reset();

  pollfd fds[2] = {{out->read.get(), POLLIN, 0}, {err->read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_count = 2;
  while (open_count > 0) {
    EXPECT_GT(::poll(fds, 2, 10000), 0) << "shim output timed out";
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  EXPECT_EQ(::waitpid(*pid, &status, 0), *pid);
  run.exit_status = ExitStatusFromWait(status);
  return run;
}

// The inode of the listening unix socket bound to `path`, from /proc/net/unix.
std::string ListenerInode(const std::string& path) {
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, ref, protocol, flags, type, st, inode, name;
    fields >> num >> ref >> protocol >> flags >> type >> st >> inode >> name;
    if (name == path && flags == "00010000") return inode;
  }
  return "";
}

// Every (pid, fd) holding socket inode `inode`.
std::vector<std::pair<pid_t, int>> Holders(const std::string& inode) {
  std::vector<std::pair<pid_t, int>> holders;
  const std::string target = "socket:[" + inode + "]";
  for (const auto& proc : fs::directory_iterator("/proc")) {
    std::string name = proc.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec)) {
      std::error_code link_ec;
      if (fs::read_symlink(fd.path(), link_ec).string() == target) {
        holders.emplace_back(std::stoi(name), std::stoi(fd.path().filename()));
      }
    }
  }
  return holders;
}

std::vector<std::string> Cmdline(pid_t pid) {
  std::string raw = Slurp("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = raw.find('\0', pos);
    args.push_back(raw.substr(pos, end - pos));
    pos = end + 1;
  }
  return args;
}

int OomScoreAdj(pid_t pid) {
  return std::stoi(Slurp("/proc/" + std::to_string(pid) + "/oom_score_adj"));
}

class StartDeleteTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-e2e"};  // root_ lives in it
  void SetUp() override {
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
    ns_ = "hull-e2e-" + std::to_string(::getpid());
    socket_dir_ = root_ / "s";
    // A runtime that always succeeds, so `delete` never touches real runc.
    std::ofstream(root_ / "config.toml") << "runtime = \"/bin/true\"\n";
    env_ = {"HULL_SOCKET_DIR=" + socket_dir_.string(),
            "HULL_CONFIG=" + (root_ / "config.toml").string(),
            "TTRPC_ADDRESS=" + std::string(kAddress) + ".ttrpc",
            "GRPC_ADDRESS=" + std::string(kAddress),
            "NAMESPACE=" + ns_,
            "MAX_SHIM_VERSION=2"};
  }

  void TearDown() override {
    for (pid_t pid : servers_) StopServer(pid);
    fs::remove_all(root_);
  }

  // A bundle as containerd makes it: config.json with `annotations`, rootfs/.
  fs::path MakeBundle(const std::string& id, const std::string& annotations) {
    fs::path bundle = root_ / "bundles" / id;
    fs::create_directories(bundle / "rootfs");
    std::ofstream(bundle / "config.json")
        << R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"annotations":)" << annotations
        << "}";
    return bundle;
  }

  std::vector<std::string> StartArgs(const std::string& id) {
    return {"-namespace",   ns_,   "-address", kAddress, "-publish-binary",
            kPublishBinary, "-id", id,         "start"};
  }

  std::string ExpectedAddress(const std::string& group, const fs::path& dir) {
    return "unix://" + dir.string() + "/" +
           Sha256Hex(std::string(kAddress) + "/" + ns_ + "/" + group);
  }

  // The one process holding the listener at `address`, remembered for
  // TearDown. A confined server's spawner (the default) inherits the
  // listener with the fork and closes it as its first step: until then two
  // processes hold it, so this waits (5 s at most) for the one.
  pid_t ServerFor(const std::string& address) {
    std::string path = address.substr(strlen("unix://"));
    std::string inode = ListenerInode(path);
    EXPECT_FALSE(inode.empty()) << "nothing listens on " << path;
    std::set<pid_t> pids;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    do {
      pids.clear();
      for (auto& [pid, fd] : Holders(inode)) pids.insert(pid);
      if (pids.size() == 1) break;
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(pids.size(), 1u) << "listener held by " << pids.size() << " processes";
    if (pids.empty()) return -1;
    pid_t pid = *pids.begin();
    if (std::find(servers_.begin(), servers_.end(), pid) == servers_.end()) servers_.push_back(pid);
    return pid;
  }

  // SIGTERM, then wait (deadline 5 s) for the exit, SIGKILL as a last resort.
  void StopServer(pid_t pid, int signal = SIGTERM) {
    ::kill(pid, signal);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "server " << pid << " did not exit";
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    servers_.erase(std::remove(servers_.begin(), servers_.end(), pid), servers_.end());
  }

  fs::path root_;
  fs::path socket_dir_;
  std::string ns_;
  std::vector<std::string> env_;
  std::vector<pid_t> servers_;
};

TEST_F(StartDeleteTest, StartSpawnsTheServerWithTheListenerOnFd3) {
  fs::path bundle = MakeBundle("pause1", R"({"io.kubernetes.cri.container-type":"sandbox",
                                           "io.kubernetes.cri.sandbox-id":"pod1"})");
  ShimRun run = RunShim(StartArgs("pause1"), bundle, env_);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const std::string address = ExpectedAddress("pod1", socket_dir_);
  EXPECT_EQ(run.out, address);  // plain, no newline
  EXPECT_EQ(Slurp(bundle / "address"), address);
  EXPECT_TRUE(fs::exists(bundle / "hull-config.toml"));
  struct stat st;
  ASSERT_EQ(::stat(address.substr(7).c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  pid_t server = ServerFor(address);
  ASSERT_GT(server, 0);
  std::string inode = ListenerInode(address.substr(7));
  auto holders = Holders(inode);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].second, 3) << "listener is not on fd 3";
  EXPECT_EQ(Cmdline(server),
            (std::vector<std::string>{kBinary, "-namespace", ns_, "-id", "pause1", "-address",
                                      kAddress, "-publish-binary", kPublishBinary}));
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(server) + "/cwd"), bundle);
  EXPECT_EQ(::getpgid(server), server);  // its own process group
  EXPECT_NE(::getsid(server), server);   // but not a new session
  for (int fd = 0; fd < 3; ++fd) {
    EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(server) + "/fd/" + std::to_string(fd)),
              "/dev/null");
  }
  EXPECT_EQ(OomScoreAdj(server), std::min(OomScoreAdj(::getpid()) + 1, 1000));
}

TEST_F(StartDeleteTest, SecondStartOfThePodReusesTheServer) {
  fs::path pause = MakeBundle("pause2", R"({"io.kubernetes.cri.sandbox-id":"pod2"})");
  ShimRun first = RunShim(StartArgs("pause2"), pause, env_);
  ASSERT_EQ(first.exit_status, 0) << first.err;
  pid_t server = ServerFor(first.out);

  fs::path app = MakeBundle("app2", R"({"io.kubernetes.cri.container-type":"container",
                                       "io.kubernetes.cri.sandbox-id":"pod2"})");
  ShimRun second = RunShim(StartArgs("app2"), app, env_);
  ASSERT_EQ(second.exit_status, 0) << second.err;
  EXPECT_EQ(second.err, "");
  EXPECT_EQ(second.out, first.out);
  EXPECT_EQ(Slurp(app / "address"), first.out);
  EXPECT_EQ(ServerFor(first.out), server);  // still the only holder: nothing spawned
  for (auto& [pid, fd] : Holders(ListenerInode(first.out.substr(7)))) EXPECT_EQ(pid, server);
}

TEST_F(StartDeleteTest, StaleSocketIsReplacedByANewServer) {
  fs::path bundle = MakeBundle("c3", "{}");
  ShimRun first = RunShim(StartArgs("c3"), bundle, env_);
  ASSERT_EQ(first.exit_status, 0) << first.err;
  EXPECT_EQ(first.out, ExpectedAddress("c3", socket_dir_));  // no annotation: grouped by id
  pid_t old_server = ServerFor(first.out);
  StopServer(old_server, SIGKILL);  // dies without removing its socket
  ASSERT_TRUE(fs::exists(first.out.substr(7)));

  ShimRun second = RunShim(StartArgs("c3"), bundle, env_);
  ASSERT_EQ(second.exit_status, 0) << second.err;
  EXPECT_EQ(second.err, "");
  EXPECT_EQ(second.out, first.out);
  EXPECT_NE(ServerFor(second.out), old_server);
}

TEST_F(StartDeleteTest, BootstrapParamsGetABootstrapResult) {
  fs::path bundle = MakeBundle("c4", R"({"io.kubernetes.cri.sandbox-id":"pod4"})");
  containerd::runc::v1::Options runc;
  runc.set_systemd_cgroup(true);
  containerd::runtime::bootstrap::v1::BootstrapParams params;
  params.set_instance_id("c4");
  params.set_namespace_(ns_);
  params.set_log_level(containerd::runtime::bootstrap::v1::LOG_LEVEL_DEBUG);
  params.set_containerd_grpc_address(kAddress);
  params.set_socket_dir((root_ / "s23").string());
  auto* options = params.add_extensions()->mutable_value();
  options->set_type_url("containerd.runc.v1.Options");
  options->set_value(runc.SerializeAsString());

  ShimRun run = RunShim(StartArgs("c4"), bundle, env_, params.SerializeAsString());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  containerd::runtime::bootstrap::v1::BootstrapResult result;
  ASSERT_TRUE(result.ParseFromString(run.out));
  EXPECT_EQ(result.version(), 3);
  EXPECT_EQ(result.protocol(), "ttrpc");
  EXPECT_EQ(result.address(), ExpectedAddress("pod4", root_ / "s23"));
  EXPECT_NE(Slurp(bundle / "hull-config.toml").find("systemd_cgroup = true"), std::string::npos);
  pid_t server = ServerFor(result.address());
  std::vector<std::string> argv = Cmdline(server);
  EXPECT_EQ(argv.back(), "-debug");  // log_level DEBUG
}

// Launched by this test (not a containerd binary) with containerd 1.7+'s
// environment, start prints the plain address; the config's start_output
// forces the JSON bootstrap result instead.
TEST_F(StartDeleteTest, StartOutputInTheConfigForcesJsonVersion3) {
  fs::path bundle = MakeBundle("c7", "{}");
  std::ofstream(root_ / "config.toml") << "runtime = \"/bin/true\"\nstart_output = \"json-v3\"\n";
  ShimRun run = RunShim(StartArgs("c7"), bundle, env_);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const std::string address = ExpectedAddress("c7", socket_dir_);
  EXPECT_EQ(run.out, R"({"version":3,"address":")" + address + R"(","protocol":"ttrpc"})");
  EXPECT_EQ(Slurp(bundle / "address"), address);
  ServerFor(address);
}

TEST_F(StartDeleteTest, LegacyAnyOptionsAreApplied) {
  fs::path bundle = MakeBundle("c5", "{}");
  containerd::runc::v1::Options runc;
  runc.set_binary_name("crun");
  google::protobuf::Any any;
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value(runc.SerializeAsString());
  std::vector<std::string> env = env_;
  env.push_back("SCHED_CORE=1");  // unsupported kernels are fine too
  ShimRun run = RunShim(StartArgs("c5"), bundle, env, any.SerializeAsString());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  ServerFor(run.out);
  EXPECT_NE(Slurp(bundle / "hull-config.toml").find("runtime = 'crun'"), std::string::npos);
}

TEST_F(StartDeleteTest, UnknownFlagsAreWarnedAboutInTheLogFifo) {
  fs::path bundle = MakeBundle("c6", "{}");
  ASSERT_EQ(::mkfifo((bundle / "log").c_str(), 0700), 0);
  UniqueFd reader(::open((bundle / "log").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_TRUE(reader.valid());
  std::vector<std::string> args = StartArgs("c6");
  args.insert(args.begin(), "-future-flag=1");
  ShimRun run = RunShim(args, bundle, env_);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  ServerFor(run.out);
  char buf[4096];
  ssize_t n = ::read(reader.get(), buf, sizeof buf);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(buf, static_cast<size_t>(n)).find("-future-flag=1"), std::string::npos);
}

TEST_F(StartDeleteTest, StartFailuresSayWhyAndLeaveNothing) {
  fs::path bundle = root_ / "bundles" / "badspec";
  fs::create_directories(bundle);
  std::ofstream(bundle / "config.json") << "{not json";
  ShimRun run = RunShim(StartArgs("badspec"), bundle, env_);
  EXPECT_EQ(run.exit_status, 1);
  EXPECT_EQ(run.err.rfind("containerd-shim-hull-v2: ", 0), 0u) << run.err;
  EXPECT_NE(run.err.find("config.json"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(fs::exists(bundle / "address"));

  fs::path other = MakeBundle("badopts", "{}");
  google::protobuf::Any any;
  any.set_type_url("io.containerd.runhcs.v1.Options");
  run = RunShim(StartArgs("badopts"), other, env_, any.SerializeAsString());
  EXPECT_EQ(run.exit_status, 1);
  EXPECT_NE(run.err.find("io.containerd.runhcs.v1.Options"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(socket_dir_ / Sha256Hex(std::string(kAddress) + "/" + ns_ + "/badopts")));
  EXPECT_FALSE(fs::exists(other / "address"));
}

// containerd 2.x's shim sandboxer runs `start` for a sandbox in a bundle
// without config.json: the server is grouped by -id (the sandbox id), and the
// pod's app containers, whose sandbox-id is that id, join it.
TEST_F(StartDeleteTest, ASandboxBundleWithoutSpecGroupsByTheSandboxId) {
  fs::path sandbox = root_ / "bundles" / "sb1";
  fs::create_directories(sandbox);
  ShimRun run = RunShim(StartArgs("sb1"), sandbox, env_);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const std::string address = ExpectedAddress("sb1", socket_dir_);
  EXPECT_EQ(run.out, address);
  EXPECT_EQ(Slurp(sandbox / "address"), address);
  EXPECT_TRUE(fs::exists(sandbox / "hull-config.toml"));
  EXPECT_FALSE(fs::exists(sandbox / "hull-pod-size.json")) << "sized at CreateSandbox, not here";
  pid_t server = ServerFor(address);
  ASSERT_GT(server, 0);

  fs::path app = MakeBundle("app1", R"({"io.kubernetes.cri.container-type":"container",
                                      "io.kubernetes.cri.sandbox-id":"sb1"})");
  ShimRun joined = RunShim(StartArgs("app1"), app, env_);
  ASSERT_EQ(joined.exit_status, 0) << joined.err;
  EXPECT_EQ(joined.out, address);
  EXPECT_EQ(ServerFor(address), server);
  StopServer(server);
}

TEST_F(StartDeleteTest, DeletePrintsOnlyADeleteResponse) {
  fs::path bundle = MakeBundle("d1", "{}");
  ShimRun start = RunShim(StartArgs("d1"), bundle, env_);
  ASSERT_EQ(start.exit_status, 0) << start.err;
  StopServer(ServerFor(start.out));
  std::ofstream(bundle / "init.pid") << "31337";

  auto before = std::chrono::system_clock::now();
  ShimRun run = RunShim({"-namespace", ns_, "-address", kAddress, "-publish-binary", kPublishBinary,
                         "-id", "d1", "-bundle", bundle.string(), "-debug", "delete"},
                        bundle, env_);
  auto after = std::chrono::system_clock::now();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  containerd::task::v2::DeleteResponse response;
  ASSERT_TRUE(response.ParseFromString(run.out));
  EXPECT_EQ(response.pid(), 31337u);
  EXPECT_EQ(response.exit_status(), 137u);
  auto secs = [](auto t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  EXPECT_GE(response.exited_at().seconds(), secs(before));
  EXPECT_LE(response.exited_at().seconds(), secs(after));
}

TEST_F(StartDeleteTest, DeleteOfAGoneBundleSucceeds) {
  fs::path gone = root_ / "bundles" / "gone";
  ShimRun run = RunShim(
      {"-namespace", ns_, "-address", kAddress, "-id", "gone", "-bundle", gone.string(), "delete"},
      root_, env_);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  containerd::task::v2::DeleteResponse response;
  ASSERT_TRUE(response.ParseFromString(run.out));
  EXPECT_EQ(response.pid(), 0u);
  EXPECT_EQ(response.exit_status(), 137u);
}

TEST_F(StartDeleteTest, VersionAndInfo) {
  ShimRun version = RunShim({"-v"}, root_, env_);
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_EQ(version.out.rfind("containerd-shim-hull-v2: version ", 0), 0u) << version.out;
  EXPECT_EQ(version.err, "");
  ShimRun info = RunShim({"-info"}, root_, env_);
  EXPECT_EQ(info.exit_status, 0) << info.err;
  EXPECT_EQ(info.err, "");
  EXPECT_NE(info.out.find("io.containerd.hull.v2"), std::string::npos);
}

}  // namespace
}  // namespace hull::shim
