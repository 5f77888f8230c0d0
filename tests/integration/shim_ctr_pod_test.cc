// hull under a real containerd 1.6, driven by ctr: the pod's size and
// cgroup for pause containers (issue 4 item 3, issue 5 item 2) and runsc's
// one gVisor sandbox per pod (issue 7). Same fixture and runtimes as
// shim_ctr_test.cc, linked into the same test binary.
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

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
  EXPECT_EQ(size["memory_mib"], 178);  // 64 + 112 + 3% of 64 (2, rounded up) overhead
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
    std::sort(in_leaf.begin(), in_leaf.end());
    // The server, and its spawner: servers are confined by default.
    EXPECT_EQ(in_leaf, ServerAndSpawner(shims[0]));
    EXPECT_EQ(in_leaf.size(), 2u);
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
    // The server moved itself and its spawner followed it (the server
    // cannot move a process with more capabilities than its own).
    std::vector<pid_t> server = ServerAndSpawner(shims[0]);
    EXPECT_EQ(server.size(), 2u);
    for (pid_t pid : server) {
      EXPECT_EQ(CgroupDir(pid, "memory"), (pod_dir / "hull-shim").string()) << pid;
    }
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

// runsc applies neither maskedPaths nor readonlyPaths (a masked file stays
// readable): a spec that lists one outside /proc and /sys is refused
// before runsc runs, naming it, and leaves no shim, sandbox or runsc state.
// The same spec with containerd's default lists runs.
TEST_P(HullCtrTest, RunscRefusesMaskedPathsItWouldIgnore) {
  if (!IsRunsc()) GTEST_SKIP() << "gVisor sandboxes are runsc's";
  // `ctr run --config` takes the whole spec, its root a directory: a
  // busybox-static root.
  const std::string root = containerd_->dir() + "/masked-rootfs";
  fs::create_directories(root + "/bin");
  fs::copy_file("/bin/busybox", root + "/bin/busybox");
  fs::create_symlink("busybox", root + "/bin/sleep");
  CommandResult defaults = Ctr({"oci", "spec"});
  ASSERT_TRUE(defaults.ok()) << defaults.Describe();
  nlohmann::json spec = nlohmann::json::parse(defaults.out, nullptr, false);
  ASSERT_TRUE(spec.is_object()) << defaults.out;
  ASSERT_TRUE(spec["linux"]["maskedPaths"].is_array()) << defaults.out;
  spec["process"]["args"] = {"/bin/sleep", "1000"};
  spec["process"]["env"] = {"PATH=/bin"};
  spec["process"]["terminal"] = false;
  spec["root"] = {{"path", root}, {"readonly", true}};
  auto run = [&](const std::string& id, const nlohmann::json& with) {
    const std::string path = containerd_->dir() + "/" + id + ".json";
    std::ofstream(path) << with.dump();
    return Ctr(
        {"run", "--runtime", kHull, "--runtime-config-path", config_, "-d", "--config", path, id});
  };
  // containerd's default lists (all under /proc and /sys) run.
  CommandResult ran = run("defaults", spec);
  ASSERT_TRUE(ran.ok()) << ran.Describe();
  EXPECT_EQ(Task("defaults").second, "RUNNING");
  RemoveContainer("defaults");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));

  spec["linux"]["maskedPaths"].push_back("/bin/sleep");
  CommandResult r = run("masked", spec);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err.find("maskedPaths entry /bin/sleep cannot be applied in a gVisor sandbox"),
            std::string::npos)
      << r.Describe();
  Ctr({"container", "rm", "masked"});
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s));
  EXPECT_TRUE(ProcessesMatching("runsc-sandbox --root=" + RunscRoot()).empty());
  r = RunCommand({"runsc", "--root", RunscRoot() + "/default", "list", "--format", "json"});
  EXPECT_EQ(r.out.find("\"id\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hull::itest
