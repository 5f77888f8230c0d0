// Tests of the integration-test harness itself, and the baseline every hull
// test is compared with: the stock runc shim under a private containerd.
#include "tests/integration/harness/harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
constexpr const char* kPause = "docker.io/hull/pause:latest";

// --- RunCommand / BackgroundCommand: no root needed --------------------------------

TEST(RunCommandTest, CapturesStdoutStderrAndExitCode) {
  CommandResult r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(RunCommandTest, FeedsStdin) {
  std::string big(1 << 20, 'x');  // larger than a pipe buffer
  CommandResult r = RunCommand({"wc", "-c"}, 60s, big);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(std::stoul(r.out), big.size());
}

TEST(RunCommandTest, KillsTheProcessGroupOnTimeout) {
  auto start = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({"sh", "-c", "sleep 30 & sleep 30; echo never"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(WaitUntil([] { return ProcessesMatching("sleep 30 & sleep 30").empty(); }, 5s));
}

TEST(RunCommandTest, ReportsAMissingProgram) {
  CommandResult r = RunCommand({"hull-no-such-program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_FALSE(r.err.empty());
}

TEST(RunCommandTest, PassesExtraEnvironment) {
  CommandResult r =
      RunCommand({"sh", "-c", "echo $HULL_A-$HOME"}, 60s, "", {"HULL_A=1", "HOME=/x"});
  EXPECT_EQ(r.out, "1-/x\n");
}

TEST(BackgroundCommandTest, WaitsForOutputAndStops) {
  auto cmd = BackgroundCommand::Start({"sh", "-c", "echo ready; exec sleep 60"});
  ASSERT_NE(cmd, nullptr);
  EXPECT_TRUE(cmd->WaitForOutput("ready", 10s));
  EXPECT_FALSE(cmd->Wait(50ms).has_value());
  EXPECT_EQ(cmd->Stop(), 128 + SIGTERM);
  EXPECT_FALSE(ProcessAlive(cmd->pid()));
}

TEST(BackgroundCommandTest, SeesExitAndAllOutput) {
  auto cmd = BackgroundCommand::Start({"sh", "-c", "echo a; echo b >&2; exit 4"});
  ASSERT_NE(cmd, nullptr);
  EXPECT_EQ(cmd->Wait(10s), 4);
  EXPECT_EQ(cmd->Output(), "a\n");
  EXPECT_EQ(cmd->ErrorOutput(), "b\n");
  EXPECT_FALSE(cmd->WaitForOutput("never", 10ms));
  EXPECT_EQ(cmd->Stop(), 4);
}

// --- PrivateContainerd: root + containerd -----------------------------------

// The STATUS column of `ctr plugins ls` for one plugin, or "" when not listed.
std::string PluginStatus(const std::string& listing, const std::string& type,
                         const std::string& id) {
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string t, i, platforms, status;
    if (fields >> t >> i >> platforms >> status && t == type && i == id) return status;
  }
  return "";
}

class PrivateContainerdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
  }

  std::unique_ptr<PrivateContainerd> StartContainerd(const ContainerdOptions& options = {}) {
    std::string error;
    auto c = PrivateContainerd::Start(options, &error);
    EXPECT_NE(c, nullptr) << error;
    return c;
  }

  // What a finished instance must not leave: its directory, processes that
  // name it, mounts under it, and the shims' sockets.
  static void ExpectNothingLeft(const std::string& dir, const std::vector<std::string>& sockets) {
    EXPECT_FALSE(fs::exists(dir)) << dir;
    EXPECT_TRUE(ProcessesMatching(dir).empty());
    EXPECT_TRUE(MountsUnder(dir).empty());
    for (const auto& s : sockets) EXPECT_FALSE(fs::exists(s)) << s;
  }

  // The shim sockets named by the bundles' address files.
  static std::vector<std::string> ShimSockets(const PrivateContainerd& c) {
    std::vector<std::string> sockets;
    std::error_code ec;
    for (const auto& e :
         fs::recursive_directory_iterator(c.state() + "/io.containerd.runtime.v2.task", ec)) {
      if (e.path().filename() != "address") continue;
      std::ifstream in(e.path());
      std::string a;
      std::getline(in, a);
      if (a.starts_with("unix://")) sockets.push_back(a.substr(7));
    }
    return sockets;
  }

  // The "PID" column of `ctr task ls` for `id`, or 0.
  static pid_t TaskPid(PrivateContainerd& c, const std::string& id, std::string* status = nullptr) {
    CommandResult r = c.Ctr({"task", "ls"});
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string task, pid, st;
      if (fields >> task >> pid >> st && task == id) {
        if (status != nullptr) *status = st;
        return static_cast<pid_t>(std::stol(pid));
      }
    }
    return 0;
  }
};

TEST_F(PrivateContainerdTest, StartsAndStopsLeavingNothingBehind) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  const std::string dir = c->dir();
  const pid_t pid = c->pid();
  EXPECT_TRUE(ProcessAlive(pid));
  EXPECT_TRUE(fs::is_socket(c->address()));
  EXPECT_TRUE(fs::is_socket(c->ttrpc_address()));
  CommandResult version = c->Ctr({"version"});
  EXPECT_TRUE(version.ok()) << version.Describe();
  CommandResult plugins = c->Ctr({"plugins", "ls"});
  EXPECT_EQ(PluginStatus(plugins.out, "io.containerd.grpc.v1", "cri"), "") << plugins.out;
  EXPECT_EQ(PluginStatus(plugins.out, "io.containerd.snapshotter.v1", c->snapshotter()), "ok")
      << plugins.out;

  c.reset();
  EXPECT_FALSE(ProcessAlive(pid));
  ExpectNothingLeft(dir, {});
}

// A daemon that cannot start fails Start() at once, with its log in the error.
TEST_F(PrivateContainerdTest, StartFailureReportsTheLog) {
  auto dirs_before = RunCommand({"sh", "-c", "ls -d /tmp/hull-itest-* 2>/dev/null"}).out;
  auto start = std::chrono::steady_clock::now();
  std::string error;
  auto c = PrivateContainerd::Start({.extra_config = "[grpc]\n  address = \"twice\"\n"}, &error);
  EXPECT_EQ(c, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_NE(error.find("exited"), std::string::npos) << error;
  EXPECT_NE(error.find("failed to load TOML"), std::string::npos) << "has the log tail: " << error;
  EXPECT_EQ(RunCommand({"sh", "-c", "ls -d /tmp/hull-itest-* 2>/dev/null"}).out, dirs_before);
}

TEST_F(PrivateContainerdTest, ImportsImages) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_TRUE(c->ImportImages("default", &error)) << error;
  CommandResult r = c->Ctr({"images", "ls", "-q"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find(kBusybox), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kPause), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registry.k8s.io/pause:3.6"), std::string::npos) << r.out;
}

// The baseline: the stock Go shim runs the busybox image.
TEST_F(PrivateContainerdTest, RuncShimRunsBusybox) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_TRUE(c->ImportImages("default", &error)) << error;

  CommandResult r = c->Ctr({"run", "--rm", "--runtime", "io.containerd.runc.v2", kBusybox, "t1",
                            "sh", "-c", "echo hi from $(cat /proc/1/comm); id -u; exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.Describe();
  EXPECT_EQ(r.out, "hi from sh\n0\n");

  CommandResult containers = c->Ctr({"containers", "ls", "-q"});
  EXPECT_EQ(containers.out, "");
  const std::string dir = c->dir();
  c.reset();
  ExpectNothingLeft(dir, {});
}

// The pause image's program exits 0 on SIGTERM, as the real one does.
TEST_F(PrivateContainerdTest, PauseImageExitsZeroOnSigterm) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_TRUE(c->ImportImages("default", &error)) << error;

  auto run = c->CtrBackground({"run", "--rm", kPause, "p1"});
  ASSERT_NE(run, nullptr);
  std::string status;
  ASSERT_TRUE(
      WaitUntil([&] { return TaskPid(*c, "p1", &status) > 0 && status == "RUNNING"; }, 30s));
  CommandResult kill = c->Ctr({"task", "kill", "-s", "SIGTERM", "p1"});
  ASSERT_TRUE(kill.ok()) << kill.Describe();
  EXPECT_EQ(run->Wait(30s), 0) << run->ErrorOutput();
}

// Teardown with a container still running: the shim, the container and the
// shim's socket go too.
TEST_F(PrivateContainerdTest, TeardownKillsRunningContainersAndShims) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_TRUE(c->ImportImages("default", &error)) << error;
  CommandResult r = c->Ctr({"run", "-d", kBusybox, "t1", "sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();

  const pid_t container = TaskPid(*c, "t1");
  ASSERT_GT(container, 0);
  const std::vector<pid_t> shims = ProcessesMatching(c->address());
  ASSERT_EQ(shims.size(), 1u);
  const std::vector<std::string> sockets = ShimSockets(*c);
  ASSERT_EQ(sockets.size(), 1u);
  EXPECT_TRUE(fs::is_socket(sockets[0])) << sockets[0];
  EXPECT_FALSE(MountsUnder(c->state()).empty());
  const std::vector<std::string> fifos = NamedPipesOpenIn(shims);
  EXPECT_FALSE(fifos.empty()) << "ctr run -d gives the shim stdio FIFOs";
  for (const auto& fifo : fifos) EXPECT_TRUE(fifo.starts_with(c->dir() + "/")) << fifo;

  const std::string dir = c->dir();
  c.reset();
  EXPECT_FALSE(ProcessAlive(container));
  EXPECT_FALSE(ProcessAlive(shims[0]));
  ExpectNothingLeft(dir, sockets);
  for (const auto& fifo : fifos) EXPECT_FALSE(fs::exists(fifo)) << fifo;
}

// containerd killed -9 and restarted finds its running task through the shim.
TEST_F(PrivateContainerdTest, RestartReconnectsToRunningShim) {
  auto c = StartContainerd();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_TRUE(c->ImportImages("default", &error)) << error;
  ASSERT_TRUE(c->Ctr({"run", "-d", kBusybox, "t1", "sleep", "1000"}).ok());
  const pid_t container = TaskPid(*c, "t1");
  ASSERT_GT(container, 0);
  const pid_t old_daemon = c->pid();

  ASSERT_TRUE(c->Restart(&error)) << error;
  EXPECT_NE(c->pid(), old_daemon);
  EXPECT_FALSE(ProcessAlive(old_daemon));
  std::string status;
  EXPECT_EQ(TaskPid(*c, "t1", &status), container);
  EXPECT_EQ(status, "RUNNING");
  CommandResult exec = c->Ctr({"task", "exec", "--exec-id", "e1", "t1", "echo", "after restart"});
  EXPECT_TRUE(exec.ok()) << exec.Describe();
  EXPECT_EQ(exec.out, "after restart\n");

  ASSERT_TRUE(c->Ctr({"task", "kill", "-s", "SIGKILL", "t1"}).ok());
  EXPECT_TRUE(
      WaitUntil([&] { return TaskPid(*c, "t1", &status) > 0 && status == "STOPPED"; }, 30s));
  CommandResult rm = c->Ctr({"task", "delete", "t1"});
  EXPECT_TRUE(rm.ok()) << rm.Describe();
  EXPECT_TRUE(c->Ctr({"containers", "delete", "t1"}).ok());
  EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(c->address()).empty(); }, 10s));
}

// With CRI: the plugin loads with the harness's CNI and runtime config.
TEST_F(PrivateContainerdTest, CriPluginLoads) {
  auto c = StartContainerd({.enable_cri = true});
  ASSERT_NE(c, nullptr);
  CommandResult plugins = c->Ctr({"plugins", "ls"});
  ASSERT_TRUE(plugins.ok()) << plugins.Describe();
  EXPECT_EQ(PluginStatus(plugins.out, "io.containerd.grpc.v1", "cri"), "ok") << plugins.out;
  std::string error;
  ASSERT_TRUE(c->ImportImages("k8s.io", &error)) << error;
  EXPECT_TRUE(fs::exists(c->dir() + "/cni/net.d/10-" + c->cni_network() + ".conflist"));
  // The CRI plugin logs its whole config when it starts.
  EXPECT_NE(c->LogTail(1000).find("io.containerd.hull.v2"), std::string::npos);
}

}  // namespace
}  // namespace hull::itest
