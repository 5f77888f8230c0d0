// Calls racing the end of their container: a backend call still running when
// the container is deleted and dropped, or when the pod (and with it the
// backend) goes, is answered NotFound -- never left unanswered (a dropped
// ttrpc responder would say Internal "no reply" instead).
#include <signal.h>

#include "tests/unit/shim/shim_harness.h"

namespace hull::shim::testing {
namespace {

class RaceTest : public ShimHarness {
 protected:
  // Starts c1, makes the call `issue` sends (whose backend call is
  // `backend_method`, held), then ends, deletes and drops c1 before the
  // backend answers OK: the call must be answered NotFound.
  template <typename Resp>
  void CheckAnsweredNotFoundAfterDelete(
      const std::string& backend_method,
      const std::function<std::shared_ptr<AsyncReply<Resp>>()>& issue) {
    ASSERT_NO_FATAL_FAILURE(Started("c1"));
    fake().Hold(backend_method);
    auto reply = issue();
    ASSERT_TRUE(RunUntil([&] { return fake().pending(backend_method) == 1; }));
    ASSERT_TRUE(fake().FireInitExit("c1", 0));
    ASSERT_TRUE(RunUntil([&] { return sink_->Has("/tasks/exit c1"); }));
    auto deleted = Delete("c1");
    ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
    ASSERT_TRUE(RunUntil([&] { return pod_->Get("c1") == nullptr; }));
    EXPECT_FALSE(reply->done());

    ASSERT_TRUE(fake().Complete(backend_method, Status::Ok()));
    ASSERT_TRUE(Await(reply));
    EXPECT_EQ(reply->code(), Code::kNotFound);
  }
};

TEST_F(RaceTest, KillPendingAcrossDelete) {
  CheckAnsweredNotFoundAfterDelete<Empty>(
      "Kill", [&] { return CallAsync<Empty>("Kill", KillRequest("c1", SIGTERM)); });
}

TEST_F(RaceTest, PidsPendingAcrossDelete) {
  CheckAnsweredNotFoundAfterDelete<tv2::PidsResponse>("Ps", [&] {
    tv2::PidsRequest r;
    r.set_id("c1");
    return CallAsync<tv2::PidsResponse>("Pids", r);
  });
}

TEST_F(RaceTest, PausePendingAcrossDelete) {
  CheckAnsweredNotFoundAfterDelete<Empty>("Pause", [&] {
    tv2::PauseRequest r;
    r.set_id("c1");
    return CallAsync<Empty>("Pause", r);
  });
}

TEST_F(RaceTest, StatsPendingAcrossDelete) {
  CheckAnsweredNotFoundAfterDelete<tv2::StatsResponse>("Stats", [&] {
    tv2::StatsRequest r;
    r.set_id("c1");
    return CallAsync<tv2::StatsResponse>("Stats", r);
  });
}

TEST_F(RaceTest, UpdatePendingAcrossDelete) {
  CheckAnsweredNotFoundAfterDelete<Empty>("Update", [&] {
    tv2::UpdateTaskRequest r;
    r.set_id("c1");
    r.mutable_resources()->set_value("{}");
    return CallAsync<Empty>("Update", r);
  });
}

// The server goes as it does at exit: the task service first, then the pod,
// whose backend answers what is still running.
TEST_F(RaceTest, CallsPendingWhenThePodGoesAreAnswered) {
  ASSERT_NO_FATAL_FAILURE(Started("c1"));
  ASSERT_NO_FATAL_FAILURE(Created("c2"));
  fake().Hold("Kill");
  fake().Hold("Start");
  auto kill = CallAsync<Empty>("Kill", KillRequest("c1", SIGTERM));
  auto start = StartAsync("c2");
  ASSERT_TRUE(
      RunUntil([&] { return fake().pending("Kill") == 1 && fake().pending("Start") == 1; }));

  tasks_.reset();
  pod_.reset();
  factory_.last = nullptr;
  ASSERT_TRUE(Await(kill));
  ASSERT_TRUE(Await(start));
  EXPECT_EQ(kill->code(), Code::kNotFound);
  EXPECT_EQ(start->code(), Code::kNotFound);
}

TEST_F(RaceTest, ACreatePendingWhenTheServerGoesIsAnswered) {
  factory_.configure = [](FakeBackend& b) { b.Hold("Create"); };
  auto create =
      CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("c1", MakeBundle("c1")));
  ASSERT_TRUE(RunUntil([&] { return factory_.last && fake().pending("Create") == 1; }));

  tasks_.reset();
  pod_.reset();
  factory_.last = nullptr;
  ASSERT_TRUE(Await(create));
  EXPECT_NE(create->code(), Code::kOk);
  EXPECT_NE(create->code(), Code::kInternal) << "left unanswered";
}

}  // namespace
}  // namespace hull::shim::testing
