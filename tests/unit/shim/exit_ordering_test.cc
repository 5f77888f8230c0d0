// docs/exit-ordering.md, rule by rule, through the TaskService: a process's
// exit follows its start event, the init's exit follows every exec's (and
// every exec start under way), a container without its own pid namespace has
// the rest of it killed before the init's exit is published, Wait answers
// only once the exit is queued, and the events come in order.
#include <signal.h>

#include "tests/unit/shim/shim_harness.h"

namespace hull::shim::testing {
namespace {

using ExitOrderingTest = ShimHarness;

// ---- 1. A process's exit follows its start ----

TEST_F(ExitOrderingTest, InitExitDuringRuntimeStartIsPublishedAfterTaskStart) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  fake().Hold("Start");
  auto start = StartAsync("c1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Start") == 1; }));
  ASSERT_TRUE(fake().FireInitExit("c1", 3));
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/exit c1")) << "exit published before the start";
  EXPECT_FALSE(start->done());

  ASSERT_TRUE(fake().Complete("Start"));
  ASSERT_TRUE(Await(start));
  EXPECT_TRUE(start->result->has_value());
  int started = sink_->IndexOf("/tasks/start c1");
  int exited = sink_->IndexOf("/tasks/exit c1 3");
  ASSERT_GE(started, 0);
  ASSERT_GE(exited, 0);
  EXPECT_LT(started, exited);
  auto state = State("c1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->status(), containerd::v1::types::STOPPED);
  EXPECT_EQ(state->exit_status(), 3u);
}

TEST_F(ExitOrderingTest, ExecExitBeforeItsPidIsReadIsPublishedAfterExecStarted) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  fake().Hold("Exec");
  auto start = StartAsync("c1", "e1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Exec") == 1; }));
  // The exec exits while `exec --detach` is still running: the reaper
  // collects it before anybody claims its pid.
  fake().ExitExec("e1", 7);
  ASSERT_TRUE(RunUntil([&] { return reaper_->unclaimed_for_testing() == 1; }));

  ASSERT_TRUE(fake().Complete("Exec"));
  ASSERT_TRUE(Await(start));
  ASSERT_TRUE(start->result->has_value()) << start->result->error().ToString();
  EXPECT_EQ(static_cast<pid_t>((*start->result)->pid()), fake().ExecPid("e1"));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit e1"); }));
  EXPECT_LT(sink_->IndexOf("/tasks/exec-started e1"), sink_->IndexOf("/tasks/exit e1 7"));
  EXPECT_EQ(StatusOf("c1", "e1"), containerd::v1::types::STOPPED);
}

// ---- 2. The init's exit follows every exec's ----

TEST_F(ExitOrderingTest, InitExitIsHeldUntilTheRunningExecExits) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(Start("c1", "e1").has_value());
  auto wait = WaitAsync("c1");

  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  Barrier();
  EXPECT_EQ(StatusOf("c1"), containerd::v1::types::STOPPED) << "the exit is recorded at once";
  EXPECT_FALSE(sink_->Has("/tasks/exit c1"));
  EXPECT_FALSE(wait->done()) << "Wait answered while the init's exit is held";

  fake().ExitExec("e1", 137);
  ASSERT_TRUE(Await(wait));
  ASSERT_TRUE(wait->result->has_value());
  EXPECT_EQ((*wait->result)->exit_status(), 0u);
  int exec_exit = sink_->IndexOf("/tasks/exit e1 137");
  int init_exit = sink_->IndexOf("/tasks/exit c1 0");
  ASSERT_GE(exec_exit, 0);
  ASSERT_GE(init_exit, 0);
  EXPECT_LT(exec_exit, init_exit);
  // A pid namespace of its own: the kernel ends the rest, hull kills nothing.
  EXPECT_EQ(fake().count("Kill"), 0u);
}

// State shows the init stopped while its exit is held, so a client may try
// to delete it then: that must not publish /tasks/delete before (or instead
// of) the init's /tasks/exit, nor drop the Wait calls parked on it.
TEST_F(ExitOrderingTest, DeleteOfAnInitWhoseExitIsHeldWaitsForTheExit) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(Start("c1", "e1").has_value());
  auto wait = WaitAsync("c1");
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  Barrier();
  ASSERT_EQ(StatusOf("c1"), containerd::v1::types::STOPPED);

  EXPECT_EQ(Delete("c1").status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(sink_->Has("/tasks/delete c1"));
  EXPECT_EQ(fake().count("Delete"), 0u);

  fake().ExitExec("e1", 0);
  ASSERT_TRUE(Await(wait));
  ASSERT_TRUE(wait->result->has_value()) << wait->result->error().ToString();
  auto deleted = Delete("c1");
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_LT(sink_->IndexOf("/tasks/exit c1 0"), sink_->IndexOf("/tasks/delete c1"));
}

TEST_F(ExitOrderingTest, InitExitWaitsForAnExecStartUnderWay) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  fake().Hold("Exec");
  auto start = StartAsync("c1", "e1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Exec") == 1; }));

  ASSERT_TRUE(fake().FireInitExit("c1", 2));
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/exit c1"));

  ASSERT_TRUE(fake().Complete("Exec"));
  ASSERT_TRUE(Await(start));
  ASSERT_TRUE(start->result->has_value());
  Barrier();
  EXPECT_TRUE(sink_->Has("/tasks/exec-started e1"));
  EXPECT_FALSE(sink_->Has("/tasks/exit c1")) << "the started exec still runs";

  fake().ExitExec("e1", 0);
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_LT(sink_->IndexOf("/tasks/exec-started e1"), sink_->IndexOf("/tasks/exit e1 0"));
  EXPECT_LT(sink_->IndexOf("/tasks/exit e1 0"), sink_->IndexOf("/tasks/exit c1 2"));
}

TEST_F(ExitOrderingTest, AFailedExecStartReleasesTheHeldInitExit) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  fake().Hold("Exec");
  auto start = StartAsync("c1", "e1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Exec") == 1; }));
  ASSERT_TRUE(fake().FireInitExit("c1", 1));
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/exit c1"));

  ASSERT_TRUE(fake().Complete("Exec", InternalError("exec failed")));
  ASSERT_TRUE(Await(start));
  EXPECT_EQ(start->code(), Code::kInternal);
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1 1"); }));
  EXPECT_FALSE(sink_->Has("/tasks/exec-started e1"));
}

// ---- Wait ----

TEST_F(ExitOrderingTest, WaitAnswersOnlyOnceTheExitEventIsQueued) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  tv2::WaitRequest request;
  request.set_id("c1");
  std::optional<Result<tv2::WaitResponse>> reply;
  bool exit_queued_at_reply = false;
  client_->CallUnary<tv2::WaitResponse>(kTaskService, "Wait", request, {},
                                        [&](Result<tv2::WaitResponse> r) {
                                          exit_queued_at_reply = sink_->Has("/tasks/exit c1 5");
                                          reply = std::move(r);
                                        });
  Barrier();
  EXPECT_FALSE(reply.has_value());
  ASSERT_TRUE(fake().FireInitExit("c1", 5));
  ASSERT_TRUE(RunUntil([&] { return reply.has_value(); }));
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ((*reply)->exit_status(), 5u);
  EXPECT_TRUE(exit_queued_at_reply);

  // A Wait after the exit was published answers at once.
  auto late = WaitAsync("c1");
  ASSERT_TRUE(Await(late));
  ASSERT_TRUE(late->result->has_value());
  EXPECT_EQ((*late->result)->exit_status(), 5u);
}

// ---- Events in order ----

TEST_F(ExitOrderingTest, ALifecyclePublishesItsEventsInOrder) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(Start("c1", "e1").has_value());
  fake().ExitExec("e1", 0);
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit e1"); }));
  ASSERT_TRUE(Delete("c1", "e1").has_value());
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  auto deleted = Delete("c1");
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_EQ(sink_->lines(),
            (std::vector<std::string>{"/tasks/create c1", "/tasks/start c1", "/tasks/exec-added e1",
                                      "/tasks/exec-started e1", "/tasks/exit e1 0",
                                      "/tasks/exit c1 0", "/tasks/delete c1"}));
}

TEST_F(ExitOrderingTest, OomKillIsPublishedBeforeTheInitExit) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_EQ(fake().count("WatchOom"), 1u);
  fake().SetOomKills("c1", 1);
  ASSERT_TRUE(fake().FireInitExit("c1", 137));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  int oom = sink_->IndexOf("/tasks/oom c1");
  ASSERT_GE(oom, 0);
  EXPECT_LT(oom, sink_->IndexOf("/tasks/exit c1 137"));
  // The watcher's late notification of the same kill publishes nothing more.
  fake().FireOom("c1");
  Barrier();
  EXPECT_EQ(sink_->Count("/tasks/oom"), 1u);
}

TEST_F(ExitOrderingTest, OomKillDuringRuntimeStartIsPublishedAfterTaskStart) {
  // A process that allocates at once is OOM-killed before `runc start` has
  // answered: its /tasks/oom still follows its /tasks/start.
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  fake().Hold("Start");
  auto start = StartAsync("c1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Start") == 1; }));
  fake().SetOomKills("c1", 1);
  fake().FireOom("c1");
  ASSERT_TRUE(fake().FireInitExit("c1", 137));
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/oom c1")) << "OOM kill published before the start";

  ASSERT_TRUE(fake().Complete("Start"));
  ASSERT_TRUE(Await(start));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  int started = sink_->IndexOf("/tasks/start c1");
  int oom = sink_->IndexOf("/tasks/oom c1");
  ASSERT_GE(started, 0);
  ASSERT_GE(oom, 0);
  EXPECT_LT(started, oom);
  EXPECT_LT(oom, sink_->IndexOf("/tasks/exit c1 137"));
  EXPECT_EQ(sink_->Count("/tasks/oom"), 1u);
}

TEST_F(ExitOrderingTest, OomNotificationDuringStartWithoutACounterIsPublishedAfterTaskStart) {
  // A backend without an OOM counter: the notification alone is trusted,
  // and kept until the start is published.
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  fake().Hold("Start");
  auto start = StartAsync("c1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Start") == 1; }));
  fake().FireOom("c1");
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/oom c1"));
  ASSERT_TRUE(fake().Complete("Start"));
  ASSERT_TRUE(Await(start));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/oom c1"); }));
  EXPECT_LT(sink_->IndexOf("/tasks/start c1"), sink_->IndexOf("/tasks/oom c1"));
}

// ---- An init killed before it was started (issue 12, item 1) ----

TEST_F(ExitOrderingTest, NeverStartedInitKilledReportsItsExit) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  ASSERT_TRUE(Kill("c1", SIGKILL).ok());
  auto kills = fake().calls_of("Kill");
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].signal, SIGKILL);
  EXPECT_FALSE(kills[0].all);

  ASSERT_TRUE(fake().FireInitExit("c1", 137));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1 137"); }));
  EXPECT_FALSE(sink_->Has("/tasks/start c1"));
  auto wait = WaitAsync("c1");
  ASSERT_TRUE(Await(wait));
  ASSERT_TRUE(wait->result->has_value());
  EXPECT_EQ((*wait->result)->exit_status(), 137u);

  auto deleted = Delete("c1");
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_EQ(deleted->exit_status(), 137u);
  EXPECT_TRUE(sink_->Has("/tasks/delete c1"));
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("c1") == nullptr; }));
  EXPECT_EQ(State("c1").status().code(), Code::kNotFound);
}

// ---- No pid namespace of its own: the rest is killed first ----

class SharedPidNamespaceTest : public ShimHarness {
 protected:
  void CheckRestKilledBeforeInitExit(const BundleSpec& spec) {
    ASSERT_NO_FATAL_FAILURE(Started("c1", spec));
    fake().Hold("Kill");
    ASSERT_TRUE(fake().FireInitExit("c1", 0));
    ASSERT_TRUE(RunUntil([&] { return fake().pending("Kill") == 1; }));
    auto kills = fake().calls_of("Kill");
    ASSERT_EQ(kills.size(), 1u);
    EXPECT_TRUE(kills[0].all);
    EXPECT_EQ(kills[0].signal, SIGKILL);
    EXPECT_EQ(kills[0].id, "c1");
    Barrier();
    EXPECT_FALSE(sink_->Has("/tasks/exit c1")) << "exit published before kill --all finished";

    // Nothing left to kill is what was wanted: the exit follows as well.
    ASSERT_TRUE(fake().Complete("Kill", NotFoundError("container not running")));
    ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1 0"); }));
  }
};

TEST_F(SharedPidNamespaceTest, PidNamespaceByPath) {
  CheckRestKilledBeforeInitExit(BundleSpec{.pid_ns_path = "/proc/1/ns/pid"});
}

TEST_F(SharedPidNamespaceTest, NoPidNamespace) {
  CheckRestKilledBeforeInitExit(BundleSpec{.own_pid_ns = false});
}

TEST_F(SharedPidNamespaceTest, InitExitWaitsForTheKillAndTheExec) {
  ASSERT_NO_FATAL_FAILURE(Started("c1", BundleSpec{.own_pid_ns = false}));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(Start("c1", "e1").has_value());
  fake().Hold("Kill");
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Kill") == 1; }));
  ASSERT_TRUE(fake().Complete("Kill"));
  Barrier();
  EXPECT_FALSE(sink_->Has("/tasks/exit c1")) << "the exec has not exited yet";
  fake().ExitExec("e1", 137);
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_LT(sink_->IndexOf("/tasks/exit e1 137"), sink_->IndexOf("/tasks/exit c1 0"));
}

}  // namespace
}  // namespace hull::shim::testing
