// ExitTracker alone: each exit-ordering rule (docs/exit-ordering.md) as a
// sequence of reports and the order of what the tracker publishes, with no
// loop, backend or ttrpc. The Container-level tests (exit_ordering_test.cc)
// drive the same rules through the Task API.
#include "shim/exit_tracker.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hull::shim {
namespace {

class ExitTrackerTest : public ::testing::Test {
 protected:
  ExitTrackerTest()
      : init_("c1", "", StdioConfig{}),
        exec_("c1", "e1", StdioConfig{}),
        tracker_(&init_, ExitTracker::Hooks{
                             .publish_exit =
                                 [this](Process* p) { log_.push_back("exit " + p->event_id()); },
                             .publish_oom = [this] { log_.push_back("oom"); },
                             .oom_kill_count = [this] { return oom_kills_; },
                             .end_the_rest =
                                 [this](std::function<void()> then) {
                                   log_.push_back("end the rest");
                                   end_the_rest_ = std::move(then);
                                 }}) {}

  // The init started: its start event is out.
  void StartInit() {
    tracker_.StartBegun(&init_);
    ASSERT_TRUE(init_.TransitionTo(ProcessState::kRunning).ok());
    log_.push_back("start c1");
    tracker_.StartPublished(&init_);
  }

  Process init_;
  Process exec_;
  std::optional<uint64_t> oom_kills_ = 0;
  std::function<void()> end_the_rest_;
  std::vector<std::string> log_;
  ExitTracker tracker_;
};

using Log = std::vector<std::string>;

TEST_F(ExitTrackerTest, AnExitBeforeTheStartEventFollowsIt) {
  tracker_.StartBegun(&init_);
  tracker_.OnExit(&init_, 0);
  EXPECT_EQ(log_, Log{});
  ASSERT_TRUE(init_.TransitionTo(ProcessState::kRunning).ok());
  log_.push_back("start c1");
  tracker_.StartPublished(&init_);
  EXPECT_EQ(log_, (Log{"start c1", "exit c1"}));
}

TEST_F(ExitTrackerTest, AnInitKilledBeforeItWasStartedIsReportedAtOnce) {
  tracker_.OnExit(&init_, 137);
  EXPECT_EQ(log_, Log{"exit c1"});
  EXPECT_EQ(init_.exit_status(), 137u);
}

TEST_F(ExitTrackerTest, TheInitsExitWaitsForEveryExec) {
  StartInit();
  tracker_.Track(&exec_);
  tracker_.StartBegun(&exec_);
  ASSERT_TRUE(exec_.TransitionTo(ProcessState::kRunning).ok());
  log_.push_back("start e1");
  tracker_.StartPublished(&exec_);
  tracker_.OnExit(&init_, 0);
  EXPECT_TRUE(tracker_.init_exit_held());
  tracker_.OnExit(&exec_, 1);
  EXPECT_EQ(log_, (Log{"start c1", "start e1", "exit e1", "exit c1"}));
}

TEST_F(ExitTrackerTest, ASharedPidNamespaceIsEmptiedBeforeTheInitsExit) {
  tracker_.set_shares_pid_namespace(true);
  StartInit();
  tracker_.OnExit(&init_, 0);
  EXPECT_EQ(log_, (Log{"start c1", "end the rest"}));
  ASSERT_TRUE(end_the_rest_);
  end_the_rest_();
  EXPECT_EQ(log_, (Log{"start c1", "end the rest", "exit c1"}));
}

TEST_F(ExitTrackerTest, AnOomKillGoesBeforeTheExitItCaused) {
  StartInit();
  tracker_.OomWatchStarted();
  oom_kills_ = 1;  // counted by the cgroup; the watcher has not said so yet
  tracker_.OnExit(&init_, 137);
  EXPECT_EQ(log_, (Log{"start c1", "oom", "exit c1"}));
  tracker_.OomNoticed();  // the watcher, late
  EXPECT_EQ(log_, (Log{"start c1", "oom", "exit c1"})) << "one kill, one TaskOOM";
}

TEST_F(ExitTrackerTest, AnOomKillDuringTheStartFollowsTheStartEvent) {
  tracker_.OomWatchStarted();
  tracker_.StartBegun(&init_);
  oom_kills_ = 1;
  tracker_.OomNoticed();
  tracker_.OnExit(&init_, 137);
  EXPECT_EQ(log_, Log{});
  ASSERT_TRUE(init_.TransitionTo(ProcessState::kRunning).ok());
  log_.push_back("start c1");
  tracker_.StartPublished(&init_);
  EXPECT_EQ(log_, (Log{"start c1", "oom", "exit c1"}));
}

TEST_F(ExitTrackerTest, WithoutACounterANotificationIsTrustedAndAnExitAloneIsNot) {
  oom_kills_ = std::nullopt;
  StartInit();
  tracker_.OomWatchStarted();
  tracker_.OomNoticed();
  tracker_.OnExit(&init_, 0);
  EXPECT_EQ(log_, (Log{"start c1", "oom", "exit c1"}));
}

TEST_F(ExitTrackerTest, NoOomIsPublishedOnceUnwatched) {
  StartInit();
  tracker_.OomWatchStarted();
  tracker_.OomUnwatched();
  oom_kills_ = 3;
  tracker_.OomNoticed();
  tracker_.OnExit(&init_, 0);
  EXPECT_EQ(log_, (Log{"start c1", "exit c1"}));
}

}  // namespace
}  // namespace hull::shim
