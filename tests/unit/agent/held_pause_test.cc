// HeldPauseBackend (agent/held_pause.h): the pod's pause container as the
// agent's own clone, run here on the host (as root) with a static busybox
// as the pause process, and every other container passed to the inner
// backend (a FakeBackend). What a VM pod sees of it is tested in a guest
// (cri_vm_pod_test: the pod's namespaces, sysctls and shared PID namespace).
#include "agent/held_pause.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file_util.h"
#include "oci/annotations.h"
#include "tests/support/fake_backend.h"

namespace hull::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// The pause spec CRI gives (the parts the agent reads), with `root` as its
// root filesystem and busybox's sleep as its process.
json PauseSpec(const std::string& root) {
  return {{"ociVersion", "1.1.0"},
          {"process",
           {{"user", {{"uid", 65534}, {"gid", 65534}, {"additionalGids", {65534}}}},
            {"args", {"/bin/busybox", "sleep", "3600"}},
            {"env", {"PATH=/bin"}},
            {"cwd", "/"},
            {"noNewPrivileges", true},
            {"capabilities",
             {{"bounding", {"CAP_CHOWN", "CAP_KILL"}},
              {"effective", {"CAP_CHOWN", "CAP_KILL"}},
              {"permitted", {"CAP_CHOWN", "CAP_KILL"}}}},
            {"oomScoreAdj", 500}}},  // CRI gives -998; this host refuses a negative one
          {"root", {{"path", root}, {"readonly", true}}},
          {"hostname", "held-pod"},
          {"annotations",
           {{std::string(oci::kContainerType), std::string(oci::kContainerTypeSandbox)}}},
          {"linux",
           {{"sysctl", {{"kernel.shm_rmid_forced", "1"}, {"kernel.msgmax", "10000"}}},
            {"namespaces",
             {{{"type", "pid"}},
              {{"type", "ipc"}},
              {{"type", "uts"}},
              {{"type", "mount"}},
              {{"type", "cgroup"}}}}}}};
}

oci::Spec SpecOf(const json& doc) {
  auto spec = oci::Spec::Parse(doc.dump());
  EXPECT_TRUE(spec.has_value()) << doc.dump();
  return spec ? *spec : oci::Spec();
}

TEST(PlanPauseTest, ThePauseSpecCriGives) {
  std::string why;
  std::optional<PausePlan> plan = PlanPause(SpecOf(PauseSpec("/pod/rootfs")), &why);
  ASSERT_TRUE(plan.has_value()) << why;
  EXPECT_EQ(plan->clone_flags, CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS);
  EXPECT_EQ(plan->hostname, "held-pod");
  EXPECT_EQ(plan->sysctls,
            (std::vector<std::pair<std::string, std::string>>{
                {"/proc/sys/kernel/msgmax", "10000"}, {"/proc/sys/kernel/shm_rmid_forced", "1"}}));
  EXPECT_EQ(plan->oom_score_adj, 500);
  EXPECT_EQ(plan->root, "/pod/rootfs");
  EXPECT_EQ(plan->uid, 65534u);
  EXPECT_EQ(plan->gid, 65534u);
  EXPECT_EQ(plan->groups, std::vector<gid_t>{65534});
  EXPECT_TRUE(plan->no_new_privs);
  EXPECT_EQ(plan->bounding, (uint64_t{1} << CAP_CHOWN) | (uint64_t{1} << CAP_KILL));
  EXPECT_EQ(plan->argv, (std::vector<std::string>{"/bin/busybox", "sleep", "3600"}));
}

TEST(PlanPauseTest, WhatItCannotGiveIsLeftToCrunWithTheReason) {
  auto reason = [](json doc) {
    std::string why;
    EXPECT_FALSE(PlanPause(SpecOf(doc), &why).has_value()) << doc.dump();
    return why;
  };
  json terminal = PauseSpec("/r");
  terminal["process"]["terminal"] = true;
  EXPECT_EQ(reason(terminal), "it asks for a terminal");
  json user = PauseSpec("/r");
  user["linux"]["namespaces"].push_back({{"type", "user"}});
  EXPECT_EQ(reason(user), "it asks for a user namespace");
  json joins = PauseSpec("/r");
  joins["linux"]["namespaces"][1]["path"] = "/proc/7/ns/ipc";
  EXPECT_EQ(reason(joins), "it joins the ipc namespace /proc/7/ns/ipc");
  json host_sysctl = PauseSpec("/r");
  host_sysctl["linux"]["sysctl"]["vm.swappiness"] = "1";
  EXPECT_EQ(reason(host_sysctl), "sysctl vm.swappiness is not of a namespace of its own");
  json shared_ipc = PauseSpec("/r");
  shared_ipc["linux"]["namespaces"].erase(1);  // the IPC namespace is the host's
  EXPECT_EQ(reason(shared_ipc), "sysctl kernel.msgmax is not of a namespace of its own");
  json ambient = PauseSpec("/r");
  ambient["process"]["capabilities"]["ambient"] = {"CAP_KILL"};
  EXPECT_EQ(reason(ambient), "it asks for ambient capabilities");
  json unknown = PauseSpec("/r");
  unknown["process"]["capabilities"]["bounding"].push_back("CAP_FLY");
  EXPECT_EQ(reason(unknown), "it names an unknown capability \"CAP_FLY\"");
  json relative = PauseSpec("/r");
  relative["process"]["args"] = {"pause"};
  EXPECT_EQ(reason(relative), "its command is not an absolute path");
  json relative_root = PauseSpec("rootfs");
  EXPECT_EQ(reason(relative_root), "its root.path is not absolute");
}

class HeldPauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (namespaces, chroot, setuid)";
    if (!fs::exists("/bin/busybox")) GTEST_SKIP() << "no /bin/busybox (busybox-static)";
    char tmpl[] = "/tmp/hull-held-pause.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/rootfs/bin");
    fs::copy_file("/bin/busybox", dir_ + "/rootfs/bin/busybox");
    fs::create_directories(dir_ + "/bundle");
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    auto reaper = Reaper::Create(*loop_);
    ASSERT_TRUE(reaper.has_value());
    reaper_ = std::move(*reaper);
    auto inner =
        std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
    inner_ = inner.get();
    backend_ = std::make_unique<HeldPauseBackend>(*loop_, *reaper_, std::move(inner), "");
  }
  void TearDown() override {
    backend_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Status Call(const std::function<void(runtime::Done)>& call) {
    std::optional<Status> result;
    call([&](Status s) { result = std::move(s); });
    EXPECT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, 10s));
    return result.value_or(InternalError("no answer"));
  }

  Status Create(const std::string& id, const json& spec) {
    std::ofstream(dir_ + "/bundle/config.json") << spec.dump();
    runtime::CreateRequest req{
        .id = id, .bundle = dir_ + "/bundle", .pid_file = dir_ + "/bundle/init.pid"};
    return Call([&](runtime::Done done) { backend_->Create(req, std::move(done)); });
  }

  // A command's output, run from the test (nsenter into the pause's
  // namespaces).
  static std::string Output(const std::string& command) {
    std::string out;
    FILE* p = ::popen(command.c_str(), "r");
    if (p == nullptr) return "";
    char buf[256];
    while (size_t n = ::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  std::string dir_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  shim::testing::FakeBackend* inner_ = nullptr;
  std::unique_ptr<HeldPauseBackend> backend_;
};

TEST_F(HeldPauseTest, ThePauseHoldsThePodsNamespacesAsItsSpecSays) {
  ASSERT_TRUE(Create("pod1", PauseSpec(dir_ + "/rootfs")).ok());
  EXPECT_EQ(inner_->count("Create"), 0u) << "the pause went to crun";
  auto pid_text = ReadFile(dir_ + "/bundle/init.pid");
  ASSERT_TRUE(pid_text.has_value());
  const pid_t pid = std::stoi(*pid_text);
  const std::string proc = "/proc/" + std::to_string(pid);
  std::optional<int> exit_status;
  backend_->WatchInitExit("pod1", pid, [&](int status) { exit_status = status; });

  // Its process, in its root, as its user, with NoNewPrivs.
  auto cmdline = ReadFile(proc + "/cmdline");
  ASSERT_TRUE(cmdline.has_value());
  EXPECT_EQ(*cmdline, std::string("/bin/busybox\0sleep\0003600\0", 24));
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink(proc + "/root", ec), fs::path(dir_ + "/rootfs"));
  const std::string status = ReadFile(proc + "/status").value_or("");
  EXPECT_NE(status.find("Uid:\t65534\t65534\t65534\t65534"), std::string::npos) << status;
  EXPECT_NE(status.find("Groups:\t65534"), std::string::npos) << status;
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  // Another user than root: no capability left after the exec; the
  // bounding set is the spec's.
  EXPECT_NE(status.find("CapEff:\t0000000000000000"), std::string::npos) << status;
  EXPECT_NE(status.find("CapBnd:\t0000000000000021"), std::string::npos) << status;
  EXPECT_EQ(ReadFile(proc + "/oom_score_adj").value_or(""), "500\n");
  // Namespaces of its own: PID (it is PID 1 there), IPC, UTS; the mount
  // and cgroup namespaces stay the agent's.
  for (const char* ns : {"pid", "ipc", "uts"}) {
    EXPECT_NE(fs::read_symlink(proc + "/ns/" + ns, ec),
              fs::read_symlink("/proc/self/ns/" + std::string(ns), ec))
        << ns;
  }
  EXPECT_EQ(fs::read_symlink(proc + "/ns/mnt", ec), fs::read_symlink("/proc/self/ns/mnt", ec));
  EXPECT_NE(status.find("NSpid:\t" + std::to_string(pid) + "\t1"), std::string::npos) << status;
  const std::string target = "nsenter --target " + std::to_string(pid);
  EXPECT_EQ(Output(target + " --uts hostname"), "held-pod");
  EXPECT_EQ(Output(target + " --ipc cat /proc/sys/kernel/shm_rmid_forced /proc/sys/kernel/msgmax"),
            "1\n10000");

  // ps, stats of its cgroup (here the test's own), start.
  std::optional<Result<std::vector<pid_t>>> pids;
  backend_->Ps("pod1", [&](Result<std::vector<pid_t>> r) { pids = std::move(r); });
  ASSERT_TRUE(loop_->RunUntil([&] { return pids.has_value(); }, 5s));
  ASSERT_TRUE(pids->has_value());
  EXPECT_EQ(**pids, std::vector<pid_t>{pid});
  EXPECT_TRUE(Call([&](runtime::Done done) { backend_->Start("pod1", std::move(done)); }).ok());

  // SIGTERM is ignored by a PID 1 without a handler (busybox sleep has
  // none); SIGKILL ends it, and the exit reaches the watcher.
  EXPECT_TRUE(Call([&](runtime::Done done) {
                backend_->Kill("pod1", SIGKILL, false, std::move(done));
              }).ok());
  ASSERT_TRUE(loop_->RunUntil([&] { return exit_status.has_value(); }, 10s));
  EXPECT_EQ(*exit_status, 137);
  EXPECT_EQ(Call([&](runtime::Done done) {
              backend_->Kill("pod1", SIGTERM, false, std::move(done));
            }).code(),
            Code::kNotFound);
  EXPECT_TRUE(
      Call([&](runtime::Done done) { backend_->Delete("pod1", false, std::move(done)); }).ok());
  EXPECT_FALSE(fs::exists(proc));
  // The next pod's pause is held again.
  ASSERT_TRUE(Create("pod2", PauseSpec(dir_ + "/rootfs")).ok());
  EXPECT_EQ(inner_->count("Create"), 0u);
  // A forced delete of a running pause ends it first.
  const pid_t second = std::stoi(ReadFile(dir_ + "/bundle/init.pid").value_or("0"));
  EXPECT_TRUE(
      Call([&](runtime::Done done) { backend_->Delete("pod2", true, std::move(done)); }).ok());
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(second)));
}

// A pause image without a user (tools/mkimage's) runs as root: after its
// exec it has its bounding set, as a root container of runc's has.
TEST_F(HeldPauseTest, ARootPauseHasItsBoundingSetAsCapabilities) {
  json root = PauseSpec(dir_ + "/rootfs");
  root["process"]["user"] = {{"uid", 0}, {"gid", 0}};
  ASSERT_TRUE(Create("pod", root).ok());
  const std::string proc = "/proc/" + ReadFile(dir_ + "/bundle/init.pid").value_or("0");
  const std::string status = ReadFile(proc + "/status").value_or("");
  EXPECT_NE(status.find("Uid:\t0\t0\t0\t0"), std::string::npos) << status;
  EXPECT_NE(status.find("CapEff:\t0000000000000021"), std::string::npos) << status;
  EXPECT_NE(status.find("CapBnd:\t0000000000000021"), std::string::npos) << status;
}

TEST_F(HeldPauseTest, OtherContainersAndPausesItCannotGiveGoToTheInnerBackend) {
  json app = PauseSpec(dir_ + "/rootfs");
  app["annotations"][std::string(oci::kContainerType)] = std::string(oci::kContainerTypeContainer);
  ASSERT_TRUE(Create("app", app).ok());
  json user = PauseSpec(dir_ + "/rootfs");
  user["linux"]["namespaces"].push_back({{"type", "user"}});
  ASSERT_TRUE(Create("pod", user).ok());
  ASSERT_EQ(inner_->count("Create"), 2u);
  EXPECT_EQ(inner_->calls_of("Create")[1].id, "pod");
  // Calls for them go there too.
  EXPECT_TRUE(Call([&](runtime::Done done) { backend_->Start("app", std::move(done)); }).ok());
  EXPECT_TRUE(Call([&](runtime::Done done) {
                backend_->Kill("pod", SIGTERM, false, std::move(done));
              }).ok());
  EXPECT_EQ(inner_->count("Start"), 1u);
  EXPECT_EQ(inner_->count("Kill"), 1u);
}

TEST_F(HeldPauseTest, AProcessThatCannotRunFailsTheCreateAndLeavesNothing) {
  json missing = PauseSpec(dir_ + "/rootfs");
  missing["process"]["args"] = {"/pause"};
  Status s = Create("pod", missing);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("could not exec its process"), std::string::npos) << s.ToString();
  EXPECT_EQ(inner_->count("Create"), 0u);
  EXPECT_FALSE(fs::exists(dir_ + "/bundle/init.pid"));
  // Its exit is reaped and dropped: nothing waits for it.
  loop_->RunUntil([] { return false; }, 300ms);
  EXPECT_EQ(reaper_->unclaimed_for_testing(), 0u);
  // The failed child is reaped, and the next pause is held.
  ASSERT_TRUE(Create("pod", PauseSpec(dir_ + "/rootfs")).ok());
  EXPECT_TRUE(fs::exists(dir_ + "/bundle/init.pid"));
}

// The pause ran but its pid file could not be written: the create fails,
// and the pause is killed and reaped with nothing left waiting.
TEST_F(HeldPauseTest, APidFileThatCannotBeWrittenFailsTheCreateAndKillsThePause) {
  std::ofstream(dir_ + "/bundle/config.json") << PauseSpec(dir_ + "/rootfs").dump();
  runtime::CreateRequest req{
      .id = "pod", .bundle = dir_ + "/bundle", .pid_file = dir_ + "/no-such-dir/init.pid"};
  Status s = Call([&](runtime::Done done) { backend_->Create(req, std::move(done)); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("create pod"), std::string::npos) << s.ToString();
  auto children = [] {
    std::string all;
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
      std::ifstream in(task.path() / "children");
      all.append(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  };
  EXPECT_TRUE(loop_->RunUntil([&] { return children().empty(); }, 5s)) << children();
  EXPECT_EQ(reaper_->unclaimed_for_testing(), 0u);
  ASSERT_TRUE(Create("pod", PauseSpec(dir_ + "/rootfs")).ok());
}

}  // namespace
}  // namespace hull::agent
