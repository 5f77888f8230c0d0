// The OCI CLI backend's side of the Backend contract: dropping it while a
// runtime call is still running kills the runtime process and answers the
// call NotFound "container deleted". The runtime is a script that records
// its pid and never returns. The container's cgroup kill --all watches is
// never the shim's own.
#include "runtime/oci_cli/oci_cli_backend.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <set>

#include "base/file_util.h"
#include "runtime/oci_cli/cgroup_bridge.h"
#include "runtime/oci_cli/flavour.h"
#include "shim/backend/make_backend.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ttrpc/test_util.h"

namespace hull::runtime::oci_cli {
namespace {

constexpr std::chrono::seconds kDeadline(10);

class OciCliBackendTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-oci-cli"};  // dir_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    loop_ = ttrpc::testing::NewLoop();
    auto reaper = Reaper::Create(*loop_);
    ASSERT_TRUE(reaper.has_value());
    reaper_ = std::move(*reaper);
  }
  void TearDown() override {
    reaper_.reset();
    loop_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
};

TEST_F(OciCliBackendTest, DestructorAnswersARunningCallAndKillsTheRuntime) {
  const std::string pid_file = (dir_ / "runtime.pid").string();
  const std::string runtime = (dir_ / "runtime").string();
  // `exec`: the pid recorded is the process that sleeps.
  ASSERT_TRUE(
      WriteFileAtomic(runtime, "#!/bin/sh\necho $$ > " + pid_file + "\nexec sleep 100\n", 0755)
          .ok());
  auto backend = std::make_unique<OciCliBackend>(
      *loop_, *reaper_, ArgvBuilder(FlavourFor("runc"), RuntimeConfig{.binary = runtime}));

  std::optional<Status> answer;
  int answers = 0;
  backend->Kill("c1", SIGTERM, false, [&](Status s) {
    ++answers;
    answer = std::move(s);
  });
  pid_t runtime_pid = 0;
  // Nothing on the loop says the file was written: look at each tick.
  EventHandle tick = loop_->AddRepeatingTimer(std::chrono::milliseconds(2), [] {});
  ASSERT_TRUE(loop_->RunUntil(
      [&] {
        auto text = ReadFile(pid_file);
        if (text && !text->empty() && text->back() == '\n') runtime_pid = std::atoi(text->c_str());
        return runtime_pid > 0;
      },
      kDeadline));
  tick.Reset();
  EXPECT_FALSE(answer.has_value()) << "the runtime never returns";
  ASSERT_EQ(::kill(runtime_pid, 0), 0);

  backend.reset();
  ASSERT_TRUE(loop_->RunUntil([&] { return answer.has_value(); }, kDeadline));
  EXPECT_EQ(answer->code(), Code::kNotFound);
  EXPECT_EQ(answers, 1);
  // Killed, and reaped: not even a zombie is left.
  EXPECT_TRUE(
      loop_->RunUntil([&] { return ::kill(runtime_pid, 0) != 0 && errno == ESRCH; }, kDeadline));
  EXPECT_EQ(answers, 1);
}

// runsc takes a container's lock by creating `<id>_sandbox:<sandbox>.lock`;
// a command that raced a delete can leave one whose state is gone. Deleting
// the sandbox removes those of that sandbox, and nothing else. The runtime
// is a script that answers `list` with no containers and deletes the
// sandbox's own state and lock, as runsc does.
TEST_F(OciCliBackendTest, DeletingARunscSandboxRemovesItsOrphanLocks) {
  const std::filesystem::path root = dir_ / "root";
  std::filesystem::create_directories(root);
  const std::string runtime = (dir_ / "runsc").string();
  const std::string own = (root / "pod_sandbox:pod").string();
  ASSERT_TRUE(WriteFileAtomic(runtime,
                              "#!/bin/sh\ncase \" $* \" in\n"
                              "  *' list '*) echo '[]' ;;\n"
                              "  *' delete '*) rm -f " +
                                  own + ".state " + own +
                                  ".lock ;;\n"
                                  "esac\n",
                              0755)
                  .ok());
  for (const char* name :
       {"pod_sandbox:pod.state", "pod_sandbox:pod.lock", "app_sandbox:pod.lock",
        "live_sandbox:pod.state", "live_sandbox:pod.lock", "app_sandbox:other.lock"}) {
    ASSERT_TRUE(WriteFileAtomic((root / name).string(), "", 0644).ok());
  }
  OciCliBackend backend(
      *loop_, *reaper_,
      ArgvBuilder(FlavourFor("runsc"), RuntimeConfig{.binary = runtime, .root = root.string()}));

  std::optional<Status> answer;
  backend.Delete("pod", /*force=*/false, [&](Status s) { answer = std::move(s); });
  ASSERT_TRUE(loop_->RunUntil([&] { return answer.has_value(); }, kDeadline));
  EXPECT_TRUE(answer->ok()) << answer->ToString();
  std::set<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    left.insert(entry.path().filename().string());
  }
  // The orphan lock of "app" is gone; a lock with its state, and another
  // sandbox's, are not this delete's to remove.
  EXPECT_EQ(left, (std::set<std::string>{"live_sandbox:pod.state", "live_sandbox:pod.lock",
                                         "app_sandbox:other.lock"}));
}

// A runtime that made the container no cgroup of its own leaves its init in
// the shim's: watching that for emptiness would never end, so it is refused
// (the wait then asks the runtime).
TEST(ContainerCgroupTest, TheShimsOwnCgroupIsRefused) {
  auto host = cgroups::Manager::ForPid(::getpid());
  if (!host) GTEST_SKIP() << "no cgroup filesystem: " << host.error().ToString();
  EXPECT_EQ(ContainerCgroup(::getpid()).error().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(ContainerCgroup(0x7ffffff0).has_value()) << "no such process";
}

}  // namespace
}  // namespace hull::runtime::oci_cli
