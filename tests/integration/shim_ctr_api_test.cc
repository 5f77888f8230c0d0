// hull under containerd's own Tasks API (the calls containerd's Go client
// makes), for what `ctr` cannot do: a task killed, or updated, between Create
// and Start; the runctypes CreateOptions that WithShimCgroup sends; and the
// end of a container without a pid namespace of its own (issue 12). Once
// per runtime, with the fixture of shim_ctr_fixture.h.
#include <time.h>

#include "tests/integration/containerd_api/containerd_client.h"
#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

// Seconds since the epoch of an RFC 3339 time as protobuf's JSON writes it
// ("2026-11-24T02:50:00.123456789Z"); -1 if it does not parse.
int64_t EpochSeconds(const std::string& text) {
  struct tm tm = {};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return -1;
  return static_cast<int64_t>(::timegm(&tm));
}

int64_t Now() {
  return static_cast<int64_t>(::time(nullptr));
}

class HullApiTest : public HullCtrTest {
 protected:
  void SetUp() override {
    HullCtrTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    api_ = std::make_unique<ContainerdClient>(containerd_->address(), "default");
  }

  // What the Go client's NewContainer + NewTask do: the container record and
  // its snapshot (`ctr containers create`), then Tasks.Create with the
  // snapshot's mounts as rootfs and `options` as the task options. The
  // init's pid, 0 on failure (reason in *error).
  uint32_t CreateTask(const std::string& id, const std::vector<std::string>& command,
                      const nlohmann::json& options, std::string* error) {
    std::vector<std::string> args = {
        "containers", "create", "--runtime", kHull, "--runtime-config-path", config_, kBusybox, id};
    args.insert(args.end(), command.begin(), command.end());
    CommandResult c = Ctr(args);
    if (!c.ok()) {
      *error = c.Describe();
      return 0;
    }
    CommandResult info = Ctr({"containers", "info", id});
    nlohmann::json mounts =
        SnapshotMounts(*api_, nlohmann::json::parse(info.out, nullptr, false), error);
    if (mounts.empty()) return 0;
    nlohmann::json request = {{"container_id", id}, {"rootfs", mounts}};
    if (!options.is_null()) request["options"] = options;
    ApiReply r = api_->Call("tasks", "Create", request);
    if (!r.ok) {
      *error = "Tasks.Create: " + r.error;
      return 0;
    }
    return r.body.value("pid", 0u);
  }

  // Kill, Delete and the container record, whatever state the task is in.
  void Remove(const std::string& id) {
    api_->Call("tasks", "Kill", {{"container_id", id}, {"signal", SIGKILL}, {"all", true}});
    WaitUntil([&] { return Task(id).second != "RUNNING" && Task(id).second != "CREATED"; }, 20s);
    api_->Call("tasks", "Delete", {{"container_id", id}});
    Ctr({"containers", "rm", id});
  }

  // Remove(id) when the test ends, also after a failed assertion: crun's and
  // runsc's state (under /run/containerd/crun, the test's runsc root) is not
  // what the harness's teardown cleans, and a later run would find it.
  struct Cleanup {
    HullApiTest* test;
    std::string id;
    ~Cleanup() { test->Remove(id); }
  };

  std::unique_ptr<ContainerdClient> api_;
};

// A task killed before it was ever started exits: Wait answers 137 with the
// time of the kill, and Delete works (issue 12, 1).
TEST_P(HullApiTest, KillOfCreatedTaskExitsAndDeletes) {
  const std::string id = "i12-kill-created";
  Cleanup cleanup{this, id};
  std::string error;
  ASSERT_GT(CreateTask(id, {"sleep", "1000"}, nullptr, &error), 0u) << error;
  EXPECT_EQ(Task(id).second, "CREATED");

  auto wait = api_->CallInBackground("tasks", "Wait", {{"container_id", id}});
  ASSERT_NE(wait, nullptr);
  const int64_t before_kill = Now();
  ApiReply kill = api_->Call("tasks", "Kill", {{"container_id", id}, {"signal", SIGKILL}});
  ASSERT_TRUE(kill.ok) << kill.error;
  std::optional<int> waited = wait->Wait(30s);
  ASSERT_TRUE(waited.has_value()) << "Wait never returned for a created task killed with SIGKILL";
  ASSERT_EQ(*waited, 0) << wait->ErrorOutput();
  nlohmann::json exit = nlohmann::json::parse(wait->Output(), nullptr, false);
  ASSERT_TRUE(exit.is_object()) << wait->Output();
  EXPECT_EQ(exit.value("exit_status", 0u), 137u);
  const int64_t exited_at = EpochSeconds(exit.value("exited_at", ""));
  EXPECT_GE(exited_at, before_kill) << exit.dump();
  EXPECT_LE(exited_at, Now()) << exit.dump();
  EXPECT_EQ(Task(id).second, "STOPPED");

  ApiReply deleted = api_->Call("tasks", "Delete", {{"container_id", id}});
  ASSERT_TRUE(deleted.ok) << deleted.error;
  EXPECT_EQ(deleted.body.value("exit_status", 0u), 137u);
  EXPECT_EQ(Task(id).first, 0);
  EXPECT_TRUE(Ctr({"containers", "rm", id}).ok());
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s)) << DescribeShims();
}

// Update between Create and Start is accepted, and the limit holds once the
// task runs; runsc has no update at all (issue 12, 2).
TEST_P(HullApiTest, UpdateOfCreatedTaskHoldsAfterStart) {
  const std::string id = "i12-update-created";
  Cleanup cleanup{this, id};
  std::string error;
  const uint32_t pid = CreateTask(id, {"sleep", "1000"}, nullptr, &error);
  ASSERT_GT(pid, 0u) << error;
  const uint64_t limit = 48ull << 20;
  nlohmann::json resources = {
      {"@type_url", "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources"},
      {"@value_text", nlohmann::json{{"memory", {{"limit", limit}}}}.dump()}};
  ApiReply update = api_->Call("tasks", "Update", {{"container_id", id}, {"resources", resources}});
  if (IsRunsc()) {
    EXPECT_FALSE(update.ok);
    EXPECT_EQ(update.error.rfind("UNIMPLEMENTED", 0), 0u) << update.error;
    return;
  }
  ASSERT_TRUE(update.ok) << update.error;
  ApiReply start = api_->Call("tasks", "Start", {{"container_id", id}});
  ASSERT_TRUE(start.ok) << start.error;
  EXPECT_EQ(Task(id).second, "RUNNING");
  const std::string memory = CgroupDir(static_cast<pid_t>(pid), "memory");
  ASSERT_FALSE(memory.empty());
  EXPECT_EQ(ReadWord(memory + (CgroupV2() ? "/memory.max" : "/memory.limit_in_bytes")),
            std::to_string(limit));
}

// The runctypes CreateOptions (what containerd 1.6's WithShimCgroup sends to
// a runtime not named io.containerd.runc.*) is accepted, and `start` moves
// the shim into its shim_cgroup (issue 12, 3). The options carry no runtime
// (containerd hands them to `start` instead of the container's runtime
// options), so the shim runs the host's default runtime: one run is enough.
TEST_P(HullApiTest, RuncCreateOptionsPlaceTheShimInShimCgroup) {
  if (GetParam() != "runc") GTEST_SKIP() << "runtime-independent: runs for runc only";
  const std::string cgroup = "hull-i12-shims-" + std::to_string(::getpid());
  // On v1 one hierarchy is enough: cgroups::MoveProcess uses every one that has it.
  const std::string dir =
      CgroupV2() ? "/sys/fs/cgroup/" + cgroup : "/sys/fs/cgroup/memory/" + cgroup;
  ASSERT_TRUE(fs::create_directory(dir)) << dir;
  // Removed last, once the shim has left it (after `cleanup` below).
  struct RemoveDir {
    std::function<bool()> shims_gone;
    std::string dir;
    ~RemoveDir() {
      WaitUntil(shims_gone, 20s);
      EXPECT_EQ(::rmdir(dir.c_str()), 0) << dir;
    }
  } remove_dir{[this] { return Shims().empty(); }, dir};
  const std::string id = "i12-shim-cgroup";
  Cleanup cleanup{this, id};
  std::string error;
  nlohmann::json options = {{"@type", "containerd.linux.runc.CreateOptions"},
                            {"shim_cgroup", "/" + cgroup}};
  const uint32_t pid = CreateTask(id, {"sleep", "1000"}, options, &error);
  EXPECT_GT(pid, 0u) << error;
  if (pid > 0) {
    std::vector<pid_t> shims = Shims();
    ASSERT_EQ(shims.size(), 1u) << DescribeShims();
    EXPECT_EQ(CgroupDir(shims[0], "memory"), dir);
    // The server's spawner (servers are confined by default,
    // docs/security.md) is moved with it, and so is everything it starts.
    const std::string self = std::to_string(shims[0]);
    std::ifstream children("/proc/" + self + "/task/" + self + "/children");
    int spawners = 0;
    for (pid_t child; children >> child;) {
      std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
      std::string name;
      comm >> name;
      if (name != "hull-spawner") continue;
      ++spawners;
      EXPECT_EQ(CgroupDir(child, "memory"), dir);
    }
    EXPECT_EQ(spawners, 1);
  }
  Remove(id);
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s)) << DescribeShims();
}

// containerd 1.6's Go client sends the runctypes CheckpointOptions for a
// runtime not named io.containerd.runc.* (WithCheckpointImagePath, ...):
// hull reads them (issue 12, 3). criu does not work on every host; then the
// answer is criu's FailedPrecondition, never an InvalidArgument about the
// options; runsc's checkpoint is Unimplemented.
TEST_P(HullApiTest, CheckpointTakesRunctypesOptions) {
  const std::string id = "i12-checkpoint";
  Cleanup cleanup{this, id};
  ASSERT_TRUE(Run({"-d"}, id, {"sleep", "1000"}).ok());
  const std::string images = containerd_->dir() + "/i12-images";
  nlohmann::json options = {{"@type", "containerd.linux.runc.CheckpointOptions"},
                            {"image_path", images}};
  ApiReply r = api_->Call("tasks", "Checkpoint", {{"container_id", id}, {"options", options}});
  EXPECT_EQ(r.error.rfind("INVALID_ARGUMENT", 0), std::string::npos) << r.error;
  if (IsRunsc()) {
    EXPECT_EQ(r.error.rfind("UNIMPLEMENTED", 0), 0u) << r.error;
  } else if (RunCommand({"criu", "check"}).ok()) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(fs::exists(images) && !fs::is_empty(images)) << images;
  } else {
    EXPECT_EQ(r.error.rfind("FAILED_PRECONDITION", 0), 0u) << r.error;
  }
  EXPECT_EQ(Task(id).second, "RUNNING");
}

// A container in the host's pid namespace: when its init exits, what it
// forked is killed before the exit is reported, so the cgroup is empty when
// /tasks/exit arrives; Kill with `all` still reaches whatever is put into the
// cgroup afterwards; Delete does not wait out the pipes (issue 12, 4).
TEST_P(HullApiTest, HostPidInitExitEmptiesTheCgroupFirst) {
  if (IsRunsc()) {
    GTEST_SKIP() << "gVisor runs the container's processes in its own kernel: no host pid "
                    "namespace to share";
  }
  const std::string id = "i12-hostpid";
  Cleanup cleanup{this, id};
  auto events = StartEvents();
  ASSERT_NE(events, nullptr);
  // The init forks a sleeper that holds its stdout, then exits once told to.
  // It joins this test's pid namespace, the host's (pid 1 of this machine may
  // sit in another one).
  CommandResult r = Run({"-d", "--with-ns", "pid:/proc/" + std::to_string(::getpid()) + "/ns/pid"},
                        id, {"sh", "-c", "sleep 300 & until [ -e /i12-go ]; do sleep 0.05; done"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  const pid_t init = Task(id).first;
  ASSERT_GT(init, 0);
  const std::string memory = CgroupDir(init, "memory");
  ASSERT_FALSE(memory.empty());
  auto procs = [&] {
    std::ifstream in(memory + "/cgroup.procs");
    std::vector<std::string> pids;
    for (std::string pid; in >> pid;) pids.push_back(pid);
    return pids;
  };
  ASSERT_TRUE(WaitUntil([&] { return procs().size() >= 2; }, 20s)) << "the sleeper never ran";
  // Every hierarchy of the container, for the process put there later.
  std::vector<std::string> dirs;
  {
    std::ifstream in("/proc/" + std::to_string(init) + "/cgroup");
    for (std::string line; std::getline(in, line);) {
      const std::string controllers =
          line.substr(line.find(':') + 1, line.rfind(':') - line.find(':') - 1);
      if (CgroupV2() && line.starts_with("0::")) dirs.push_back(CgroupDir(init, ""));
      if (!CgroupV2() && !controllers.empty() && controllers.find('=') == std::string::npos) {
        std::string dir = "/sys/fs/cgroup/" + controllers + line.substr(line.rfind(':') + 1);
        if (fs::exists(dir)) dirs.push_back(dir);
      }
    }
  }

  std::ofstream(Bundle(id) + "/rootfs/i12-go").put('\n');
  const std::string exit_event = "/tasks/exit {\"container_id\":\"" + id + "\"";
  ASSERT_TRUE(events->WaitForOutput(exit_event, 30s)) << events->Output();
  std::vector<std::string> left = procs();
  EXPECT_TRUE(left.empty()) << "still in the cgroup when the exit arrived: " << left.front();

  // Kill --all on the stopped container still signals what is in its cgroup.
  auto stray = BackgroundCommand::Start({"sleep", "300"});
  ASSERT_NE(stray, nullptr);
  for (const std::string& dir : dirs) {
    std::ofstream(dir + "/cgroup.procs") << stray->pid() << "\n";
  }
  CommandResult kill = Ctr({"task", "kill", "--all", "--signal", "SIGKILL", id});
  EXPECT_TRUE(kill.ok()) << kill.Describe();
  std::optional<int> stray_exit = stray->Wait(20s);
  EXPECT_EQ(stray_exit, std::optional<int>(128 + SIGKILL));

  const auto before_rm = std::chrono::steady_clock::now();
  CommandResult rm = Ctr({"task", "rm", id});
  const auto rm_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - before_rm)
                         .count();
  std::cout << "[ measured ] " << GetParam() << ": ctr task rm took " << rm_ms << " ms\n";
  EXPECT_TRUE(rm.ok()) << rm.Describe();
  // A bound for correctness, not performance: a Delete that drained pipes
  // held by a leftover process would wait out hull's 10 s drain timeout.
  EXPECT_LT(rm_ms, 5000);
  Ctr({"containers", "rm", id});
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullApiTest, ::testing::Values("runc", "crun", "runsc"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hull::itest
