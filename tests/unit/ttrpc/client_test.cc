// ttrpc::Client against a raw peer (to see and script the wire) and against
// hull's own Server.
#include "ttrpc/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/envelope_internal.h"
#include "ttrpc/server.h"

namespace hull::ttrpc {
namespace {

using std::chrono::milliseconds;
using testing::FdLeakCheck;
using testing::MakeFrame;
using testing::RawPeer;
using testing::ResponseBody;

class ClientTest : public FdLeakCheck, public ::testing::Test {
 protected:
  ClientTest() : loop_(testing::NewLoop()) {
    testing::SocketPair pair = testing::MakeSocketPair();
    auto client = Client::FromFd(*loop_, std::move(pair.a));
    EXPECT_TRUE(client.has_value());
    client_ = std::move(*client);
    server_ = std::make_unique<RawPeer>(*loop_, std::move(pair.b));
  }

  // Reads the next Request the client sent.
  internal::RequestEnvelope ReadRequest(uint32_t* id = nullptr, uint8_t* flags = nullptr) {
    std::optional<Frame> frame = server_->Read();
    EXPECT_TRUE(frame.has_value());
    if (!frame) return {};
    EXPECT_EQ(frame->header.type, static_cast<uint8_t>(MessageType::kRequest));
    if (id != nullptr) *id = frame->header.stream_id;
    if (flags != nullptr) *flags = frame->header.flags;
    Result<internal::RequestEnvelope> req = internal::DecodeRequest(frame->body);
    EXPECT_TRUE(req.has_value());
    return req.value_or(internal::RequestEnvelope{});
  }

  void Reply(uint32_t id, const std::string& body) {
    ASSERT_TRUE(server_->Send(MakeFrame(id, MessageType::kResponse, 0, body)));
  }

  // Starts a call whose result lands in `*out`.
  void StartCall(const std::string& method, std::optional<Result<std::string>>* out,
                 CallOptions options = {}) {
    client_->Call("svc", method, "in", std::move(options),
                  [out](Result<std::string> r) { *out = std::move(r); });
  }

  bool WaitFor(const std::optional<Result<std::string>>& result) {
    return loop_->RunUntil([&] { return result.has_value(); }, testing::kWait);
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<RawPeer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, FirstRequestIsByteExact) {
  client_->Call("a.B", "M", "", {}, [](Result<std::string>) {});
  const char want[] = {0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01,
                       0x00, 0x0A, 0x03, 0x61, 0x2E, 0x42, 0x12, 0x01, 0x4D};
  EXPECT_EQ(server_->ReadRaw(sizeof want), std::string(want, sizeof want));
}

TEST_F(ClientTest, CallsAreMultiplexedOnOddIncreasingIds) {
  std::optional<Result<std::string>> a, b, c;
  StartCall("A", &a);
  StartCall("B", &b);
  StartCall("C", &c);
  uint32_t ids[3];
  for (uint32_t& id : ids) ReadRequest(&id);
  EXPECT_EQ(ids[0], 1u);
  EXPECT_EQ(ids[1], 3u);
  EXPECT_EQ(ids[2], 5u);
  EXPECT_EQ(client_->calls_in_flight(), 3u);
  // Answered out of order; each reply reaches its own call.
  Reply(3, ResponseBody(0, "", "b"));
  ASSERT_TRUE(WaitFor(b));
  EXPECT_FALSE(a.has_value());
  Reply(5, ResponseBody(0, "", "c"));
  Reply(1, ResponseBody(0, "", "a"));
  ASSERT_TRUE(WaitFor(a));
  ASSERT_TRUE(WaitFor(c));
  EXPECT_EQ(**a, "a");
  EXPECT_EQ(**b, "b");
  EXPECT_EQ(**c, "c");
  EXPECT_EQ(client_->calls_in_flight(), 0u);
}

TEST_F(ClientTest, UnaryRequestsCarryFlagsZeroAndMetadata) {
  std::optional<Result<std::string>> r;
  StartCall("M", &r, {.metadata = {{"containerd-namespace-ttrpc", "default"}}});
  uint8_t flags = 0xff;
  internal::RequestEnvelope req = ReadRequest(nullptr, &flags);
  EXPECT_EQ(flags, 0);
  EXPECT_EQ(req.service, "svc");
  EXPECT_EQ(req.method, "M");
  EXPECT_EQ(req.payload, "in");
  EXPECT_EQ(req.timeout_nano, 0);
  EXPECT_EQ(req.metadata, (Metadata{{"containerd-namespace-ttrpc", "default"}}));
  // Destroying the client drops the pending call without calling it.
  client_.reset();
  EXPECT_FALSE(r.has_value());
}

TEST_F(ClientTest, DeadlineFailsLocallyAndDropsLateReply) {
  std::optional<Result<std::string>> r;
  auto start = loop_->Now();
  StartCall("Slow", &r, {.deadline = start + milliseconds(50)});
  uint32_t id = 0;
  internal::RequestEnvelope req = ReadRequest(&id);
  EXPECT_GT(req.timeout_nano, 0);
  EXPECT_LE(req.timeout_nano, 50'000'000);
  ASSERT_TRUE(WaitFor(r));
  EXPECT_GE(loop_->Now() - start, milliseconds(50));
  ASSERT_FALSE(r->has_value());
  EXPECT_EQ(r->error().code(), Code::kDeadlineExceeded);
  // The late reply is dropped; the connection still serves the next call.
  Reply(id, ResponseBody(0, "", "late"));
  std::optional<Result<std::string>> next;
  StartCall("Next", &next);
  uint32_t next_id = 0;
  ReadRequest(&next_id);
  Reply(next_id, ResponseBody(0, "", "fine"));
  ASSERT_TRUE(WaitFor(next));
  EXPECT_EQ(**next, "fine");
}

TEST_F(ClientTest, DeadlineAlreadyPassedFailsWithoutSending) {
  std::optional<Result<std::string>> r;
  StartCall("M", &r, {.deadline = loop_->Now() - milliseconds(1)});
  EXPECT_FALSE(r.has_value());  // never inside Call
  ASSERT_TRUE(WaitFor(r));
  EXPECT_EQ(r->error().code(), Code::kDeadlineExceeded);
  EXPECT_EQ(server_->ReadRawNow(), "");
}

TEST_F(ClientTest, PeerGoingAwayFailsEveryPendingCall) {
  std::optional<Result<std::string>> a, b;
  std::optional<Status> closed;
  client_->SetOnClose([&](const Status& why) {
    // Pending calls have already failed when on_close runs.
    EXPECT_TRUE(a.has_value());
    EXPECT_TRUE(b.has_value());
    closed = why;
  });
  StartCall("A", &a);
  StartCall("B", &b);
  ReadRequest();
  ReadRequest();
  server_->Close();
  ASSERT_TRUE(loop_->RunUntil([&] { return closed.has_value(); }, testing::kWait));
  for (auto* r : {&a, &b}) {
    ASSERT_TRUE(r->has_value());
    ASSERT_FALSE((*r)->has_value());
    EXPECT_EQ((*r)->error(), UnavailableError("ttrpc: closed"));
  }
  EXPECT_EQ(closed->code(), Code::kUnavailable);
  EXPECT_FALSE(client_->open());
  // Calls on a closed client fail the same way, on a later turn.
  std::optional<Result<std::string>> after;
  StartCall("C", &after);
  EXPECT_FALSE(after.has_value());
  ASSERT_TRUE(WaitFor(after));
  EXPECT_EQ(after->error().code(), Code::kUnavailable);
}

TEST_F(ClientTest, ResponseStatusIsMapped) {
  struct Case {
    std::string body;
    Code code;
    std::string payload;
  };
  std::vector<Case> cases = {
      {ResponseBody(5, "container x not found", ""), Code::kNotFound, ""},
      {ResponseBody(0, "", "ok payload"), Code::kOk, "ok payload"},
      {"", Code::kOk, ""},                                    // Go: empty OK reply
      {std::string("\x0a\x00\x12\x01p", 5), Code::kOk, "p"},  // Rust: empty Status
      {ResponseBody(0, "ignored", "x"), Code::kOk, "x"},      // code 0 is OK
      {ResponseBody(12, "method M", ""), Code::kUnimplemented, ""},
      {ResponseBody(99, "odd", ""), Code::kUnknown, ""},
      {"\xff\xff\xff", Code::kInternal, ""},  // not a Response
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::optional<Result<std::string>> r;
    StartCall("M", &r);
    uint32_t id = 0;
    ReadRequest(&id);
    Reply(id, cases[i].body);
    ASSERT_TRUE(WaitFor(r)) << i;
    EXPECT_EQ(r->status().code(), cases[i].code) << i;
    if (r->has_value()) {
      EXPECT_EQ(**r, cases[i].payload) << i;
    }
  }
  std::optional<Result<std::string>> r;
  StartCall("M", &r);
  uint32_t id = 0;
  ReadRequest(&id);
  Reply(id, ResponseBody(9, "not running", ""));
  ASSERT_TRUE(WaitFor(r));
  EXPECT_EQ(r->error(), FailedPreconditionError("not running"));
}

TEST_F(ClientTest, FramesForUnknownIdsAreDropped) {
  std::optional<Result<std::string>> r;
  StartCall("M", &r);
  uint32_t id = 0;
  ReadRequest(&id);
  Reply(99, ResponseBody(0, "", "stray"));
  Reply(2, ResponseBody(0, "", "even"));
  ASSERT_TRUE(server_->Send(MakeFrame(77, MessageType::kData, 0, "stray data")));
  Reply(id, ResponseBody(0, "", "mine"));
  ASSERT_TRUE(WaitFor(r));
  EXPECT_EQ(**r, "mine");
  EXPECT_TRUE(client_->open());
}

TEST_F(ClientTest, OversizedResponseFailsOnlyItsCall) {
  std::optional<Result<std::string>> big, next;
  StartCall("Big", &big);
  uint32_t id = 0;
  ReadRequest(&id);
  const uint32_t length = kMaxMessageSize + 1;
  auto header = EncodeHeader({.length = length, .stream_id = id, .type = 2, .flags = 0});
  ASSERT_TRUE(
      server_->Send(std::string(reinterpret_cast<const char*>(header.data()), header.size()) +
                    std::string(length, 'x')));
  ASSERT_TRUE(WaitFor(big));
  EXPECT_EQ(big->error().code(), Code::kResourceExhausted);
  StartCall("Next", &next);
  ReadRequest(&id);
  Reply(id, ResponseBody(0, "", "fine"));
  ASSERT_TRUE(WaitFor(next));
  EXPECT_EQ(**next, "fine");
}

TEST_F(ClientTest, OversizedRequestIsRefusedLocally) {
  std::optional<Result<std::string>> r;
  client_->Call("svc", "M", std::string(kMaxMessageSize, 'x'), {},
                [&](Result<std::string> res) { r = std::move(res); });
  ASSERT_TRUE(WaitFor(r));
  EXPECT_EQ(r->error().code(), Code::kResourceExhausted);
  EXPECT_EQ(server_->ReadRawNow(), "");
  EXPECT_TRUE(client_->open());
}

TEST_F(ClientTest, DataFrameOnUnaryCallIsAProtocolError) {
  std::optional<Result<std::string>> r;
  StartCall("M", &r);
  uint32_t id = 0;
  ReadRequest(&id);
  ASSERT_TRUE(server_->Send(MakeFrame(id, MessageType::kData, 0, "x")));
  ASSERT_TRUE(WaitFor(r));
  EXPECT_FALSE(r->has_value());
}

TEST_F(ClientTest, DoneMayDestroyTheClient) {
  std::optional<Result<std::string>> b;
  bool destroyed = false;
  auto captured = std::make_shared<int>(0);
  client_->Call("svc", "A", "", {}, [&](Result<std::string>) {
    client_.reset();
    destroyed = true;
  });
  client_->Call("svc", "B", "", {}, [&, captured](Result<std::string> r) { b = std::move(r); });
  ReadRequest();
  ReadRequest();
  Reply(1, "");
  ASSERT_TRUE(loop_->RunUntil([&] { return destroyed; }, testing::kWait));
  // The other pending call was dropped with the client, not called.
  EXPECT_FALSE(b.has_value());
  EXPECT_EQ(captured.use_count(), 1);
}

TEST_F(ClientTest, DoneMayDestroyTheClientWhileCallsFailOnClose) {
  int called = 0;
  for (int i = 0; i < 3; ++i) {
    client_->Call("svc", "A", "", {}, [&](Result<std::string>) {
      ++called;
      client_.reset();
    });
  }
  server_->Close();
  ASSERT_TRUE(loop_->RunUntil([&] { return client_ == nullptr; }, testing::kWait));
  loop_->RunUntil([] { return false; }, milliseconds(10));
  EXPECT_EQ(called, 1);
}

TEST_F(ClientTest, CloseFromInsideDoneIsSafe) {
  int called = 0;
  for (int i = 0; i < 3; ++i) {
    client_->Call("svc", "A", "", {}, [&](Result<std::string> r) {
      ++called;
      EXPECT_EQ(r.status().code(), Code::kUnavailable);
      client_->Close();
    });
  }
  client_->Close();
  EXPECT_EQ(called, 3);
}

TEST_F(ClientTest, OnCloseMayReplaceTheClient) {
  // What the event publisher does: reconnect from on_close.
  testing::SocketPair pair = testing::MakeSocketPair();
  bool replaced = false;
  client_->SetOnClose([&](const Status&) {
    client_ = std::move(*Client::FromFd(*loop_, std::move(pair.a)));
    replaced = true;
  });
  server_->Close();
  ASSERT_TRUE(loop_->RunUntil([&] { return replaced; }, testing::kWait));
  EXPECT_TRUE(client_->open());
}

TEST_F(ClientTest, ExplicitCloseFailsPendingWithoutOnClose) {
  std::optional<Result<std::string>> r;
  bool on_close_called = false;
  client_->SetOnClose([&](const Status&) { on_close_called = true; });
  StartCall("M", &r);
  client_->Close();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), Code::kUnavailable);
  EXPECT_TRUE(server_->WaitForEof());
  loop_->RunUntil([] { return false; }, milliseconds(10));
  EXPECT_FALSE(on_close_called);
}

TEST(ClientConnectTest, MissingSocketIsAnError) {
  FdLeakCheck leak_check;
  auto loop = testing::NewLoop();
  auto client = Client::Connect(*loop, "/nonexistent/hull/ttrpc.sock");
  ASSERT_FALSE(client.has_value());
  EXPECT_EQ(client.error().code(), Code::kNotFound);
  EXPECT_EQ(Client::Connect(*loop, std::string(200, 'x')).error().code(), Code::kInvalidArgument);
}

// Client and Server together, over a real socket path.
class ClientServerTest : public FdLeakCheck, public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-ttrpc"};  // dir_ lives in it
  ClientServerTest() : loop_(testing::NewLoop()), server_(std::make_unique<Server>(*loop_)) {
    EXPECT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    path_ = dir_ + "/ttrpc.sock";
    server_->Register("svc", "Echo", [](const CallContext&, std::string p, Responder r) {
      r.Reply(std::move(p));
    });
    server_->Register("svc", "Park", [this](const CallContext&, std::string, Responder r) {
      parked_.push_back(std::move(r));
    });
    server_->Register("svc", "Deadline", [](const CallContext& ctx, std::string, Responder r) {
      r.Reply(ctx.deadline ? "yes" : "no");
    });
    EXPECT_TRUE(server_->Listen(path_).ok());
  }
  ~ClientServerTest() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  std::unique_ptr<Client> Connect() {
    auto client = Client::Connect(*loop_, path_);
    EXPECT_TRUE(client.has_value());
    return std::move(*client);
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Server> server_;
  std::string dir_;
  std::string path_;
  std::vector<Responder> parked_;
};

TEST_F(ClientServerTest, SyncCallsAndTypedCalls) {
  auto client = Connect();
  EXPECT_EQ(*client->CallSync("svc", "Echo", "hello"), "hello");
  EXPECT_EQ(client->CallSync("svc", "Nope", "").error().code(), Code::kUnimplemented);
  EXPECT_EQ(client->CallSync("nope", "Echo", "").error().code(), Code::kUnimplemented);
  ::ttrpc::KeyValue kv;
  kv.set_key("k");
  Result<::ttrpc::KeyValue> back = client->CallUnarySync<::ttrpc::KeyValue>("svc", "Echo", kv);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->key(), "k");
  std::optional<Result<::ttrpc::KeyValue>> async;
  client->CallUnary<::ttrpc::KeyValue>("svc", "Echo", kv, {},
                                       [&](Result<::ttrpc::KeyValue> r) { async = std::move(r); });
  ASSERT_TRUE(loop_->RunUntil([&] { return async.has_value(); }, testing::kWait));
  EXPECT_EQ((*async)->key(), "k");
}

TEST_F(ClientServerTest, DeadlineReachesTheServer) {
  auto client = Connect();
  EXPECT_EQ(*client->CallSync("svc", "Deadline", "",
                              {.deadline = loop_->Now() + std::chrono::seconds(10)}),
            "yes");
  EXPECT_EQ(*client->CallSync("svc", "Deadline", ""), "no");
}

TEST_F(ClientServerTest, ParkedCallDoesNotBlockTheNextOne) {
  auto client = Connect();
  std::optional<Result<std::string>> parked;
  client->Call("svc", "Park", "", {}, [&](Result<std::string> r) { parked = std::move(r); });
  EXPECT_EQ(*client->CallSync("svc", "Echo", "meanwhile"), "meanwhile");
  ASSERT_EQ(parked_.size(), 1u);
  parked_[0].Reply("later");
  ASSERT_TRUE(loop_->RunUntil([&] { return parked.has_value(); }, testing::kWait));
  EXPECT_EQ(**parked, "later");
}

TEST_F(ClientServerTest, ServerShutdownMidCallFailsCallerUnavailable) {
  auto client = Connect();
  std::optional<Result<std::string>> parked;
  client->Call("svc", "Park", "", {}, [&](Result<std::string> r) { parked = std::move(r); });
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.size() == 1; }, testing::kWait));
  bool closed = false;
  client->SetOnClose([&](const Status&) { closed = true; });
  server_.reset();  // the server goes away mid-call
  ASSERT_TRUE(loop_->RunUntil([&] { return closed; }, testing::kWait));
  ASSERT_TRUE(parked.has_value());
  EXPECT_EQ(parked->error(), UnavailableError("ttrpc: closed"));
  parked_.clear();
}

TEST_F(ClientServerTest, ManyCallsInFlight) {
  auto client = Connect();
  int done = 0;
  for (int i = 0; i < 200; ++i) {
    client->Call("svc", "Echo", std::to_string(i), {}, [&done, i](Result<std::string> r) {
      EXPECT_EQ(*r, std::to_string(i));
      ++done;
    });
  }
  ASSERT_TRUE(loop_->RunUntil([&] { return done == 200; }, testing::kWait));
}

}  // namespace
}  // namespace hull::ttrpc
