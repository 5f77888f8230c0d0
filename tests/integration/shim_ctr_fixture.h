// The fixture of hull's ctr-driven integration tests (shim_ctr_test.cc:
// the task lifecycle, bad input, events; shim_ctr_pod_test.cc: the pod's
// size and cgroup, runsc sandboxes): a private containerd with hull on its
// PATH, the locally built busybox image, and `ctr run --runtime
// io.containerd.hull.v2` once per runtime hull drives (runc, crun, runsc),
// on Debian's containerd 1.6.20 and on containerd 2.x.
// The host's cgroups may be v1 (this machine) or v2 (tools/vmhost's guest,
// ctest `containerd_vm`): what a test reads from cgroupfs follows the host.
#pragma once

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
#include <string_view>

#include "base/event_loop.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/empty.pb.h"
#include "tests/integration/harness/harness.h"
#include "ttrpc/client.h"

namespace hull::itest {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline constexpr const char* kBusybox = "docker.io/hull/busybox:latest";
inline constexpr const char* kHull = "io.containerd.hull.v2";

// HULL_VM_TEST_REQUIRE=1 (the ctest that runs this binary in tools/vmhost's
// guest): a skip there means nothing was tested, so it fails instead.
inline bool Required() {
  const char* v = std::getenv("HULL_VM_TEST_REQUIRE");
  return v != nullptr && std::string(v) == "1";
}

inline bool CgroupV2() {
  struct statfs st;
  return ::statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == 0x63677270;  // CGROUP2_SUPER_MAGIC
}

// The directory of `pid`'s cgroup that has `controller`'s files: the v2
// cgroup, or the v1 hierarchy named after the controller. Empty if unknown.
inline std::string CgroupDir(pid_t pid, const std::string& controller) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (CgroupV2() && line.starts_with("0::")) return "/sys/fs/cgroup" + line.substr(3);
    if (!CgroupV2() && line.find(":" + controller + ":") != std::string::npos) {
      return "/sys/fs/cgroup/" + controller + line.substr(line.rfind(':') + 1);
    }
  }
  return "";
}

inline std::string ReadWord(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

// Parses `ctr events` lines "<time> <ns> <topic> <json>" into topic + json.
inline std::vector<std::pair<std::string, std::string>> ParseEvents(const std::string& output) {
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
    ContainerdOptions options;
    options.hull_server_config = ServerConfig();
    if (OnContainerd2()) {
      std::string why_not;
      options.containerd_dir = Containerd2Dir(&why_not);
      if (options.containerd_dir.empty()) GTEST_SKIP() << why_not;
      if (AssertsCtr16ErrorText()) {
        GTEST_SKIP() << "asserts the gRPC code names ctr 1.6 prints; ctr 2.x prints none "
                        "(hull's codes are the same on both, checked on 1.6.20)";
      }
      if (GetParam() != "runc" && !FullMatrix() && !InDefaultContainerd2Matrix()) {
        GTEST_SKIP() << "containerd 2.x with " << GetParam() << ": tools/test --full";
      }
    }
    std::string error;
    containerd_ = PrivateContainerd::Start(options, &error);
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

  // What hull's servers read as HULL_CONFIG ("": kHarnessServerConfig, the
  // defaults: confined servers, docs/security.md).
  virtual std::string ServerConfig() const { return ""; }

  // Every test runs once per runtime on Debian's containerd 1.6.20
  // (instantiation "Runtimes/") and on containerd 2.x ("Containerd2/", see
  // Containerd2Dir()). On 2.x the default run takes runc for every test and
  // crun and runsc for the tests named in kDefaultContainerd2Tests; tools/test
  // --full takes every runtime for every test (docs/testing.md).
  static bool OnContainerd2() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info != nullptr && std::string_view(info->test_suite_name()).starts_with("Containerd2/");
  }
  // Tests that read a status code from ctr's message ("failed precondition",
  // "invalid argument"): ctr 2.x prints the message without the code.
  static bool AssertsCtr16ErrorText() {
    static constexpr std::string_view kTests[] = {"CheckpointWorksOrSaysWhyNot",
                                                  "BadStdioUriIsInvalidArgument",
                                                  "CallsInTheWrongStateAreFailedPrecondition"};
    return std::find(std::begin(kTests), std::end(kTests), TestName()) != std::end(kTests);
  }
  // This test's name without the "/<param>" suffix.
  static std::string_view TestName() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string_view name = info != nullptr ? info->name() : "";
    return name.substr(0, name.find('/'));
  }
  static bool InDefaultContainerd2Matrix() {
    static constexpr std::string_view kDefaultContainerd2Tests[] = {
        "RunRmPrintsOutput", "DetachedTaskServesExecKillPsPauseResumeMetrics",
        "StartAnswersWithBootstrapVersion3"};
    return std::find(std::begin(kDefaultContainerd2Tests), std::end(kDefaultContainerd2Tests),
                     TestName()) != std::end(kDefaultContainerd2Tests);
  }

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

  // 64 MiB asked for in a container limited to 32 MiB: ctr's exit is 137 and
  // TaskOOM comes before the killed init's TaskExit. The kernel may count more
  // than one OOM in the cgroup (the v1 eventfd fires per OOM); each is
  // published, as containerd's own shim does, and all of them come before the
  // exit. Consecutive ones are folded here.
  void ExpectOomKillPublishedBeforeExit(std::chrono::milliseconds timeout) {
    auto events = StartEvents();
    ASSERT_NE(events, nullptr);
    CommandResult r = Run({"--rm", "--memory-limit", "33554432"}, "t1",
                          {"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"}, timeout);
    EXPECT_EQ(r.exit_code, 137) << r.Describe();
    EXPECT_TRUE(events->WaitForOutput("/tasks/delete {\"container_id\":\"t1\"", 30s))
        << events->Output();
    events->Stop();
    std::vector<std::string> order;
    for (auto& [topic, json] : ParseEvents(events->Output())) {
      if (json.find("\"container_id\":\"t1\"") == std::string::npos) continue;
      if (topic == "/tasks/oom" && !order.empty() && order.back() == topic) continue;
      order.push_back(topic);
    }
    std::vector<std::string> expected = {"/tasks/create", "/tasks/start", "/tasks/oom",
                                         "/tasks/exit", "/tasks/delete"};
    EXPECT_EQ(order, expected) << events->Output();
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

}  // namespace hull::itest
