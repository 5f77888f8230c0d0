// EventPublisher: exits are delivered however long containerd is away, in
// order, and the queue bound drops non-exit events first.
#include "shim/publisher.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "containerd/events/task.pb.h"
#include "containerd/services/events/ttrpc/v1/events.pb.h"
#include "google/protobuf/empty.pb.h"
#include "tests/support/temp_dir.h"
#include "ttrpc/server.h"

namespace hull::shim {
namespace {

using containerd::services::events::ttrpc::v1::ForwardRequest;
using std::chrono::milliseconds;
constexpr auto kWait = std::chrono::seconds(10);

// Counts the sends that pass through to `inner`.
class CountingSink : public EventSink {
 public:
  CountingSink(std::unique_ptr<EventSink> inner, int* sends)
      : inner_(std::move(inner)), sends_(sends) {}
  void Send(const std::string& topic, const google::protobuf::Any& event,
            std::function<void(Status)> done) override {
    ++*sends_;
    inner_->Send(topic, event, std::move(done));
  }

 private:
  std::unique_ptr<EventSink> inner_;
  int* sends_;
};

// Fails every send with Unavailable until `up`; records what it delivered.
class FakeSink : public EventSink {
 public:
  FakeSink(EventLoop& loop, bool* up, std::vector<std::string>* delivered)
      : loop_(loop), up_(up), delivered_(delivered) {}
  void Send(const std::string& topic, const google::protobuf::Any& event,
            std::function<void(Status)> done) override {
    Status status = *up_ ? Status::Ok() : UnavailableError("connection refused");
    if (*up_) delivered_->push_back(topic + " " + event.value());
    loop_.Post([done = std::move(done), status] { done(status); });
  }

 private:
  EventLoop& loop_;
  bool* up_;
  std::vector<std::string>* delivered_;
};

containerd::events::TaskExit Exit(const std::string& id) {
  containerd::events::TaskExit exit;
  exit.set_container_id(id);
  exit.set_id(id);
  exit.set_exit_status(7);
  return exit;
}

class PublisherTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-publisher"};  // dir_ lives in it
  PublisherTest() {
    auto loop = EventLoop::Create();
    EXPECT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    EXPECT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }
  ~PublisherTest() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<EventLoop> loop_;
  Logger log_ = Logger::Null();
  std::string dir_;
};

TEST_F(PublisherTest, EventsWaitInOrderForAnEventsServerThatComesUpLate) {
  std::string address = dir_ + "/events.sock";
  int sends = 0;
  EventPublisher publisher(
      *loop_, log_,
      std::make_unique<CountingSink>(MakeForwardSink(*loop_, address, "default"), &sends),
      {.initial_backoff = milliseconds(1), .max_backoff = milliseconds(4)});
  containerd::events::TaskStart start;
  start.set_container_id("c1");
  publisher.Publish("/tasks/start", "containerd.events.TaskStart", start);
  publisher.Publish("/tasks/exit", "containerd.events.TaskExit", Exit("c1"));
  publisher.Publish("/tasks/delete", "containerd.events.TaskDelete", Exit("c1"));
  // Far more failed attempts than the old retry budget (10 per event).
  ASSERT_TRUE(loop_->RunUntil([&] { return sends >= 60; }, kWait));
  EXPECT_EQ(publisher.queued(), 3u);

  std::vector<std::string> received;
  ttrpc::Server server(*loop_);
  server.RegisterUnary<ForwardRequest, google::protobuf::Empty>(
      "containerd.services.events.ttrpc.v1.Events", "Forward",
      [&](const ttrpc::CallContext&, ForwardRequest request,
          ttrpc::TypedResponder<google::protobuf::Empty> responder) {
        received.push_back(request.envelope().topic());
        responder.Reply({});
      });
  ASSERT_TRUE(server.Listen(address).ok());
  ASSERT_TRUE(
      loop_->RunUntil([&] { return received.size() == 3 && publisher.queued() == 0; }, kWait));
  EXPECT_EQ(received, (std::vector<std::string>{"/tasks/start", "/tasks/exit", "/tasks/delete"}));
  EXPECT_EQ(publisher.queued(), 0u);
  EXPECT_EQ(publisher.dropped(), 0u);
}

TEST_F(PublisherTest, FullQueueDropsTheOldestNonExitEventsAndKeepsEveryExit) {
  bool up = false;
  std::vector<std::string> delivered;
  EventPublisher publisher(
      *loop_, log_, std::make_unique<FakeSink>(*loop_, &up, &delivered),
      {.initial_backoff = milliseconds(1), .max_backoff = milliseconds(2), .max_queued = 4});
  auto other = [&](const std::string& name) {
    containerd::events::TaskStart start;
    start.set_container_id(name);
    publisher.Publish("/tasks/start", "containerd.events.TaskStart", start);
  };
  auto exit = [&](const std::string& name) {
    publisher.Publish("/tasks/exit", "containerd.events.TaskExit", Exit(name));
  };
  exit("A");  // the head: its send fails, then it waits for a retry
  other("n1");
  other("n2");
  other("n3");
  exit("B");    // drops n1
  other("n4");  // drops n2
  exit("C");    // drops n3
  exit("D");    // drops n4
  exit("E");    // only exits are queued: kept past the bound
  other("n5");  // nothing to drop for it: dropped itself
  EXPECT_EQ(publisher.queued(), 5u);
  EXPECT_EQ(publisher.dropped(), 5u);

  up = true;
  ASSERT_TRUE(loop_->RunUntil([&] { return publisher.queued() == 0; }, kWait));
  std::vector<std::string> exits;
  for (const std::string& d : delivered) {
    containerd::events::TaskExit e;
    ASSERT_TRUE(e.ParseFromString(d.substr(d.find(' ') + 1)));
    EXPECT_EQ(d.substr(0, d.find(' ')), "/tasks/exit");
    exits.push_back(e.container_id());
  }
  EXPECT_EQ(exits, (std::vector<std::string>{"A", "B", "C", "D", "E"}));
}

TEST_F(PublisherTest, ExitsHaveABoundOfTheirOwn) {
  bool up = false;
  std::vector<std::string> delivered;
  EventPublisher publisher(
      *loop_, log_, std::make_unique<FakeSink>(*loop_, &up, &delivered),
      {.initial_backoff = milliseconds(1), .max_queued = 2, .max_queued_exits = 3});
  for (const char* id : {"A", "B", "C", "D"}) {
    publisher.Publish("/tasks/exit", "containerd.events.TaskExit", Exit(id));
  }
  EXPECT_EQ(publisher.queued(), 3u);  // B, the oldest exit after the head, went
  up = true;
  ASSERT_TRUE(loop_->RunUntil([&] { return publisher.queued() == 0; }, kWait));
  ASSERT_EQ(delivered.size(), 3u);
  containerd::events::TaskExit second;
  ASSERT_TRUE(second.ParseFromString(delivered[1].substr(delivered[1].find(' ') + 1)));
  EXPECT_EQ(second.container_id(), "C");
}

}  // namespace
}  // namespace hull::shim
