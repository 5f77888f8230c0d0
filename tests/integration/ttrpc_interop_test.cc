// hull's ttrpc against the Go ttrpc (v1.1.1) in Debian's containerd 1.6.20:
// hull's Client publishing events into containerd's own ttrpc server, as a
// shim does, and hull's Server answering `ctr shim`, ctr's direct Task
// client. What the Go peers answered is in docs/ttrpc.md, "Interop".
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/event_loop.h"
#include "base/status.h"
#include "containerd/events/task.pb.h"
#include "containerd/services/events/ttrpc/v1/events.pb.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/empty.pb.h"
#include "tests/integration/harness/harness.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using containerd::services::events::ttrpc::v1::Envelope;
using containerd::services::events::ttrpc::v1::ForwardRequest;

constexpr const char* kEventsService = "containerd.services.events.ttrpc.v1.Events";
constexpr const char* kTaskService = "containerd.task.v2.Task";
// Where containerd 1.6's shim library (and so `ctr shim`) puts shim sockets.
constexpr const char* kShimSocketDir = "/run/containerd/s";

// The line of `text` that contains `needle`, or "".
std::string LineWith(const std::string& text, std::string_view needle) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

// A /tasks/exit envelope as a shim publishes it: namespace "default", a
// timestamp, the bare type_url containerd 1.6 resolves.
Envelope TaskExitEnvelope(const std::string& container_id, uint32_t pid, uint32_t exit_status) {
  containerd::events::TaskExit exit;
  exit.set_container_id(container_id);
  exit.set_id(container_id);
  exit.set_pid(pid);
  exit.set_exit_status(exit_status);
  exit.mutable_exited_at()->set_seconds(1'700'000'000);

  Envelope envelope;
  envelope.mutable_timestamp()->set_seconds(1'700'000'001);
  envelope.mutable_timestamp()->set_nanos(42);
  envelope.set_namespace_("default");
  envelope.set_topic("/tasks/exit");
  envelope.mutable_event()->set_type_url("containerd.events.TaskExit");
  exit.SerializeToString(envelope.mutable_event()->mutable_value());
  return envelope;
}

class TtrpcInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    std::string error;
    containerd_ = PrivateContainerd::Start({}, &error);
    ASSERT_NE(containerd_, nullptr) << error;
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value()) << loop.error().ToString();
    loop_ = std::move(*loop);
  }

  // One unary call on containerd's ttrpc socket with the namespace metadata
  // containerd's shims send; a fresh connection per call, as a failed call
  // must not leave anything for the next.
  Status CallContainerd(const std::string& service, const std::string& method,
                        const ForwardRequest& request) {
    auto client = ttrpc::Client::Connect(*loop_, containerd_->ttrpc_address());
    if (!client.has_value()) return client.error();
    ttrpc::CallOptions options;
    options.deadline = loop_->Now() + 10s;
    options.metadata.emplace_back("containerd-namespace-ttrpc", "default");
    return (*client)
        ->CallUnarySync<google::protobuf::Empty>(service, method, request, options)
        .status();
  }

  Status Forward(const Envelope& envelope) {
    ForwardRequest request;
    *request.mutable_envelope() = envelope;
    return CallContainerd(kEventsService, "Forward", request);
  }

  // The socket `ctr -a <address> -n default shim --id <id>` dials:
  // <dir>/<hex sha256(filepath.Join(address, ns, id))>, hashed here with
  // sha256sum so the test does not lean on hull's own derivation. Makes the
  // directory; TearDown removes the socket. "" (with a failure) on error.
  std::string ShimSocket(const std::string& id) {
    CommandResult sum = RunCommand({"sha256sum"}, 10s, containerd_->address() + "/default/" + id);
    if (!sum.ok() || sum.out.size() < 64) {
      ADD_FAILURE() << sum.Describe();
      return "";
    }
    std::string socket = std::string(kShimSocketDir) + "/" + sum.out.substr(0, 64);
    if (fs::exists(socket)) {
      ADD_FAILURE() << socket << " is in use";
      return "";
    }
    std::error_code ec;
    fs::create_directories(kShimSocketDir, ec);
    if (ec) {
      ADD_FAILURE() << "mkdir " << kShimSocketDir << ": " << ec.message();
      return "";
    }
    sockets_.push_back(socket);
    return socket;
  }

  // Before the harness tears containerd down: it removes /run/containerd/s
  // only when empty (and when it did not exist before).
  void TearDown() override {
    for (const std::string& socket : sockets_) {
      std::error_code ignored;
      fs::remove(socket, ignored);
    }
  }

  // Runs `ctr ... args` while the loop serves, until ctr exits (or 30s).
  struct CtrOutcome {
    std::optional<int> exit_code;
    std::string out, err;
  };
  CtrOutcome CtrWhileServing(const std::vector<std::string>& args) {
    std::unique_ptr<BackgroundCommand> ctr = containerd_->CtrBackground(args);
    if (ctr == nullptr) return {std::nullopt, "", "cannot start ctr"};
    // ctr's exit wakes nothing on the loop: a ticker makes RunUntil look.
    EventHandle ticker = loop_->AddRepeatingTimer(20ms, [] {});
    std::optional<int> exit_code;
    loop_->RunUntil([&] { return (exit_code = ctr->Wait(0ms)).has_value(); }, 30s);
    CtrOutcome outcome{exit_code, "", ""};
    ctr->Stop();  // reaps it if it hung
    outcome.out = ctr->Output();
    outcome.err = ctr->ErrorOutput();
    return outcome;
  }

  std::unique_ptr<PrivateContainerd> containerd_;
  std::unique_ptr<EventLoop> loop_;
  std::vector<std::string> sockets_;  // bound by the test, removed in TearDown
};

TEST_F(TtrpcInteropTest, ForwardedTaskExitReachesCtrEvents) {
  std::unique_ptr<BackgroundCommand> events = containerd_->CtrBackground({"events"});
  ASSERT_NE(events, nullptr);

  // `ctr events` subscribes some time after it starts, and an event forwarded
  // before that is lost to it: forward a probe until ctr prints one.
  bool subscribed = WaitUntil(
      [&] {
        Status forwarded = Forward(TaskExitEnvelope("interop-probe", 1, 0));
        EXPECT_TRUE(forwarded.ok()) << forwarded.ToString();
        return forwarded.ok() && events->WaitForOutput("interop-probe", 100ms);
      },
      20s);
  ASSERT_TRUE(subscribed) << "ctr events printed: " << events->Output()
                          << "\nstderr: " << events->ErrorOutput();

  // containerd 1.6 takes a type.googleapis.com/ type_url, but its
  // subscribers resolve bare names only: ctr drops the event with a warning.
  // Events reach ctr in order, so once the next one is printed this one
  // would have been.
  Envelope prefixed = TaskExitEnvelope("interop-prefixed", 4241, 36);
  prefixed.mutable_event()->set_type_url("type.googleapis.com/containerd.events.TaskExit");
  Status forwarded = Forward(prefixed);
  ASSERT_TRUE(forwarded.ok()) << forwarded.ToString();

  forwarded = Forward(TaskExitEnvelope("interop-exit", 4242, 37));
  ASSERT_TRUE(forwarded.ok()) << forwarded.ToString();
  ASSERT_TRUE(events->WaitForOutput("\"interop-exit\"", 10s)) << events->Output();
  EXPECT_EQ(events->Output().find("interop-prefixed"), std::string::npos) << events->Output();

  // `<timestamp> <namespace> <topic> <event as JSON>`
  std::string line = LineWith(events->Output(), "\"interop-exit\"");
  EXPECT_NE(line.find(" default /tasks/exit "), std::string::npos) << line;
  EXPECT_NE(line.find("\"container_id\":\"interop-exit\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"id\":\"interop-exit\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"pid\":4242"), std::string::npos) << line;
  EXPECT_NE(line.find("\"exit_status\":37"), std::string::npos) << line;

  events->Stop();
}

TEST_F(TtrpcInteropTest, InvalidEnvelopesAreRefusedWithInvalidArgument) {
  Envelope no_slash = TaskExitEnvelope("interop-bad", 1, 0);
  no_slash.set_topic("tasks/exit");
  Status topic = Forward(no_slash);
  EXPECT_EQ(topic.code(), Code::kInvalidArgument) << topic.ToString();

  Envelope no_timestamp = TaskExitEnvelope("interop-bad", 1, 0);
  no_timestamp.clear_timestamp();
  Status timestamp = Forward(no_timestamp);
  EXPECT_EQ(timestamp.code(), Code::kInvalidArgument) << timestamp.ToString();

  Envelope bad_namespace = TaskExitEnvelope("interop-bad", 1, 0);
  bad_namespace.set_namespace_("Not A Namespace");
  Status ns = Forward(bad_namespace);
  EXPECT_EQ(ns.code(), Code::kInvalidArgument) << ns.ToString();

  // The refusals leave the server serving.
  Status valid = Forward(TaskExitEnvelope("interop-good", 1, 0));
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(TtrpcInteropTest, UnknownMethodAndServiceAreUnimplemented) {
  Status method = CallContainerd(kEventsService, "Backward", ForwardRequest());
  EXPECT_EQ(method.code(), Code::kUnimplemented) << method.ToString();

  Status service =
      CallContainerd("containerd.services.events.ttrpc.v1.Nope", "Forward", ForwardRequest());
  EXPECT_EQ(service.code(), Code::kUnimplemented) << service.ToString();
}

TEST_F(TtrpcInteropTest, CtrShimStateReachesHullServer) {
  const std::string id = "interop-shim";
  std::string socket = ShimSocket(id);
  ASSERT_FALSE(socket.empty());

  std::vector<std::string> asked;
  std::vector<std::string> namespaces;
  ttrpc::Server server(*loop_);
  server.RegisterUnary<containerd::task::v2::StateRequest, containerd::task::v2::StateResponse>(
      kTaskService, "State",
      [&](const ttrpc::CallContext& context, containerd::task::v2::StateRequest request,
          ttrpc::TypedResponder<containerd::task::v2::StateResponse> responder) {
        asked.push_back(request.id());
        namespaces.emplace_back(context.FindMetadata("containerd-namespace-ttrpc").value_or(""));
        containerd::task::v2::StateResponse state;
        state.set_id(request.id());
        state.set_pid(4243);
        state.set_status(containerd::v1::types::RUNNING);
        state.set_bundle("/run/hull-interop/bundle");
        responder.Reply(state);
      });
  Status listening = server.Listen("unix://" + socket);
  ASSERT_TRUE(listening.ok()) << listening.ToString();

  CtrOutcome ctr = CtrWhileServing({"shim", "--id", id, "state"});
  ASSERT_EQ(ctr.exit_code, 0) << "stdout: " << ctr.out << "\nstderr: " << ctr.err;
  EXPECT_EQ(asked, std::vector<std::string>{id});
  // ctr calls with a bare context: no containerd-namespace-ttrpc metadata.
  EXPECT_EQ(namespaces, std::vector<std::string>{""});
  EXPECT_NE(ctr.out.find("\"id\": \"interop-shim\""), std::string::npos) << ctr.out;
  EXPECT_NE(ctr.out.find("\"pid\": 4243"), std::string::npos) << ctr.out;
  EXPECT_NE(ctr.out.find("\"bundle\": \"/run/hull-interop/bundle\""), std::string::npos) << ctr.out;
}

TEST_F(TtrpcInteropTest, CtrShimDeleteOnServerWithoutDeleteIsUnimplemented) {
  const std::string id = "interop-nodelete";
  std::string socket = ShimSocket(id);
  ASSERT_FALSE(socket.empty());

  ttrpc::Server server(*loop_);
  server.RegisterUnary<containerd::task::v2::StateRequest, containerd::task::v2::StateResponse>(
      kTaskService, "State",
      [](const ttrpc::CallContext&, containerd::task::v2::StateRequest,
         ttrpc::TypedResponder<containerd::task::v2::StateResponse> responder) {
        responder.Reply({});
      });
  Status listening = server.Listen("unix://" + socket);
  ASSERT_TRUE(listening.ok()) << listening.ToString();

  CtrOutcome ctr = CtrWhileServing({"shim", "--id", id, "delete"});
  ASSERT_TRUE(ctr.exit_code.has_value()) << "ctr hung; stderr: " << ctr.err;
  EXPECT_NE(*ctr.exit_code, 0) << "stdout: " << ctr.out;
  EXPECT_NE(ctr.err.find("Unimplemented"), std::string::npos) << ctr.err;
}

}  // namespace
}  // namespace hull::itest
