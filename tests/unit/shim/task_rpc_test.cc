// The Task RPCs through the TaskService: the state each call moves a
// container or process to, and the code a call in the wrong state (or for an
// unknown container) gets.
#include <signal.h>

#include "tests/unit/shim/shim_harness.h"

namespace hull::shim::testing {
namespace {

using TaskRpcTest = ShimHarness;
using containerd::v1::types::CREATED;
using containerd::v1::types::PAUSED;
using containerd::v1::types::RUNNING;
using containerd::v1::types::STOPPED;

// ---- Create ----

TEST_F(TaskRpcTest, CreateAnswersThePidTheRuntimeWrote) {
  factory_.configure = [](FakeBackend& b) { b.SetInitPid("c1", 777); };
  auto created = CreateTask("c1", MakeBundle("c1"));
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  EXPECT_EQ(created->pid(), 777u);
  auto state = State("c1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->status(), CREATED);
  EXPECT_EQ(state->pid(), 777u);
  EXPECT_TRUE(sink_->Has("/tasks/create c1"));
  auto creates = fake().calls_of("Create");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].create->bundle, (root_ / "c1").string());
  EXPECT_FALSE(creates[0].create->joins_sandbox);
  EXPECT_EQ(fake().count("WatchInitExit"), 1u);
}

TEST_F(TaskRpcTest, CreateWithAnExistingIdIsAlreadyExists) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  EXPECT_EQ(CreateTask("c1", MakeBundle("c1-again")).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(StatusOf("c1"), CREATED);
}

TEST_F(TaskRpcTest, CreateOfAnIdBeingCreatedIsAlreadyExists) {
  factory_.configure = [](FakeBackend& b) { b.Hold("Create"); };
  auto first =
      CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("c1", MakeBundle("c1")));
  ASSERT_TRUE(RunUntil([&] { return factory_.last && fake().pending("Create") == 1; }));
  EXPECT_EQ(State("c1").status().code(), Code::kNotFound) << "not created yet";
  EXPECT_EQ(CreateTask("c1", MakeBundle("c1-again")).status().code(), Code::kAlreadyExists);
  ASSERT_TRUE(fake().Complete("Create"));
  ASSERT_TRUE(Await(first));
  EXPECT_TRUE(first->result->has_value());
  EXPECT_EQ(StatusOf("c1"), CREATED);
}

TEST_F(TaskRpcTest, CreateWithMalformedConfigIsInvalidArgumentAndLeavesNothing) {
  std::string bundle = MakeBundleWith("c1", "{\"process\": [not json");
  EXPECT_EQ(CreateTask("c1", bundle).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("c1") == nullptr; }));
  EXPECT_EQ(State("c1").status().code(), Code::kNotFound);
  EXPECT_EQ(factory_.made, 0) << "no backend for a container that never got that far";
  // The id is free again.
  MakeBundle("c1");
  EXPECT_TRUE(CreateTask("c1", bundle).has_value());
}

TEST_F(TaskRpcTest, FailedRuntimeCreateKeepsItsCodeAndLeavesNothing) {
  factory_.configure = [](FakeBackend& b) { b.Hold("Create"); };
  auto create =
      CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("c1", MakeBundle("c1")));
  ASSERT_TRUE(RunUntil([&] { return factory_.last && fake().pending("Create") == 1; }));
  ASSERT_TRUE(fake().Complete("Create", PermissionDeniedError("runtime says no")));
  ASSERT_TRUE(Await(create));
  EXPECT_EQ(create->code(), Code::kPermissionDenied);
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("c1") == nullptr; }));
  EXPECT_EQ(State("c1").status().code(), Code::kNotFound);
  EXPECT_FALSE(sink_->Has("/tasks/create c1"));
}

// ---- Start ----

TEST_F(TaskRpcTest, StartRunsTheInitOnce) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  auto started = Start("c1");
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(StatusOf("c1"), RUNNING);
  EXPECT_EQ(Start("c1").status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(fake().count("Start"), 1u);
}

TEST_F(TaskRpcTest, AFailedStartEndsTheContainerAndReportsItStopped) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  fake().Hold("Start");
  auto start = StartAsync("c1");
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Start") == 1; }));
  ASSERT_TRUE(fake().Complete("Start", InternalError("exec: no such file")));
  ASSERT_TRUE(Await(start));
  EXPECT_EQ(start->code(), Code::kInternal);
  auto deletes = fake().calls_of("Delete");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_TRUE(deletes[0].force);
  auto state = State("c1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->status(), STOPPED);
  EXPECT_EQ(state->exit_status(), 128u + SIGKILL);
  EXPECT_TRUE(Delete("c1").has_value());
}

// ---- Delete ----

TEST_F(TaskRpcTest, DeleteWhileRunningIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  EXPECT_EQ(Delete("c1").status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(StatusOf("c1"), RUNNING);
  EXPECT_EQ(fake().count("Delete"), 0u);
}

TEST_F(TaskRpcTest, DeleteAfterExitRemovesTheContainer) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(fake().FireInitExit("c1", 4));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  auto deleted = Delete("c1");
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_EQ(deleted->exit_status(), 4u);
  auto deletes = fake().calls_of("Delete");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_FALSE(deletes[0].force);
  EXPECT_EQ(State("c1").status().code(), Code::kNotFound);
  EXPECT_EQ(Delete("c1").status().code(), Code::kNotFound);
  ASSERT_TRUE(RunUntil([&] { return fake().count("Release") == 1; }));
  EXPECT_EQ(pod_->Get("c1"), nullptr);
}

TEST_F(TaskRpcTest, DeleteOfACreatedContainerForcesTheRuntimeDelete) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  auto deleted = Delete("c1");
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  auto deletes = fake().calls_of("Delete");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_TRUE(deletes[0].force);
  EXPECT_EQ(deleted->exit_status(), 128u + SIGKILL);
}

// ---- Exec ----

TEST_F(TaskRpcTest, ExecWithADuplicateIdIsAlreadyExists) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  EXPECT_EQ(Exec("c1", "e1").code(), Code::kAlreadyExists);
  EXPECT_EQ(sink_->Count("/tasks/exec-added"), 1u);
}

TEST_F(TaskRpcTest, ExecStartRunsTheProcessAndKillSignalsIt) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  EXPECT_EQ(StatusOf("c1", "e1"), CREATED);
  EXPECT_EQ(Kill("c1", SIGKILL, false, "e1").code(), Code::kFailedPrecondition) << "not started";
  auto started = Start("c1", "e1");
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(StatusOf("c1", "e1"), RUNNING);
  EXPECT_EQ(Start("c1", "e1").status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(Delete("c1", "e1").status().code(), Code::kFailedPrecondition);

  // The exec's Kill signals the process itself.
  ASSERT_TRUE(Kill("c1", SIGKILL, false, "e1").ok());
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit e1"); }));
  EXPECT_TRUE(sink_->Has("/tasks/exit e1 137"));
  EXPECT_EQ(Kill("c1", SIGKILL, false, "e1").code(), Code::kNotFound);
  auto deleted = Delete("c1", "e1");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->exit_status(), 137u);
  EXPECT_EQ(State("c1", "e1").status().code(), Code::kNotFound);
  EXPECT_EQ(StatusOf("c1"), RUNNING);
}

TEST_F(TaskRpcTest, ExecAfterTheInitExitedIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_EQ(Start("c1", "e1").status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(Exec("c1", "e2").code(), Code::kFailedPrecondition);
  EXPECT_EQ(fake().count("Exec"), 0u);
}

// ---- Kill ----

TEST_F(TaskRpcTest, KillReachesTheBackendAndAfterExitIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Kill("c1", SIGTERM).ok());
  auto kills = fake().calls_of("Kill");
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].signal, SIGTERM);
  EXPECT_FALSE(kills[0].all);

  ASSERT_TRUE(fake().FireInitExit("c1", 143));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_EQ(Kill("c1", SIGKILL).code(), Code::kNotFound);
  EXPECT_EQ(fake().count("Kill"), 1u);
  // With `all`, what may be left of a stopped container is still signalled.
  EXPECT_TRUE(Kill("c1", SIGKILL, /*all=*/true).ok());
  EXPECT_EQ(fake().count("Kill"), 2u);
}

// ---- Pause / Resume ----

TEST_F(TaskRpcTest, PauseAndResume) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  EXPECT_EQ(Resume("c1").code(), Code::kFailedPrecondition) << "not paused";
  ASSERT_TRUE(Pause("c1").ok());
  EXPECT_EQ(StatusOf("c1"), PAUSED);
  EXPECT_TRUE(sink_->Has("/tasks/paused c1"));
  EXPECT_EQ(Pause("c1").code(), Code::kFailedPrecondition) << "paused already";
  ASSERT_TRUE(Resume("c1").ok());
  EXPECT_EQ(StatusOf("c1"), RUNNING);
  EXPECT_TRUE(sink_->Has("/tasks/resumed c1"));
  EXPECT_EQ(Resume("c1").code(), Code::kFailedPrecondition);
}

TEST_F(TaskRpcTest, PauseWhenNotRunningIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  EXPECT_EQ(Pause("c1").code(), Code::kFailedPrecondition);
  EXPECT_EQ(Resume("c1").code(), Code::kFailedPrecondition);
  ASSERT_TRUE(fake().FireInitExit("c1", 137));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_EQ(Pause("c1").code(), Code::kFailedPrecondition);
  EXPECT_EQ(fake().count("Pause"), 0u);
  EXPECT_EQ(fake().count("Resume"), 0u);
}

TEST_F(TaskRpcTest, AFailedPauseLeavesTheContainerRunning) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  fake().Hold("Pause");
  auto pause = CallAsync<Empty>("Pause", [] {
    tv2::PauseRequest r;
    r.set_id("c1");
    return r;
  }());
  ASSERT_TRUE(RunUntil([&] { return fake().pending("Pause") == 1; }));
  ASSERT_TRUE(fake().Complete("Pause", InternalError("freezer")));
  ASSERT_TRUE(Await(pause));
  EXPECT_EQ(pause->code(), Code::kInternal);
  EXPECT_EQ(StatusOf("c1"), RUNNING);
  EXPECT_FALSE(sink_->Has("/tasks/paused c1"));
}

// ---- Update ----

TEST_F(TaskRpcTest, UpdateOfACreatedContainerReachesTheBackend) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  const std::string resources = R"({"cpu":{"shares":512}})";
  ASSERT_TRUE(Update("c1", resources).ok());
  auto updates = fake().calls_of("Update");
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].resources_json, resources);
}

TEST_F(TaskRpcTest, UpdateWithNonJsonIsInvalidArgument) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  EXPECT_EQ(Update("c1", "cpu=1").code(), Code::kInvalidArgument);
  EXPECT_EQ(Update("c1", "[1, 2]").code(), Code::kInvalidArgument);
  EXPECT_EQ(fake().count("Update"), 0u);
}

TEST_F(TaskRpcTest, UpdateOfAStoppedContainerIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_EQ(Update("c1", "{}").code(), Code::kFailedPrecondition);
  EXPECT_EQ(fake().count("Update"), 0u);
}

// ---- Stats / Pids ----

TEST_F(TaskRpcTest, StatsOfARunningContainerAndOfAStoppedOne) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  EXPECT_TRUE(Stats("c1").ok());
  ASSERT_TRUE(fake().FireInitExit("c1", 0));
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
  EXPECT_EQ(Stats("c1").code(), Code::kNotFound);
  EXPECT_EQ(fake().count("Stats"), 1u);
}

TEST_F(TaskRpcTest, PidsNamesTheExecs) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_TRUE(Exec("c1", "e1").ok());
  ASSERT_TRUE(Start("c1", "e1").has_value());
  pid_t exec_pid = fake().ExecPid("e1");
  fake().set_pids({424242, exec_pid});
  tv2::PidsRequest request;
  request.set_id("c1");
  auto pids = Call<tv2::PidsResponse>("Pids", request);
  ASSERT_TRUE(pids.has_value());
  ASSERT_EQ(pids->processes_size(), 2);
  EXPECT_FALSE(pids->processes(0).has_info());
  EXPECT_EQ(pids->processes(1).pid(), static_cast<uint32_t>(exec_pid));
  EXPECT_TRUE(pids->processes(1).has_info());
  fake().ExitExec("e1", 0);
  ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit e1"); }));
}

// ---- Unknown containers ----

TEST_F(TaskRpcTest, CallsForAnUnknownContainerAreNotFound) {
  EXPECT_EQ(State("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(Start("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(Kill("nope", SIGKILL).code(), Code::kNotFound);
  EXPECT_EQ(Delete("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(Pause("nope").code(), Code::kNotFound);
  EXPECT_EQ(Stats("nope").code(), Code::kNotFound);
  auto wait = WaitAsync("nope");
  ASSERT_TRUE(Await(wait));
  EXPECT_EQ(wait->code(), Code::kNotFound);
  // And an unknown process of a known container.
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  EXPECT_EQ(State("c1", "nope").status().code(), Code::kNotFound);
  EXPECT_EQ(Start("c1", "nope").status().code(), Code::kNotFound);
  EXPECT_EQ(Kill("c1", SIGKILL, false, "nope").code(), Code::kNotFound);
}

// ---- Shutdown ----

TEST_F(TaskRpcTest, ShutdownStopsOnlyOnceEveryContainerIsDeleted) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  tv2::ShutdownRequest shutdown;
  ASSERT_TRUE(Call<Empty>("Shutdown", shutdown).has_value());
  EXPECT_FALSE(shutdown_called_);
  ASSERT_TRUE(Delete("c1").has_value());
  ASSERT_TRUE(Call<Empty>("Shutdown", shutdown).has_value());
  EXPECT_TRUE(shutdown_called_);
}

// containerd 2.x deletes a dead pod's sandbox task, and sends its one
// Shutdown, before the last app container: the server ends once that one is
// deleted too (after a grace period for a Shutdown of its own).
TEST_F(TaskRpcTest, AShutdownRefusedWhileContainersLivedEndsTheServerAfterTheLastDelete) {
  ASSERT_NO_FATAL_FAILURE(Created("c1"));
  ASSERT_NO_FATAL_FAILURE(Created("c2"));
  ASSERT_TRUE(Delete("c1").has_value());
  tv2::ShutdownRequest shutdown;
  ASSERT_TRUE(Call<Empty>("Shutdown", shutdown).has_value());
  EXPECT_FALSE(shutdown_called_);
  ASSERT_TRUE(Delete("c2").has_value());
  EXPECT_FALSE(shutdown_called_);
  EXPECT_TRUE(RunUntil([&] { return shutdown_called_; }));
}

}  // namespace
}  // namespace hull::shim::testing
