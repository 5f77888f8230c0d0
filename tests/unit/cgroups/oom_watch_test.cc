// The OOM watch on the event loop. v2 runs a real inotify on a fake
// memory.events; v1 registration is checked against a fake tree (the eventfd
// itself only fires on a real memory cgroup: see real_host_test.cc).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/event_loop.h"
#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using std::chrono::milliseconds;
using testing::FakeHost;

constexpr pid_t kOomPid = 555;
// How long a watch gets to (wrongly) fire before a test concludes it did not.
constexpr milliseconds kQuiet{200};
constexpr milliseconds kDeadline{5000};

int CountOpenFds() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (::readdir(dir) != nullptr) ++n;
  ::closedir(dir);
  return n;
}

std::string Events(uint64_t max, uint64_t oom, uint64_t oom_kill) {
  return "low 0\nhigh 0\nmax " + std::to_string(max) + "\noom " + std::to_string(oom) +
         "\noom_kill " + std::to_string(oom_kill) + "\noom_group_kill 0\n";
}

class OomWatchV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.AddUnified();
    host_.SetProcCgroup(kOomPid, "0::/pod/ctr\n");
    WriteEvents(Events(0, 0, 0));
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }

  // Rewrites memory.events in place (same inode), as the kernel's updates do.
  void WriteEvents(const std::string& content) { host_.Write("pod/ctr/memory.events", content); }

  Result<EventHandle> Watch() {
    return WatchOom(
        *loop_, kOomPid, [this] { ++calls_; }, host_.roots());
  }
  bool WaitForCalls(int n, milliseconds timeout) {
    return loop_->RunUntil([&] { return calls_ >= n; }, timeout);
  }

  FakeHost host_;
  std::unique_ptr<EventLoop> loop_;
  int calls_ = 0;
};

TEST_F(OomWatchV2Test, FiresWhenOomKillIncreases) {
  auto watch = Watch();
  ASSERT_TRUE(watch.has_value()) << watch.error().ToString();
  WriteEvents(Events(1, 1, 1));
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
  EXPECT_EQ(calls_, 1);
  WriteEvents(Events(2, 3, 4));  // three more kills between two wake-ups: one call
  EXPECT_TRUE(WaitForCalls(2, kDeadline));
  EXPECT_FALSE(WaitForCalls(3, kQuiet));
  EXPECT_EQ(calls_, 2);
}

TEST_F(OomWatchV2Test, OtherCountersDoNotFire) {
  WriteEvents(Events(0, 0, 2));
  auto watch = Watch();
  ASSERT_TRUE(watch.has_value());
  WriteEvents(Events(5, 1, 2));  // max and oom moved, oom_kill did not
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
  WriteEvents(Events(5, 1, 1));  // lower
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
  EXPECT_EQ(calls_, 0);
  WriteEvents(Events(5, 1, 2));  // up again from the last value seen
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
}

TEST_F(OomWatchV2Test, DroppingTheHandleStopsItAndClosesItsFds) {
  int before = CountOpenFds();
  {
    auto watch = Watch();
    ASSERT_TRUE(watch.has_value());
    EXPECT_GT(CountOpenFds(), before);
  }
  EXPECT_EQ(CountOpenFds(), before);
  WriteEvents(Events(1, 1, 1));
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
}

TEST_F(OomWatchV2Test, HandleMayBeDroppedInsideTheCallback) {
  EventHandle handle;
  auto manager = Manager::ForPid(kOomPid, host_.roots());
  ASSERT_TRUE(manager.has_value());
  auto watch = manager->WatchOom(*loop_, [&] {
    ++calls_;
    handle.Reset();
  });
  ASSERT_TRUE(watch.has_value());
  handle = std::move(*watch);
  WriteEvents(Events(1, 1, 1));
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
  EXPECT_FALSE(handle.active());
  WriteEvents(Events(2, 2, 2));
  EXPECT_FALSE(WaitForCalls(2, kQuiet));
}

TEST_F(OomWatchV2Test, RemovedCgroupGoesQuiet) {
  auto watch = Watch();
  ASSERT_TRUE(watch.has_value());
  ASSERT_EQ(::unlink((host_.cgroupfs() / "pod/ctr/memory.events").c_str()), 0);
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
  WriteEvents(Events(9, 9, 9));  // a new file at the old name is not watched
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
}

TEST_F(OomWatchV2Test, NoMemoryEventsIsAnError) {
  ASSERT_EQ(::unlink((host_.cgroupfs() / "pod/ctr/memory.events").c_str()), 0);
  auto watch = Watch();
  ASSERT_FALSE(watch.has_value());
  EXPECT_EQ(watch.error().code(), Code::kNotFound);
}

// v1 on a fake tree. cgroup.event_control is a plain file here, so the test
// reads which eventfd the watch registered and signals it itself, standing in
// for the kernel.
class OomWatchV1FakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.AddV1("memory", "memory");
    host_.AddUnified("unified");
    host_.SetProcCgroup(kOomPid, "4:memory:/ctr\n0::/\n");
    SetOomControl("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    host_.Write("memory/ctr/cgroup.event_control", "");
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }

  void SetOomControl(const std::string& content) {
    host_.Write("memory/ctr/memory.oom_control", content);
  }
  void SetOomKill(uint64_t n) {
    SetOomControl("oom_kill_disable 0\nunder_oom 0\noom_kill " + std::to_string(n) + "\n");
  }

  // Starts the watch and returns the eventfd it registered.
  void Watch() {
    auto watch = WatchOom(
        *loop_, kOomPid, [this] { ++calls_; }, host_.roots());
    ASSERT_TRUE(watch.has_value()) << watch.error().ToString();
    watch_ = std::move(*watch);
    std::ifstream in(host_.cgroupfs() / "memory/ctr/cgroup.event_control");
    in >> event_fd_ >> control_fd_;
    ASSERT_TRUE(in) << "expected \"<eventfd> <oom_control fd>\"";
  }
  // What the kernel does on an OOM in the cgroup.
  void Notify() {
    uint64_t one = 1;
    ASSERT_EQ(::write(event_fd_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
  bool WaitForCalls(int n, milliseconds timeout) {
    return loop_->RunUntil([&] { return calls_ >= n; }, timeout);
  }

  FakeHost host_;
  std::unique_ptr<EventLoop> loop_;
  EventHandle watch_;
  int event_fd_ = -1;
  int control_fd_ = -1;
  int calls_ = 0;
};

TEST_F(OomWatchV1FakeTest, RegistersEventfdThroughEventControl) {
  int before = CountOpenFds();
  ASSERT_NO_FATAL_FAILURE(Watch());
  char target[64] = {};
  std::string link = "/proc/self/fd/" + std::to_string(event_fd_);
  ASSERT_GT(::readlink(link.c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "anon_inode:[eventfd]");
  EXPECT_NE(event_fd_, control_fd_);
  watch_.Reset();
  EXPECT_EQ(CountOpenFds(), before);  // eventfd, control file and directory all closed
}

TEST_F(OomWatchV1FakeTest, NotificationWithAKillFires) {
  ASSERT_NO_FATAL_FAILURE(Watch());
  SetOomKill(1);
  Notify();
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
  SetOomKill(2);
  Notify();
  EXPECT_TRUE(WaitForCalls(2, kDeadline));
}

TEST_F(OomWatchV1FakeTest, KillCountedAfterTheNotificationIsSeen) {
  // The kernel signals before it kills: the counter moves a little later.
  ASSERT_NO_FATAL_FAILURE(Watch());
  Notify();
  EventHandle later = loop_->AddTimer(milliseconds(50), [this] { SetOomKill(1); });
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
  EXPECT_FALSE(WaitForCalls(2, kQuiet));
}

TEST_F(OomWatchV1FakeTest, NotificationWithoutAKillIsDropped) {
  ASSERT_NO_FATAL_FAILURE(Watch());
  Notify();
  // Longer than all the rechecks together (about 1.3 s).
  EXPECT_FALSE(WaitForCalls(1, milliseconds(2000)));
}

TEST_F(OomWatchV1FakeTest, KernelWithoutCounterReportsEveryNotification) {
  SetOomControl("oom_kill_disable 0\nunder_oom 0\n");
  ASSERT_NO_FATAL_FAILURE(Watch());
  Notify();
  EXPECT_TRUE(WaitForCalls(1, kDeadline));
  Notify();
  EXPECT_TRUE(WaitForCalls(2, kDeadline));
}

TEST_F(OomWatchV1FakeTest, RemovedCgroupGoesQuiet) {
  ASSERT_NO_FATAL_FAILURE(Watch());
  // rmdir: the kernel signals the eventfd and the files are gone.
  ASSERT_EQ(::unlink((host_.cgroupfs() / "memory/ctr/memory.oom_control").c_str()), 0);
  Notify();
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
  SetOomKill(5);  // a new file at the old name
  EXPECT_FALSE(WaitForCalls(1, kQuiet));
}

TEST(OomWatchV1MissingTest, MissingMemoryCgroupIsNotFound) {
  FakeHost host;
  host.AddV1("memory", "memory");
  host.SetProcCgroup(kOomPid, "4:memory:/ctr\n0::/\n");
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  auto watch = WatchOom(
      **loop, kOomPid, [] {}, host.roots());
  ASSERT_FALSE(watch.has_value());
  EXPECT_EQ(watch.error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace hull::cgroups
