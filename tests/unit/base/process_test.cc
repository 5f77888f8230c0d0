#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/command.h"
#include "base/reaper.h"
#include "base/spawn.h"
#include "tests/unit/base/fd_count.h"

namespace hull {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = testing::CountOpenFds();
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(*Reaper::Create(*loop_));
  }
  void TearDown() override {
    reaper_.reset();
    loop_.reset();
    EXPECT_EQ(testing::CountOpenFds(), fds_before_);
  }

  CommandResult RunToEnd(std::vector<std::string> argv, std::string stdin_data = "") {
    std::optional<CommandResult> result;
    auto cmd = Command::Start(*loop_, *reaper_, SpawnOptions{.argv = std::move(argv)},
                              std::move(stdin_data), [&](CommandResult r) { result = r; });
    EXPECT_TRUE(cmd.has_value()) << cmd.error().ToString();
    if (!cmd) return {};
    EXPECT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
    return result.value_or(CommandResult{});
  }

  int fds_before_ = 0;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
};

TEST_F(ProcessTest, CommandCapturesOutputAndStatus) {
  CommandResult r = RunToEnd({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST_F(ProcessTest, CommandFeedsStdin) {
  CommandResult r = RunToEnd({"cat"}, "payload");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "payload");
}

TEST_F(ProcessTest, SignalledChildReports128PlusSignal) {
  CommandResult r = RunToEnd({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.exit_status, 137);
}

TEST_F(ProcessTest, MissingProgramIsNotFoundSynchronously) {
  auto pid = Spawn(SpawnOptions{.argv = {"/nonexistent/runc"}});
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().code(), Code::kNotFound);
  EXPECT_NE(pid.error().message().find("/nonexistent/runc"), std::string::npos);
}

TEST_F(ProcessTest, ChildGetsOnlyTheDescriptorsItIsGiven) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  // The child lists its fds: 0, 1, 2 and 5 only, plus 3, the directory ls
  // itself opens to list them.
  CommandResult r;
  std::optional<CommandResult> result;
  auto cmd = Command::Start(
      *loop_, *reaper_,
      SpawnOptions{.argv = {"ls", "-1", "/proc/self/fd"}, .fds = {{5, pipe->read.get()}}}, "",
      [&](CommandResult res) { result = res; });
  ASSERT_TRUE(cmd.has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
  EXPECT_EQ(result->out, "0\n1\n2\n3\n5\n");
}

// SpawnJail (QEMU's, docs/security.md): the child has only the kept
// capabilities in every set, NoNewPrivs, and its own mount namespace with
// the hidden directories empty; the caller's is untouched.
TEST_F(ProcessTest, JailedChildKeepsOnlyItsCapabilitiesAndSeesHiddenDirectoriesEmpty) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace, capability drops)";
  std::optional<CommandResult> result;
  auto cmd = Command::Start(
      *loop_, *reaper_,
      SpawnOptions{.argv = {"/bin/sh", "-c",
                            "grep -E '^(CapEff|CapPrm|CapInh|CapBnd|NoNewPrivs):' /proc/self/status"
                            " | tr -d ' \t'; ls -A /etc | wc -l"},
                   .jail = SpawnJail{.hide = {"/etc"}, .capabilities = 0x1f}},
      "", [&](CommandResult res) { result = res; });
  ASSERT_TRUE(cmd.has_value()) << cmd.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
  EXPECT_EQ(result->out,
            "CapInh:000000000000001f\nCapPrm:000000000000001f\nCapEff:000000000000001f\n"
            "CapBnd:000000000000001f\nNoNewPrivs:1\n0\n")
      << result->err;
  EXPECT_TRUE(::access("/etc/passwd", F_OK) == 0);
}

// A jail with its own user (QEMU's when its 9p export is served by a
// helper): the child runs as that uid and gid with only the given groups and
// no capability in any set, whatever it was started with.
TEST_F(ProcessTest, JailedChildWithAUserHasNoCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setuid, a mount namespace)";
  std::optional<CommandResult> result;
  auto cmd = Command::Start(
      *loop_, *reaper_,
      SpawnOptions{.argv = {"/bin/sh", "-c",
                            "grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|CapBnd|NoNewPrivs):' "
                            "/proc/self/status | tr -s ' \t' ' '"},
                   .jail = SpawnJail{.uid = 2100000123, .gid = 2100000000, .groups = {2100000001}}},
      "", [&](CommandResult res) { result = res; });
  ASSERT_TRUE(cmd.has_value()) << cmd.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
  EXPECT_EQ(result->out,
            "Uid: 2100000123 2100000123 2100000123 2100000123\n"
            "Gid: 2100000000 2100000000 2100000000 2100000000\n"
            "Groups: 2100000001 \n"
            "CapPrm: 0000000000000000\nCapEff: 0000000000000000\n"
            "CapBnd: 0000000000000000\nNoNewPrivs: 1\n")
      << result->err;
  // Capabilities and a user of its own do not go together.
  EXPECT_FALSE(Spawn(SpawnOptions{.argv = {"/bin/true"},
                                  .jail = SpawnJail{.capabilities = 1, .uid = 2100000123}})
                   .has_value());
}

// A jail with a root of its own (QEMU's): the child sees only what it was
// given, at the host's paths: /usr read-only, the merged-/usr links, a
// file, /dev/null, and a /proc without other users' processes.
TEST_F(ProcessTest, JailedChildInARootOfItsOwnSeesOnlyItsFiles) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mounts, pivot_root, setuid)";
  char dir[] = "/tmp/hull-jail-root-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = std::string(dir) + "/jail";
  const std::string file = std::string(dir) + "/asset";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  std::ofstream(file) << "asset\n";
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  SpawnJail jail{
      .uid = 2100000123,
      .gid = 2100000000,
      .root = root,
      .binds = {{.path = "/usr"}, {.path = file}, {.path = "/dev/null", .writable = true}}};
  for (const char* name : {"/bin", "/lib", "/lib64", "/sbin"}) {
    char target[256];
    const ssize_t n = ::readlink(name, target, sizeof target);
    if (n > 0) jail.links.emplace_back(name, std::string(target, static_cast<size_t>(n)));
  }
  std::optional<CommandResult> result;
  auto cmd = Command::Start(
      *loop_, *reaper_,
      SpawnOptions{.argv = {"/bin/sh", "-c",
                            "ls -A / | tr '\\n' ' '; echo; cat " + file +
                                "; echo x > /dev/null && echo null; touch /usr/x 2>/dev/null || "
                                "echo usr-read-only; test -e /proc/1 || echo no-pid-1; "
                                "test -e /proc/self/status && echo own-proc"},
                   .jail = jail},
      "", [&](CommandResult res) { result = res; });
  ASSERT_TRUE(cmd.has_value()) << cmd.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
  std::string top = "bin dev lib lib64 proc sbin tmp usr ";
  if (jail.links.empty()) top = "dev proc tmp usr ";
  EXPECT_EQ(result->out, top + "\nasset\nnull\nusr-read-only\nno-pid-1\nown-proc\n") << result->err;
  // The host's directory is untouched: the tmpfs was the child's alone.
  EXPECT_TRUE(fs::is_empty(root));
  fs::remove_all(dir);
}

TEST_F(ProcessTest, ExitBeforeWatchIsKeptUntilClaimed) {
  auto pid = Spawn(SpawnOptions{.argv = {"/bin/true"}});
  ASSERT_TRUE(pid.has_value());
  ASSERT_TRUE(
      loop_->RunUntil([&] { return reaper_->unclaimed_for_testing() == 1; }, milliseconds(5000)));
  std::optional<int> status;
  reaper_->Watch(*pid, [&](int s) { status = s; });
  EXPECT_FALSE(status.has_value());  // delivered on a later turn, not inside Watch
  ASSERT_TRUE(loop_->RunUntil([&] { return status.has_value(); }, milliseconds(5000)));
  EXPECT_EQ(ExitStatusFromWait(*status), 0);
  EXPECT_EQ(reaper_->unclaimed_for_testing(), 0u);
}

TEST_F(ProcessTest, DroppedChildHandleKillsAndReaps) {
  auto pid = Spawn(SpawnOptions{.argv = {"sleep", "60"}});
  ASSERT_TRUE(pid.has_value());
  { ChildHandle child(*reaper_, *pid); }
  // The child is gone (killed and reaped), and its exit was discarded.
  ASSERT_TRUE(loop_->RunUntil([&] { return ::kill(*pid, 0) != 0; }, milliseconds(5000)));
  loop_->RunUntil([] { return false; }, milliseconds(20));
  EXPECT_EQ(reaper_->unclaimed_for_testing(), 0u);
}

TEST_F(ProcessTest, DroppedCommandKillsItsProcess) {
  pid_t pid = 0;
  {
    auto cmd = Command::Start(*loop_, *reaper_, SpawnOptions{.argv = {"sleep", "60"}}, "",
                              [](CommandResult) { ADD_FAILURE() << "done after drop"; });
    ASSERT_TRUE(cmd.has_value());
    pid = (*cmd)->pid();
  }
  ASSERT_TRUE(loop_->RunUntil([&] { return ::kill(pid, 0) != 0; }, milliseconds(5000)));
}

}  // namespace
}  // namespace hull
