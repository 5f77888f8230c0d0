// hull under a real containerd 1.6, driven by ctr: the shim issue's proof.
// Each test starts a private containerd with hull on its PATH, imports the
// locally built busybox image and runs containers with
// `--runtime io.containerd.hull.v2`, once with runc and once with crun.
// The host's cgroups may be v1 (this machine) or v2 (tools/vmhost's guest,
// ctest `containerd_vm`): what a test reads from cgroupfs follows the host.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/event_loop.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/empty.pb.h"
#include "tests/integration/harness/harness.h"
#include "ttrpc/client.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
constexpr const char* kHull = "io.containerd.hull.v2";

// HULL_VM_TEST_REQUIRE=1 (the ctest that runs this binary in tools/vmhost's
// guest): a skip there means nothing was tested, so it fails instead.
bool Required() {
  const char* v = std::getenv("HULL_VM_TEST_REQUIRE");
  return v != nullptr && std::string(v) == "1";
}

bool CgroupV2() {
  struct statfs st;
  return ::statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == 0x63677270;  // CGROUP2_SUPER_MAGIC
}

// The directory of `pid`'s cgroup that has `controller`'s files: the v2
// cgroup, or the v1 hierarchy named after the controller. Empty if unknown.
std::string CgroupDir(pid_t pid, const std::string& controller) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (CgroupV2() && line.starts_with("0::")) return "/sys/fs/cgroup" + line.substr(3);
    if (!CgroupV2() && line.find(":" + controller + ":") != std::string::npos) {
      return "/sys/fs/cgroup/" + controller + line.substr(line.rfind(':') + 1);
    }
  }
  return "";
}

std::string ReadWord(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

// Runs every test once per runtime hull drives.
class HullCtrTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string reason = SkipReason();
    if (reason.empty() && HullShimDir().empty()) reason = "containerd-shim-hull-v2 is not built";
    if (!reason.empty()) {
      if (Required()) FAIL() << "HULL_VM_TEST_REQUIRE=1 but " << reason;
      GTEST_SKIP() << reason;
    }
    std::string error;
    containerd_ = PrivateContainerd::Start({}, &error);
    ASSERT_NE(containerd_, nullptr) << error;
    ASSERT_TRUE(containerd_->ImportImages("default", &error)) << error;
    config_ = containerd_->dir() + "/hull-" + GetParam() + ".toml";
    std::ofstream(config_) << ConfigText();
    if (IsRunsc()) {
      // containerd hands its temp dir to the shim as TMPDIR, and runsc's
      // sandbox, which has dropped its capabilities, mounts its chroot there:
      // it must be able to reach it (mkdtemp made the test's directory 0700).
      fs::permissions(containerd_->dir(),
                      fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
      fs::permissions(containerd_->dir() + "/tmp",
                      fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    }
  }

  bool IsRunsc() const { return GetParam() == "runsc"; }

  // The runtime's config file. runsc keeps its state under the test's
  // directory (so nothing outlives the test) and runs without a network:
  // ctr gives containers no CNI network to set up.
  std::string ConfigText() const {
    std::string text = "runtime = \"" + GetParam() + "\"\n";
    if (IsRunsc()) {
      text += "root = \"" + RunscRoot() + "\"\n[runsc_config]\nnetwork = \"none\"\n";
    }
    return text;
  }
  std::string RunscRoot() const { return containerd_->dir() + "/runsc"; }

  void TearDown() override {
    if (containerd_ != nullptr && HasFailure()) {
      std::cerr << "containerd log tail:\n" << containerd_->LogTail(60) << "\n";
    }
  }

  // ctr run with hull and this test's runtime; `args` go before the image.
  CommandResult Run(const std::vector<std::string>& flags, const std::string& id,
                    const std::vector<std::string>& command,
                    std::chrono::milliseconds timeout = 60s) {
    std::vector<std::string> args = {"run", "--runtime", kHull, "--runtime-config-path", config_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(kBusybox);
    args.push_back(id);
    args.insert(args.end(), command.begin(), command.end());
    return containerd_->Ctr(args, "default", timeout);
  }

  CommandResult Ctr(const std::vector<std::string>& args) { return containerd_->Ctr(args); }

  // "PID STATUS" of a task from `ctr task ls`; pid 0 when it is not listed.
  std::pair<pid_t, std::string> Task(const std::string& id) {
    CommandResult r = Ctr({"task", "ls"});
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string task, pid, status;
      if (fields >> task >> pid >> status && task == id) return {std::stoi(pid), status};
    }
    return {0, ""};
  }

  bool WaitForStatus(const std::string& id, const std::string& status) {
    return WaitUntil([&] { return Task(id).second == status; }, 20s);
  }

  std::string Bundle(const std::string& id) const {
    return containerd_->state() + "/io.containerd.runtime.v2.task/default/" + id;
  }

  // This test's shims: other engineers' tests run their own containerd and
  // hull shims on the same host at the same time, and a shim's child between
  // fork and exec still has the shim's command line.
  std::vector<pid_t> Shims() const {
    std::vector<pid_t> matched =
        ProcessesMatching("-address " + containerd_->address() + " -publish-binary");
    std::vector<pid_t> shims;
    for (pid_t p : matched) {
      std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), {});
      // "pid (comm) state ppid ...": comm may hold spaces, so after the last ')'.
      std::istringstream fields(text.substr(text.rfind(')') + 1));
      std::string state;
      pid_t parent = 0;
      fields >> state >> parent;
      if (std::find(matched.begin(), matched.end(), parent) == matched.end()) shims.push_back(p);
    }
    return shims;
  }

  // pid, parent, executable and command line of each of Shims(): for messages.
  std::string DescribeShims() const {
    std::string out;
    for (pid_t p : Shims()) {
      std::string dir = "/proc/" + std::to_string(p);
      std::ifstream stat(dir + "/stat"), cmdline(dir + "/cmdline");
      std::string stat_text((std::istreambuf_iterator<char>(stat)), {});
      std::string cmd((std::istreambuf_iterator<char>(cmdline)), {});
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      std::error_code ec;
      out += "\n  " + stat_text.substr(0, 60) +
             " exe=" + fs::read_symlink(dir + "/exe", ec).string() + " cmd=" + cmd;
    }
    return out;
  }

  // Calls the shim of `id` directly, as containerd would.
  template <typename Resp, typename Req>
  Result<Resp> CallShim(const std::string& id, const std::string& method, const Req& request) {
    std::ifstream in(Bundle(id) + "/address");
    std::string address;
    std::getline(in, address);
    auto loop = EventLoop::Create();
    if (!loop) return loop.error();
    auto client = ttrpc::Client::Connect(**loop, address);
    if (!client) return client.error();
    ttrpc::CallOptions options;
    options.deadline = (*loop)->Now() + 10s;
    options.metadata.emplace_back("containerd-namespace-ttrpc", "default");
    return (*client)->CallUnarySync<Resp>("containerd.task.v2.Task", method, request, options);
  }

  // `ctr events`, once it is subscribed: it listens only some time after it
  // starts, so a probe container's exit must have shown up first.
  std::unique_ptr<BackgroundCommand> StartEvents() {
    auto events = containerd_->CtrBackground({"events"});
    if (events == nullptr) return nullptr;
    for (int i = 0; i < 20; ++i) {
      std::string probe = "probe" + std::to_string(i);
      Run({"--rm"}, probe, {"true"});
      if (events->WaitForOutput("\"container_id\":\"" + probe + "\"", 1s)) return events;
    }
    return nullptr;
  }

  void RemoveContainer(const std::string& id) {
    Ctr({"task", "kill", "-s", "SIGKILL", id});
    WaitForStatus(id, "STOPPED");
    Ctr({"task", "rm", id});
    Ctr({"container", "rm", id});
  }

  std::unique_ptr<PrivateContainerd> containerd_;
  std::string config_;
};

TEST_P(HullCtrTest, RunRmPrintsOutput) {
  CommandResult r =
      Run({"--rm"}, "t1", {"sh", "-c", "echo hello from $(cat /proc/1/comm); exit 0"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "hello from sh\n");
  // runsc's shim outlives `ctr run --rm` by the sandbox's teardown.
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
}

TEST_P(HullCtrTest, ExitCodeReachesCtr) {
  CommandResult r = Run({"--rm"}, "t1", {"sh", "-c", "exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.Describe();
}

TEST_P(HullCtrTest, DetachedTaskServesExecKillPsPauseResumeMetrics) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  auto [pid, status] = Task("t1");
  EXPECT_GT(pid, 0);
  EXPECT_EQ(status, "RUNNING");

  // exec without a terminal, with output and exit code
  r = Ctr({"task", "exec", "--exec-id", "e1", "t1", "sh", "-c", "echo exec-out; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, "exec-out\n");

  // exec with a terminal: ctr needs one on its own stdin, so run it under
  // script(1). The process's stdin and stdout are the terminal, which takes
  // termios and window-size ioctls. ctr pushes its own terminal's size
  // (ResizePty) once the exec has started, racing the process's stty: both
  // set 30x100, so either order reads back 30 100. runsc hands the sandbox
  // the host pty, which gVisor shows as /proc/self/fd/0 -> host:[N], not
  // /dev/pts/N: `tty` names it only with runc and crun (docs/backends.md).
  {
    std::string cmd = "stty rows 30 cols 100; ctr --address " + containerd_->address() +
                      " -n default task exec -t --exec-id e2 t1 sh -c "
                      "'[ -t 0 ] && [ -t 1 ] && echo on-a-terminal; stty rows 30 cols 100; "
                      "stty size; tty; exit 0'";
    r = RunCommand({"script", "-qec", cmd, "/dev/null"}, 60s);
    EXPECT_TRUE(r.ok()) << r.Describe();
    EXPECT_NE(r.out.find("on-a-terminal"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("30 100"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(IsRunsc() ? "not a tty" : "/dev/pts/"), std::string::npos) << r.out;
  }

  // pause / resume; on cgroup v2 the runtime freezes through cgroup.freeze.
  // runsc stops the sandbox's tasks in its own kernel and leaves the cgroup
  // alone: its own state says paused.
  auto runsc_status = [&] {
    CommandResult state = RunCommand({"runsc", "--root", RunscRoot() + "/default", "state", "t1"});
    nlohmann::json doc = nlohmann::json::parse(state.out, nullptr, false);
    return doc.is_object() && doc.contains("status") ? doc["status"].dump() : state.Describe();
  };
  std::string freezer = CgroupDir(pid, "freezer");
  ASSERT_FALSE(freezer.empty());
  r = Ctr({"task", "pause", "t1"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Task("t1").second, "PAUSED");
  if (IsRunsc()) {
    EXPECT_EQ(runsc_status(), "\"paused\"");
  } else if (CgroupV2()) {
    EXPECT_EQ(ReadWord(freezer + "/cgroup.freeze"), "1");
    std::ifstream events(freezer + "/cgroup.events");
    std::string text((std::istreambuf_iterator<char>(events)), {});
    EXPECT_NE(text.find("frozen 1"), std::string::npos) << text;
  } else {
    EXPECT_EQ(ReadWord(freezer + "/freezer.state"), "FROZEN");
  }
  r = Ctr({"task", "resume", "t1"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Task("t1").second, "RUNNING");
  if (IsRunsc()) {
    EXPECT_EQ(runsc_status(), "\"running\"");
  } else {
    EXPECT_EQ(ReadWord(freezer + (CgroupV2() ? "/cgroup.freeze" : "/freezer.state")),
              CgroupV2() ? "0" : "THAWED");
  }

  // metrics: io.containerd.cgroups.v1.Metrics or v2.Metrics, as the host has
  r = Ctr({"task", "metrics", "t1"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  if (CgroupV2()) {
    for (const char* row : {"pids.current", "cpu.usage_usec", "memory.usage"}) {
      EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
    }
  } else {
    EXPECT_NE(r.out.find("memory.usage_in_bytes"), std::string::npos) << r.out;
  }
  r = Ctr({"task", "metrics", "--format", "json", "t1"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  nlohmann::json metrics = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(metrics.is_object()) << r.out;
  if (CgroupV2()) {
    // v2.Metrics: pids.current counts the sleep, cpu.usage_usec, memory.usage
    EXPECT_GE(metrics["pids"].value("current", 0), 1) << r.out;
    EXPECT_TRUE(metrics["cpu"].contains("usage_usec")) << r.out;
    EXPECT_GT(metrics["memory"].value("usage", 0), 0) << r.out;
  } else {
    EXPECT_GT(metrics["memory"]["usage"].value("usage", 0), 0) << r.out;
  }

  // kill: the exit reaches containerd
  r = Ctr({"task", "kill", "-s", "SIGKILL", "t1"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "STOPPED"));
  // ctr reports a non-zero exit status of the deleted task as a warning.
  r = Ctr({"task", "rm", "t1"});
  EXPECT_NE(r.err.find("exit code 137"), std::string::npos) << r.Describe();
  EXPECT_TRUE(Ctr({"container", "rm", "t1"}).ok());
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
}

TEST_P(HullCtrTest, UpdateChangesTheCgroupLimit) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  pid_t pid = Task("t1").first;
  ASSERT_GT(pid, 0);
  containerd::task::v2::UpdateTaskRequest update;
  update.set_id("t1");
  update.mutable_resources()->set_type_url(
      "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources");
  update.mutable_resources()->set_value(R"({"pids":{"limit":42}})");
  auto done = CallShim<google::protobuf::Empty>("t1", "Update", update);
  if (IsRunsc()) {
    // runsc has no update command: Unimplemented, and the task runs on.
    ASSERT_FALSE(done.has_value());
    EXPECT_EQ(done.error().code(), Code::kUnimplemented) << done.error().ToString();
    EXPECT_EQ(Task("t1").second, "RUNNING");
    return RemoveContainer("t1");
  }
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  // The pids cgroup of the init now says 42.
  std::string dir = CgroupDir(pid, "pids");
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(ReadWord(dir + "/pids.max"), "42");
  RemoveContainer("t1");
}

TEST_P(HullCtrTest, CheckpointWorksOrSaysWhyNot) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  bool criu_works = RunCommand({"criu", "check"}).ok();
  CommandResult r = Ctr({"task", "checkpoint", "t1"});
  if (IsRunsc()) {
    // hull does not offer runsc's experimental checkpoint: Unimplemented.
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.err.find("not implemented"), std::string::npos) << r.Describe();
    // ctr pauses the task around the checkpoint and resumes it after.
    EXPECT_EQ(Task("t1").second, "RUNNING");
    EXPECT_EQ(Ctr({"task", "exec", "--exec-id", "after", "t1", "echo", "alive"}).out, "alive\n");
    return RemoveContainer("t1");
  }
  if (criu_works) {
    EXPECT_TRUE(r.ok()) << r.Describe();
  } else {
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.err.find("failed precondition"), std::string::npos) << r.Describe();
    EXPECT_EQ(Task("t1").second, "RUNNING");
  }
  RemoveContainer("t1");
}

TEST_P(HullCtrTest, ContainersOfOneSandboxShareOneShim) {
  std::string group = "io.kubernetes.cri.sandbox-id=pod1";
  ASSERT_TRUE(Run({"-d", "--annotation", group}, "a", {"sleep", "1000"}).ok());
  ASSERT_TRUE(Run({"-d", "--annotation", group}, "b", {"sleep", "1000"}).ok());
  EXPECT_EQ(Shims().size(), 1u) << DescribeShims();
  std::ifstream a(Bundle("a") + "/address"), b(Bundle("b") + "/address");
  std::string address_a, address_b;
  std::getline(a, address_a);
  std::getline(b, address_b);
  EXPECT_EQ(address_a, address_b);
  // Both are served: exec in each.
  EXPECT_EQ(Ctr({"task", "exec", "--exec-id", "x", "a", "echo", "in-a"}).out, "in-a\n");
  EXPECT_EQ(Ctr({"task", "exec", "--exec-id", "x", "b", "echo", "in-b"}).out, "in-b\n");
  // Deleting one keeps the shim for the other.
  RemoveContainer("a");
  EXPECT_EQ(Shims().size(), 1u);
  EXPECT_EQ(Task("b").second, "RUNNING");
  RemoveContainer("b");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
}

TEST_P(HullCtrTest, ContainersKeepRunningAcrossAContainerdRestart) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  pid_t pid = Task("t1").first;
  auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  std::string error;
  ASSERT_TRUE(containerd_->Restart(&error)) << error;
  // containerd reconnected through <bundle>/address to the same shim.
  EXPECT_EQ(Shims(), shims);
  EXPECT_EQ(Task("t1"), std::make_pair(pid, std::string("RUNNING")));
  EXPECT_EQ(Ctr({"task", "exec", "--exec-id", "x", "t1", "echo", "after"}).out, "after\n");
  // A later exit still reaches containerd.
  ASSERT_TRUE(Ctr({"task", "kill", "-s", "SIGKILL", "t1"}).ok());
  EXPECT_TRUE(WaitForStatus("t1", "STOPPED"));
  EXPECT_NE(Ctr({"task", "rm", "t1"}).err.find("exit code 137"), std::string::npos);
  Ctr({"container", "rm", "t1"});
}

TEST_P(HullCtrTest, KilledShimIsReportedAs137AndCleanedUp) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  pid_t pid = Task("t1").first;
  auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  std::ifstream in(Bundle("t1") + "/address");
  std::string address;
  std::getline(in, address);
  auto events = StartEvents();
  ASSERT_NE(events, nullptr);
  ASSERT_EQ(::kill(shims[0], SIGKILL), 0);
  // containerd runs `containerd-shim-hull-v2 delete`, which kills the
  // container and unmounts its rootfs, and reports the exit status it prints.
  EXPECT_TRUE(events->WaitForOutput("\"exit_status\":137", 30s)) << events->Output();
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid) && Shims().empty(); }, 20s));
  events->Stop();
  Ctr({"task", "rm", "t1"});
  Ctr({"container", "rm", "t1"});
  for (const auto& m : MountsUnder(containerd_->dir())) ADD_FAILURE() << "left mounted: " << m;
  EXPECT_FALSE(fs::exists(address.substr(7))) << address;
  for (pid_t p : Shims()) {
    std::ifstream cmdline("/proc/" + std::to_string(p) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), {});
    std::replace(text.begin(), text.end(), '\0', ' ');
    ADD_FAILURE() << "shim left: " << p << " " << text;
  }
}

TEST_P(HullCtrTest, FiftyContainersLeakNothing) {
  pid_t daemon = containerd_->pid();
  // One warm-up run so containerd's lazily opened descriptors are counted.
  ASSERT_TRUE(Run({"--rm"}, "warm", {"true"}).ok());
  size_t fds_before = OpenFds(daemon).size();
  auto sockets_before = SocketsUnder("/run/containerd/s");
  for (int i = 0; i < 50; ++i) {
    CommandResult r = Run({"--rm"}, "loop" + std::to_string(i), {"true"});
    ASSERT_TRUE(r.ok()) << i << ": " << r.Describe();
  }
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(MountsUnder(containerd_->state()).empty());
  EXPECT_EQ(SocketsUnder("/run/containerd/s"), sockets_before);
  EXPECT_LE(OpenFds(daemon).size(), fds_before + 2);
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(containerd_->state() + "/io.containerd.runtime.v2.task/default", ec));
}

// ---- bad input ----

TEST_P(HullCtrTest, UnknownRuntimeBinaryIsAClearErrorAndLeaksNothing) {
  std::ofstream(config_) << "runtime = \"/nonexistent/hull-no-such-runtime\"\n";
  CommandResult r = Run({"--rm"}, "t1", {"true"});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err.find("hull-no-such-runtime"), std::string::npos) << r.Describe();
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(MountsUnder(containerd_->state()).empty());
}

TEST_P(HullCtrTest, RuntimeFailureCarriesTheRuntimesOwnMessage) {
  CommandResult r = Run({"--rm"}, "t1", {"/no/such/program"});
  EXPECT_FALSE(r.ok());
  // Each runtime names the missing executable in its own words (runc and
  // crun at create, runsc at start).
  EXPECT_NE(r.err.find("/no/such/program"), std::string::npos) << r.Describe();
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(MountsUnder(containerd_->state()).empty());
  // A failed start leaves a stopped task, which ctr's --rm deletes with the
  // container: nothing of t1 is left in containerd or in the runtime.
  EXPECT_EQ(Task("t1").first, 0);
  EXPECT_EQ(Ctr({"container", "ls", "-q"}).out, "");
  if (IsRunsc()) {
    EXPECT_TRUE(ProcessesMatching("runsc-sandbox --root=" + RunscRoot()).empty());
    CommandResult list =
        RunCommand({"runsc", "--root", RunscRoot() + "/default", "list", "--format", "json"});
    EXPECT_TRUE(list.out.find("\"t1\"") == std::string::npos) << list.Describe();
  }
}

TEST_P(HullCtrTest, UnknownConfigKeyIsInvalidArgument) {
  std::ofstream(config_) << "runtime = \"" << GetParam() << "\"\nno_such_key = 1\n";
  CommandResult r = Run({"--rm"}, "t1", {"true"});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err.find("no_such_key"), std::string::npos) << r.Describe();
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
}

TEST_P(HullCtrTest, BadStdioUriIsInvalidArgument) {
  CommandResult r = Run({"--rm", "--log-uri", "bogus://x"}, "t1", {"true"});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err.find("invalid argument"), std::string::npos) << r.Describe();
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(MountsUnder(containerd_->state()).empty());
}

TEST_P(HullCtrTest, DuplicateExecIdIsAlreadyExists) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  CommandResult first = Ctr({"task", "exec", "-d", "--exec-id", "dup", "t1", "sleep", "100"});
  ASSERT_TRUE(first.ok()) << first.Describe();
  CommandResult second = Ctr({"task", "exec", "-d", "--exec-id", "dup", "t1", "sleep", "100"});
  EXPECT_FALSE(second.ok());
  EXPECT_NE(second.err.find("already exists"), std::string::npos) << second.Describe();
  RemoveContainer("t1");
}

TEST_P(HullCtrTest, CallsInTheWrongStateAreFailedPrecondition) {
  ASSERT_TRUE(Run({"-d"}, "t1", {"sleep", "1000"}).ok());
  CommandResult r = Ctr({"task", "resume", "t1"});  // running, not paused
  EXPECT_NE(r.err.find("failed precondition"), std::string::npos) << r.Describe();
  ASSERT_TRUE(Ctr({"task", "kill", "-s", "SIGKILL", "t1"}).ok());
  ASSERT_TRUE(WaitForStatus("t1", "STOPPED"));
  r = Ctr({"task", "pause", "t1"});
  EXPECT_NE(r.err.find("failed precondition"), std::string::npos) << r.Describe();
  r = Ctr({"task", "exec", "--exec-id", "late", "t1", "true"});
  EXPECT_NE(r.err.find("failed precondition"), std::string::npos) << r.Describe();
  r = Ctr({"task", "kill", "t1"});
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.Describe();
  Ctr({"task", "rm", "t1"});
  Ctr({"container", "rm", "t1"});
}

TEST_P(HullCtrTest, StdinReachesTheContainerAndCloseIOEndsIt) {
  // ctr copies its stdin into the container and calls CloseIO at EOF; cat
  // then sees EOF and exits. ctr can only call CloseIO once the task exists
  // (an EOF before that is lost, with any shim), hence the input only once
  // the task runs.
  std::string ctr = "ctr --address " + containerd_->address() + " -n default";
  std::string cmd = "(until " + ctr + " task ls | grep -q '^t2 .*RUNNING'; do sleep 0.2; done; " +
                    "printf 'line one\\nline two\\n') | ctr --address " + containerd_->address() +
                    " -n default run --rm --fifo-dir " + containerd_->dir() + "/fifo --runtime " +
                    kHull + " --runtime-config-path " + config_ + " " + kBusybox + " t2 cat";
  // A deadline, not a timing assertion: under TCG (containerd_vm) the run takes 30-40 s.
  CommandResult r = RunCommand({"sh", "-c", cmd}, 120s);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "line one\nline two\n");
}

TEST_P(HullCtrTest, LogUriFileAndBinary) {
  std::string log = containerd_->dir() + "/logs/t1.log";
  CommandResult r = Run({"--rm", "--log-uri", "file://" + log}, "t1",
                        {"sh", "-c", "echo to-stdout; echo to-stderr >&2"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("to-stdout\n"), std::string::npos) << text;
  EXPECT_NE(text.find("to-stderr\n"), std::string::npos) << text;

  // A logging binary gets stdout on fd 3 and stderr on fd 4 and signals
  // readiness on fd 5; its environment names the container.
  std::string logger = containerd_->dir() + "/logger.sh";
  std::string out = containerd_->dir() + "/binary.log";
  std::ofstream(logger) << "#!/bin/sh\nexec 5>&-\n(echo \"id=$CONTAINER_ID "
                           "ns=$CONTAINER_NAMESPACE\"; cat <&3; cat <&4) > "
                        << out << "\n";
  fs::permissions(logger, fs::perms::owner_all);
  r = Run({"--rm", "--log-uri", "binary://" + logger}, "t2", {"echo", "via-binary"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::ifstream f(out);
        std::string t((std::istreambuf_iterator<char>(f)), {});
        return t.find("via-binary") != std::string::npos;
      },
      10s));
  std::ifstream f(out);
  std::string t((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(t.find("id=t2 ns=default"), std::string::npos) << t;
}

// Parses `ctr events` lines "<time> <ns> <topic> <json>" into topic + json.
std::vector<std::pair<std::string, std::string>> ParseEvents(const std::string& output) {
  std::vector<std::pair<std::string, std::string>> events;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    auto topic = line.find(" /tasks/");
    if (topic == std::string::npos) continue;
    auto space = line.find(' ', topic + 1);
    events.emplace_back(line.substr(topic + 1, space - topic - 1),
                        space == std::string::npos ? "" : line.substr(space + 1));
  }
  return events;
}

TEST_P(HullCtrTest, EventsArriveInOrder) {
  auto events = StartEvents();
  ASSERT_NE(events, nullptr);
  // The init exits while an exec is still running: the exec dies with the
  // pid namespace, and its exit must be published before the init's. The
  // init waits for the exec's sleep to appear, so no timing is assumed.
  ASSERT_TRUE(
      Run({"-d"}, "t1", {"sh", "-c", "until pidof sleep >/dev/null; do usleep 50000; done"}).ok());
  ASSERT_TRUE(Ctr({"task", "exec", "-d", "--exec-id", "e1", "t1", "sleep", "100"}).ok());
  ASSERT_TRUE(WaitForStatus("t1", "STOPPED"));
  ASSERT_TRUE(Ctr({"task", "rm", "t1"}).ok());
  ASSERT_TRUE(events->WaitForOutput("/tasks/delete", 20s)) << events->Output();
  events->Stop();
  std::vector<std::string> order;
  for (auto& [topic, json] : ParseEvents(events->Output())) {
    if (json.find("\"container_id\":\"t1\"") == std::string::npos) continue;
    if (topic == "/tasks/exit") {
      order.push_back(json.find("\"id\":\"e1\"") != std::string::npos ? "exit-e1" : "exit-t1");
    } else {
      order.push_back(topic);
    }
  }
  std::vector<std::string> expected = {"/tasks/create",       "/tasks/start", "/tasks/exec-added",
                                       "/tasks/exec-started", "exit-e1",      "exit-t1",
                                       "/tasks/delete"};
  EXPECT_EQ(order, expected) << events->Output();
  Ctr({"container", "rm", "t1"});
}

TEST_P(HullCtrTest, OomKillIsPublished) {
  if (IsRunsc()) {
    GTEST_SKIP() << "runsc reports no OOM kills (docs/backends.md): the sentry accounts memory "
                    "itself and the host kills the whole sandbox";
  }
  auto events = StartEvents();
  ASSERT_NE(events, nullptr);
  // 32 MiB limit; dd asks for a 64 MiB buffer and fills it.
  CommandResult r = Run({"--rm", "--memory-limit", "33554432"}, "t1",
                        {"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"});
  EXPECT_EQ(r.exit_code, 137) << r.Describe();
  // TaskOOM comes before the TaskExit of the killed init.
  EXPECT_TRUE(events->WaitForOutput("/tasks/delete {\"container_id\":\"t1\"", 10s))
      << events->Output();
  events->Stop();
  // The kernel may count more than one OOM in the cgroup (the v1 eventfd
  // fires per OOM); each is published, as containerd's own shim does, and all
  // of them come before the exit. Consecutive ones are folded here.
  std::vector<std::string> order;
  for (auto& [topic, json] : ParseEvents(events->Output())) {
    if (json.find("\"container_id\":\"t1\"") == std::string::npos) continue;
    if (topic == "/tasks/oom" && !order.empty() && order.back() == topic) continue;
    order.push_back(topic);
  }
  std::vector<std::string> expected = {"/tasks/create", "/tasks/start", "/tasks/oom", "/tasks/exit",
                                       "/tasks/delete"};
  EXPECT_EQ(order, expected) << events->Output();
}

// ---- the pod's size (issue 4 item 3, issue 5 item 2) ----

// A pause-like container: CRI's sandbox annotations with a 0.5 CPU / 64 MiB
// pod, in the cgroup /<pod>/p1, with [sizing] asking hull to size the pod
// cgroup and account the shim to it.
TEST_P(HullCtrTest, PauseContainerGetsThePodSizeAndThePodCgroup) {
  std::ofstream(config_) << ConfigText()
                         << "[sizing]\npod_cgroup_limits = true\nshim_in_pod_cgroup = true\n";
  const std::string pod = "hullpod-" + std::to_string(::getpid());
  const fs::path pod_dir = fs::path("/sys/fs/cgroup") / pod;
  CommandResult r = Run({"-d", "--cgroup", "/" + pod + "/p1", "--annotation",
                         "io.kubernetes.cri.container-type=sandbox", "--annotation",
                         "io.kubernetes.cri.sandbox-id=p1", "--annotation",
                         "io.kubernetes.cri.sandbox-cpu-period=100000", "--annotation",
                         "io.kubernetes.cri.sandbox-cpu-quota=50000", "--annotation",
                         "io.kubernetes.cri.sandbox-cpu-shares=512", "--annotation",
                         "io.kubernetes.cri.sandbox-memory=67108864"},
                        "p1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();

  // The size, as the VM backend (and the CRI tests) read it.
  std::ifstream in(Bundle("p1") + "/hull-pod-size.json");
  nlohmann::json size = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(size.is_object());
  EXPECT_EQ(size["source"], "containerd annotations");
  EXPECT_EQ(size["vcpus"], 1);         // 0.5 + 0.25 overhead, rounded up
  EXPECT_EQ(size["memory_mib"], 128);  // 64 + 64 overhead
  EXPECT_EQ(size["cpu_period"], 100000);
  EXPECT_EQ(size["cpu_quota"], 50000);
  EXPECT_EQ(size["cpu_shares"], 512);
  EXPECT_EQ(size["memory_limit_bytes"], 67108864);
  EXPECT_EQ(size["pod_cpu_millis"], 500);
  EXPECT_EQ(size["pod_memory_bytes"], 67108864);
  EXPECT_EQ(size["warnings"], nlohmann::json::array());

  if (CgroupV2()) {
    // The pod cgroup has the pod's size, and the shim is in its leaf.
    EXPECT_EQ(ReadWord(pod_dir / "memory.max"), "67108864");
    std::ifstream cpu_max(pod_dir / "cpu.max");
    std::string quota, period;
    cpu_max >> quota >> period;
    EXPECT_EQ(quota + " " + period, "50000 100000");
    EXPECT_EQ(ReadWord(pod_dir / "cpu.weight"), "20");  // runc's conversion of 512 shares
    auto shims = Shims();
    ASSERT_EQ(shims.size(), 1u);
    std::ifstream procs(pod_dir / "hull-shim" / "cgroup.procs");
    std::vector<pid_t> in_leaf;
    for (pid_t p; procs >> p;) in_leaf.push_back(p);
    EXPECT_EQ(in_leaf, shims);
    EXPECT_EQ(CgroupDir(Task("p1").first, "memory"), (pod_dir / "p1").string());
  } else {
    // v1: hull leaves the pod cgroup alone (and says so in the log).
    EXPECT_FALSE(fs::exists(fs::path("/sys/fs/cgroup/memory") / pod / "hull-shim"));
  }

  // Deleting the pause container ends the shim, which leaves the pod cgroup
  // and removes it: hull created it.
  RemoveContainer("p1");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s));
  EXPECT_TRUE(WaitUntil([&] { return !fs::exists(pod_dir); }, 20s)) << pod_dir;
  if (!CgroupV2()) {  // runc's parent directories in each v1 hierarchy
    std::error_code ec;
    for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
      std::error_code ignored;
      fs::remove(h.path() / pod / "p1", ignored);
      fs::remove(h.path() / pod, ignored);
    }
  }
}

// A SIGKILLed shim runs none of its exit path. containerd still reports
// the pod's exits (137, from hull's `delete`), and those `delete`s remove
// what the shim left on cgroup v2: the empty hull-shim leaf and the pod
// cgroup hull created, whichever of the pod's two containers containerd
// cleans up last. On cgroup v1 hull never made either.
TEST_P(HullCtrTest, KilledShimLeavesNoPodCgroup) {
  std::ofstream(config_) << ConfigText() << "[sizing]\nshim_in_pod_cgroup = true\n";
  const std::string pod = "hullkill-" + std::to_string(::getpid());
  const fs::path pod_dir = fs::path("/sys/fs/cgroup") / pod;
  CommandResult r = Run({"-d", "--cgroup", "/" + pod + "/k1", "--annotation",
                         "io.kubernetes.cri.container-type=sandbox", "--annotation",
                         "io.kubernetes.cri.sandbox-id=k1"},
                        "k1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  r = Run({"-d", "--cgroup", "/" + pod + "/a1", "--annotation",
           "io.kubernetes.cri.container-type=container", "--annotation",
           "io.kubernetes.cri.sandbox-id=k1"},
          "a1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  const pid_t pause = Task("k1").first;
  const pid_t app = Task("a1").first;
  ASSERT_GT(pause, 0);
  ASSERT_GT(app, 0);
  const auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);  // one shim for the pod
  const bool record = fs::exists(Bundle("k1") + "/hull-pod-cgroup.json");
  if (CgroupV2()) {
    // The shim sits in the leaf, beside the containers, in a pod cgroup
    // hull created; both bundles say so for `delete`.
    EXPECT_TRUE(record);
    EXPECT_TRUE(fs::exists(Bundle("a1") + "/hull-pod-cgroup.json"));
    EXPECT_EQ(CgroupDir(shims[0], "memory"), (pod_dir / "hull-shim").string());
    EXPECT_EQ(CgroupDir(pause, "memory"), (pod_dir / "k1").string());
    EXPECT_EQ(CgroupDir(app, "memory"), (pod_dir / "a1").string());
  } else {
    // v1: no record, and the shim is not moved into the pod's directories.
    EXPECT_FALSE(record);
    EXPECT_EQ(CgroupDir(shims[0], "memory").find(pod), std::string::npos);
  }

  auto events = StartEvents();
  ASSERT_NE(events, nullptr);
  ASSERT_EQ(::kill(shims[0], SIGKILL), 0);
  EXPECT_TRUE(events->WaitForOutput("\"container_id\":\"k1\"", 30s)) << events->Output();
  EXPECT_TRUE(WaitUntil(
      [&] { return !ProcessAlive(pause) && !ProcessAlive(app) && Shims().empty(); }, 30s));
  // Both containers' exits, as 137 (what hull's `delete` answered).
  auto exited_137 = [&](const std::string& id) {
    std::istringstream lines(events->Output());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("/tasks/exit") != std::string::npos &&
          line.find("\"container_id\":\"" + id + "\"") != std::string::npos &&
          line.find("\"exit_status\":137") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil([&] { return exited_137("k1") && exited_137("a1"); }, 30s))
      << events->Output();
  events->Stop();
  for (const char* id : {"a1", "k1"}) {
    Ctr({"task", "rm", id});
    Ctr({"container", "rm", id});
  }

  // containerd ran hull's `delete` for both before it published the exits.
  EXPECT_FALSE(fs::exists(pod_dir / "hull-shim"));
  EXPECT_FALSE(fs::exists(pod_dir)) << pod_dir;
  if (!CgroupV2()) {
    std::error_code ec;
    for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
      EXPECT_FALSE(fs::exists(h.path() / pod / "hull-shim")) << h.path();
      std::error_code ignored;  // runc's parent directories in each v1 hierarchy
      fs::remove(h.path() / pod / "k1", ignored);
      fs::remove(h.path() / pod / "a1", ignored);
      fs::remove(h.path() / pod, ignored);
    }
  }
}

// A pause container whose `start` joined a live shim (spawned for another
// container of its group): Task.Create prepares the pod cgroup and moves
// the running shim into its leaf, and the shim leaves it at exit.
TEST_P(HullCtrTest, PauseContainerJoiningALiveShimGetsThePodCgroupAtCreate) {
  if (IsRunsc()) GTEST_SKIP() << "runsc puts an app container into its pod's sandbox: pause first";
  std::ofstream(config_) << ConfigText()
                         << "[sizing]\npod_cgroup_limits = true\nshim_in_pod_cgroup = true\n";
  const std::string pod = "hulljoin-" + std::to_string(::getpid());
  const fs::path pod_dir = fs::path("/sys/fs/cgroup") / pod;
  const std::vector<std::string> group = {"--annotation", "io.kubernetes.cri.sandbox-id=j1"};
  std::vector<std::string> flags = {"-d", "--annotation",
                                    "io.kubernetes.cri.container-type=container"};
  flags.insert(flags.end(), group.begin(), group.end());
  ASSERT_TRUE(Run(flags, "first", {"sleep", "1000"}).ok());
  const auto shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  flags = {"-d",
           "--cgroup",
           "/" + pod + "/j1",
           "--annotation",
           "io.kubernetes.cri.container-type=sandbox",
           "--annotation",
           "io.kubernetes.cri.sandbox-memory=67108864"};
  flags.insert(flags.end(), group.begin(), group.end());
  CommandResult r = Run(flags, "j1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Shims(), shims);  // joined, no second shim
  if (CgroupV2()) {
    EXPECT_TRUE(fs::exists(Bundle("j1") + "/hull-pod-cgroup.json"));
    EXPECT_EQ(ReadWord(pod_dir / "memory.max"), "67108864");
    EXPECT_EQ(CgroupDir(shims[0], "memory"), (pod_dir / "hull-shim").string());
    EXPECT_EQ(CgroupDir(Task("j1").first, "memory"), (pod_dir / "j1").string());
  } else {
    EXPECT_FALSE(fs::exists(Bundle("j1") + "/hull-pod-cgroup.json"));
  }
  RemoveContainer("j1");
  RemoveContainer("first");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s));
  EXPECT_TRUE(WaitUntil([&] { return !fs::exists(pod_dir); }, 20s)) << pod_dir;
  if (!CgroupV2()) {
    std::error_code ec;
    for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
      std::error_code ignored;  // runc's parent directories in each v1 hierarchy
      fs::remove(h.path() / pod / "j1", ignored);
      fs::remove(h.path() / pod, ignored);
    }
  }
}

// An app container (or a pause container without a parent cgroup) gets no
// size record.
TEST_P(HullCtrTest, OnlyThePauseContainerIsSized) {
  std::vector<std::string> flags = {"-d", "--annotation",
                                    "io.kubernetes.cri.container-type=container"};
  if (IsRunsc()) {
    // runsc's app container joins its pod's sandbox, which must exist.
    ASSERT_TRUE(Run({"-d", "--annotation", "io.kubernetes.cri.container-type=sandbox",
                     "--annotation", "io.kubernetes.cri.sandbox-id=p1"},
                    "p1", {"sleep", "1000"})
                    .ok());
    flags.insert(flags.end(), {"--annotation", "io.kubernetes.cri.sandbox-id=p1"});
  }
  CommandResult r = Run(flags, "a1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_FALSE(fs::exists(Bundle("a1") + "/hull-pod-size.json"));
  RemoveContainer("a1");
  if (IsRunsc()) RemoveContainer("p1");
}

// runsc: a pause container and a container that joins it by the CRI
// annotations run in one gVisor sandbox; deleting the pause container first
// takes the other down before the sandbox.
TEST_P(HullCtrTest, RunscContainersOfOnePodShareOneSandbox) {
  if (!IsRunsc()) GTEST_SKIP() << "gVisor sandboxes are runsc's";
  const std::string dir = containerd_->dir();
  ASSERT_TRUE(Run({"-d", "--annotation", "io.kubernetes.cri.container-type=sandbox", "--annotation",
                   "io.kubernetes.cri.sandbox-id=pod"},
                  "pod", {"sleep", "1000"})
                  .ok());
  CommandResult r = Run({"-d", "--annotation", "io.kubernetes.cri.container-type=container",
                         "--annotation", "io.kubernetes.cri.sandbox-id=pod"},
                        "app", {"sh", "-c", "echo app-out; sleep 1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  // One shim, one sandbox process, both containers in the pod's root.
  EXPECT_EQ(Shims().size(), 1u);
  auto sandboxes = ProcessesMatching("runsc-sandbox --root=" + RunscRoot());
  EXPECT_EQ(sandboxes.size(), 1u);
  r = RunCommand({"runsc", "--root", RunscRoot() + "/default", "list", "--format", "json"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find("\"id\":\"pod\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"id\":\"app\""), std::string::npos) << r.out;
  EXPECT_EQ(Task("app").second, "RUNNING");
  EXPECT_EQ(Ctr({"task", "exec", "--exec-id", "x", "app", "echo", "in-app"}).out, "in-app\n");
  // The joined container's stats come from the sandbox: plausible numbers.
  r = Ctr({"task", "metrics", "--format", "json", "app"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find("\"total\""), std::string::npos) << r.out;
  // A joined container's exit comes from `runsc wait`, with its status.
  ASSERT_TRUE(Ctr({"task", "kill", "-s", "SIGKILL", "app"}).ok());
  EXPECT_TRUE(WaitForStatus("app", "STOPPED"));
  EXPECT_NE(Ctr({"task", "rm", "app"}).err.find("exit code 137"), std::string::npos);
  Ctr({"container", "rm", "app"});
  EXPECT_EQ(Task("pod").second, "RUNNING");
  RemoveContainer("pod");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(WaitUntil(
      [&] { return ProcessesMatching("runsc-sandbox --root=" + RunscRoot()).empty(); }, 10s));
  r = RunCommand({"runsc", "--root", RunscRoot() + "/default", "list", "--format", "json"});
  EXPECT_EQ(r.out.find("\"id\""), std::string::npos) << r.out;
}

TEST_P(HullCtrTest, RunscDeletingThePauseContainerTakesTheOthersFirst) {
  if (!IsRunsc()) GTEST_SKIP() << "gVisor sandboxes are runsc's";
  ASSERT_TRUE(Run({"-d", "--annotation", "io.kubernetes.cri.container-type=sandbox", "--annotation",
                   "io.kubernetes.cri.sandbox-id=pod"},
                  "pod", {"sleep", "1000"})
                  .ok());
  ASSERT_TRUE(Run({"-d", "--annotation", "io.kubernetes.cri.container-type=container",
                   "--annotation", "io.kubernetes.cri.sandbox-id=pod"},
                  "app", {"sleep", "1000"})
                  .ok());
  RemoveContainer("pod");
  // The sandbox is gone, and runsc holds no state of either container.
  EXPECT_TRUE(WaitUntil(
      [&] { return ProcessesMatching("runsc-sandbox --root=" + RunscRoot()).empty(); }, 10s));
  CommandResult r =
      RunCommand({"runsc", "--root", RunscRoot() + "/default", "list", "--format", "json"});
  EXPECT_EQ(r.out.find("\"id\""), std::string::npos) << r.out;
  // The app's exit still reached containerd.
  EXPECT_TRUE(WaitForStatus("app", "STOPPED"));
  CommandResult rm = Ctr({"task", "rm", "app"});
  EXPECT_TRUE(rm.ok()) << rm.Describe();
  Ctr({"container", "rm", "app"});
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullCtrTest, ::testing::Values("runc", "crun", "runsc"));

}  // namespace
}  // namespace hull::itest
