// The spawner (base/spawner.h) with a Reaper on top, as a confined server
// uses them: children started through it, descriptors passed, exits read
// from its channel, orphans it adopts. No root needed.
#include "base/spawner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "base/command.h"
#include "base/reaper.h"
#include "tests/unit/base/fd_count.h"

namespace hull {
namespace {

using std::chrono::milliseconds;

// Entry 0: forks a child that writes the payload to the one descriptor it
// was given and exits with status 5.
Result<pid_t> WritePayload(std::string_view payload, std::vector<UniqueFd>& fds) {
  if (fds.size() != 1) return InvalidArgumentError("want one descriptor");
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork");
  if (pid == 0) {
    ssize_t n = ::write(fds[0].get(), payload.data(), payload.size());
    _exit(n == static_cast<ssize_t>(payload.size()) ? 5 : 1);
  }
  return pid;
}

// Entry 1 (a call): answers "<payload>!" with a pipe whose write end holds
// the payload.
Result<SpawnerReply> EchoWithAPipe(std::string_view payload, std::vector<UniqueFd>& fds) {
  if (!fds.empty()) return InvalidArgumentError("wants no descriptor");
  HULL_ASSIGN_OR_RETURN(Pipe pipe, MakePipe());
  if (::write(pipe.write.get(), payload.data(), payload.size()) !=
      static_cast<ssize_t>(payload.size())) {
    return ErrnoError("write");
  }
  SpawnerReply reply{.data = std::string(payload) + "!"};
  reply.fds.push_back(std::move(pipe.read));
  return reply;
}

class SpawnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = testing::CountOpenFds();
    std::vector<SpawnerEntry> entries = {{.name = "write", .run = WritePayload},
                                         {.name = "echo", .call = EchoWithAPipe}};
    spawner_ = std::move(*SpawnerClient::Start(std::move(entries)));
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(
        *Reaper::CreateWithSpawner(*loop_, *spawner_, [this](const Status&) { lost_ = true; }));
  }
  void TearDown() override {
    reaper_.reset();
    loop_.reset();
    pid_t pid = spawner_->pid();
    spawner_.reset();  // EOF: the spawner exits
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(testing::CountOpenFds(), fds_before_);
  }

  CommandResult RunToEnd(std::vector<std::string> argv) {
    std::optional<CommandResult> result;
    auto cmd = Command::Start(*loop_, *reaper_, SpawnOptions{.argv = std::move(argv)}, "",
                              [&](CommandResult r) { result = r; });
    EXPECT_TRUE(cmd.has_value()) << cmd.error().ToString();
    if (!cmd) return {};
    EXPECT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, milliseconds(5000)));
    return result.value_or(CommandResult{});
  }

  int fds_before_ = 0;
  std::unique_ptr<SpawnerClient> spawner_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  bool lost_ = false;
};

TEST_F(SpawnerTest, CommandRunsAsTheSpawnersChildWithItsPipes) {
  CommandResult r = RunToEnd({"/bin/sh", "-c", "echo $PPID; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, std::to_string(spawner_->pid()) + "\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(lost_);
}

TEST_F(SpawnerTest, ExecFailureIsASynchronousNotFound) {
  Result<pid_t> pid = reaper_->Spawn(SpawnOptions{.argv = {"/no/such/program"}});
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().code(), Code::kNotFound) << pid.error().ToString();
}

TEST_F(SpawnerTest, OrphansAreReapedByTheSpawnerAndReachTheReaper) {
  // The shell exits at once; its background child is reparented to the
  // spawner (a subreaper), as runc's container processes are.
  CommandResult r = RunToEnd({"/bin/sh", "-c", "(sleep 0.2; exit 4) & echo $!"});
  ASSERT_EQ(r.exit_status, 0);
  pid_t orphan = std::stoi(r.out);
  std::optional<int> status;
  reaper_->Watch(orphan, [&](int s) { status = s; });
  EXPECT_TRUE(loop_->RunUntil([&] { return status.has_value(); }, milliseconds(5000)));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ExitStatusFromWait(*status), 4);
}

TEST_F(SpawnerTest, EntriesGetTheirPayloadAndDescriptors) {
  Result<Pipe> pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  Result<pid_t> pid = spawner_->Run(0, "hello", {pipe->write.get()});
  ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
  pipe->write.reset();
  std::optional<int> status;
  reaper_->Watch(*pid, [&](int s) { status = s; });
  EXPECT_TRUE(loop_->RunUntil([&] { return status.has_value(); }, milliseconds(5000)));
  EXPECT_EQ(ExitStatusFromWait(status.value_or(0)), 5);
  char buf[16] = {};
  EXPECT_EQ(::read(pipe->read.get(), buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "hello");
}

TEST_F(SpawnerTest, UnknownEntryAndBadRequestsAreInvalidArgument) {
  Result<pid_t> pid = spawner_->Run(7, "", {});
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().code(), Code::kInvalidArgument);
  pid = spawner_->Run(0, "x", {});  // the entry wants one descriptor
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().code(), Code::kInvalidArgument);
  // The spawner still serves.
  EXPECT_EQ(RunToEnd({"/bin/true"}).exit_status, 0);
}

TEST_F(SpawnerTest, CallsAnswerWithDataAndDescriptors) {
  Result<SpawnerReply> reply = spawner_->Call(1, "tap", {});
  ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
  EXPECT_EQ(reply->data, "tap!");
  ASSERT_EQ(reply->fds.size(), 1u);
  char buf[8] = {};
  EXPECT_EQ(::read(reply->fds[0].get(), buf, sizeof buf), 3);
  EXPECT_STREQ(buf, "tap");
  // The entry's error comes back with its code; a call of a run entry, or
  // a run of a call entry, is no such entry.
  Result<Pipe> pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  reply = spawner_->Call(1, "x", {pipe->write.get()});
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code(), Code::kInvalidArgument);
  EXPECT_NE(reply.error().message().find("wants no descriptor"), std::string::npos);
  reply = spawner_->Call(0, "x", {});
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().message(), "spawner: no such entry");
  Result<pid_t> pid = spawner_->Run(1, "x", {});
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().message(), "spawner: no such entry");
  EXPECT_EQ(RunToEnd({"/bin/true"}).exit_status, 0);
}

// A jail travels with the spawn: the child keeps only its capabilities.
TEST_F(SpawnerTest, AJailedSpawnKeepsOnlyItsCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "a jail needs root";
  auto run = [&](SpawnJail jail) {
    Result<Pipe> out = MakePipe();
    EXPECT_TRUE(out.has_value());
    Result<pid_t> pid = reaper_->Spawn(SpawnOptions{
        .argv = {"/bin/sh", "-c",
                 "grep -E '^(Uid|Groups|CapEff|NoNewPrivs)' /proc/self/status; ls /etc"},
        .fds = {{1, out->write.get()}},
        .jail = std::move(jail)});
    EXPECT_TRUE(pid.has_value()) << pid.error().ToString();
    out->write.reset();
    std::optional<int> status;
    if (pid) reaper_->Watch(*pid, [&](int s) { status = s; });
    EXPECT_TRUE(loop_->RunUntil([&] { return status.has_value(); }, milliseconds(5000)));
    CommandResult result;
    char buf[512];
    for (ssize_t n; (n = ::read(out->read.get(), buf, sizeof buf)) > 0;) result.out.append(buf, n);
    result.exit_status = ExitStatusFromWait(status.value_or(0));
    return result;
  };
  CommandResult r = run(SpawnJail{.hide = {"/etc"}, .capabilities = 0x1f});
  EXPECT_EQ(r.exit_status, 0) << r.out;
  EXPECT_TRUE(r.out.starts_with("Uid:\t0\t0\t0\t0\n")) << r.out;
  EXPECT_TRUE(r.out.ends_with("CapEff:\t000000000000001f\nNoNewPrivs:\t1\n")) << r.out;
  // A user of its own travels too.
  r = run(SpawnJail{.hide = {"/etc"}, .uid = 2100000007, .gid = 2100000000, .groups = {7}});
  EXPECT_EQ(r.exit_status, 0) << r.out;
  EXPECT_EQ(r.out,
            "Uid:\t2100000007\t2100000007\t2100000007\t2100000007\nGroups:\t7 \n"
            "CapEff:\t0000000000000000\nNoNewPrivs:\t1\n");
}

TEST_F(SpawnerTest, ManyExitsArriveEachOnce) {
  constexpr int kCount = 300;  // more than the exits channel buffers
  std::vector<int> seen(kCount, 0);
  for (int i = 0; i < kCount; ++i) {
    Result<pid_t> pid = reaper_->Spawn(SpawnOptions{.argv = {"/bin/true"}});
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
    reaper_->Watch(*pid, [&seen, i](int) { ++seen[i]; });
  }
  EXPECT_TRUE(loop_->RunUntil(
      [&] { return std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }); },
      milliseconds(20000)));
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kCount);
}

// A spawner with a check: what it refuses gets the check's error back and
// is never started (the child would have written the marker file).
TEST(SpawnerCheckTest, ARefusedSpawnStartsNothing) {
  char dir[] = "/tmp/hull-spawner-check-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string marker = std::string(dir) + "/ran";
  SpawnCheck check = [](const SpawnOptions& options) {
    return options.argv[0] == "/bin/true" ? Status::Ok() : PermissionDeniedError("not /bin/true");
  };
  auto spawner = SpawnerClient::Start({}, {}, check);
  ASSERT_TRUE(spawner.has_value()) << spawner.error().ToString();
  Result<pid_t> refused = (*spawner)->Spawn({.argv = {"/bin/sh", "-c", "touch " + marker}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kPermissionDenied);
  Result<pid_t> allowed = (*spawner)->Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(allowed.has_value()) << allowed.error().ToString();
  pid_t pid = (*spawner)->pid();
  spawner->reset();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hull
