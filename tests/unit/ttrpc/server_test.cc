// ttrpc::Server, driven by raw peers over socketpair() and real sockets, so
// every reply is checked as it appears on the wire.
#include "ttrpc/server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/client.h"

namespace hull::ttrpc {
namespace {

using std::chrono::milliseconds;
using testing::DecodedResponse;
using testing::FdLeakCheck;
using testing::kEchoService;
using testing::MakeFrame;
using testing::ParseResponse;
using testing::RawPeer;
using testing::RequestFrame;

class ServerTest : public FdLeakCheck, public ::testing::Test {
 protected:
  ServerTest() : loop_(testing::NewLoop()) {}

  void StartServer(ServerOptions options = {}) {
    options.on_error = [this](const Status& s) { errors_.push_back(s); };
    server_ = std::make_unique<Server>(*loop_, std::move(options));
    server_->Register(
        kEchoService, "Echo",
        [](const CallContext&, std::string payload, Responder r) { r.Reply(std::move(payload)); });
    server_->Register(kEchoService, "Park",
                      [this](const CallContext& ctx, std::string payload, Responder r) {
                        parked_[payload] = std::move(r);
                        parked_deadline_ = ctx.deadline;
                        parked_connection_ = ctx.connection;
                      });
    server_->Register(kEchoService, "Meta", [](const CallContext& ctx, std::string, Responder r) {
      r.Reply(std::string(ctx.FindMetadata("containerd-namespace-ttrpc").value_or("<none>")));
    });
    server_->Register(kEchoService, "Fail", [](const CallContext&, std::string, Responder r) {
      r.Fail(NotFoundError("nope"));
    });
    server_->Register(kEchoService, "Drop", [](const CallContext&, std::string, Responder) {});
    server_->Register(kEchoService, "Big", [](const CallContext&, std::string, Responder r) {
      r.Reply(std::string(kMaxMessageSize + 1, 'b'));
    });
    server_->Register(kEchoService, "Huge", [](const CallContext&, std::string, Responder r) {
      r.Reply(std::string(3u << 20, 'h'));
    });
  }

  std::unique_ptr<RawPeer> Connect() {
    testing::SocketPair pair = testing::MakeSocketPair();
    EXPECT_TRUE(server_->ServeConnection(std::move(pair.a)).ok());
    return std::make_unique<RawPeer>(*loop_, std::move(pair.b));
  }

  // Reads one frame and checks it is the Response for `id`.
  DecodedResponse ReadResponse(RawPeer& peer, uint32_t id) {
    std::optional<Frame> frame = peer.Read();
    EXPECT_TRUE(frame.has_value());
    if (!frame) return {.code = Code::kUnknown, .message = "no frame"};
    EXPECT_EQ(frame->header.stream_id, id);
    EXPECT_EQ(frame->header.type, static_cast<uint8_t>(MessageType::kResponse));
    EXPECT_EQ(frame->header.flags, 0);
    return ParseResponse(frame->body);
  }

  DecodedResponse Call(RawPeer& peer, uint32_t id, const std::string& method,
                       const std::string& payload = {}) {
    EXPECT_TRUE(peer.Send(RequestFrame(id, kEchoService, method, payload)));
    return ReadResponse(peer, id);
  }

  void ExpectEchoWorks(RawPeer& peer, uint32_t id) {
    DecodedResponse r = Call(peer, id, "Echo", "still here");
    EXPECT_EQ(r.code, Code::kOk) << r.message;
    EXPECT_EQ(r.payload, "still here");
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Server> server_;
  std::map<std::string, Responder> parked_;
  std::optional<EventLoop::Clock::time_point> parked_deadline_;
  ConnectionWatch parked_connection_;
  std::vector<Status> errors_;
};

TEST_F(ServerTest, EchoAndEmptyReply) {
  StartServer();
  auto peer = Connect();
  ExpectEchoWorks(*peer, 1);
  // An OK reply with an empty payload is a zero-length Response body.
  ASSERT_TRUE(peer->Send(RequestFrame(3, kEchoService, "Echo", "")));
  std::optional<Frame> frame = peer->Read();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->header, (FrameHeader{.length = 0, .stream_id = 3, .type = 2, .flags = 0}));
}

TEST_F(ServerTest, UnknownServiceReplyIsByteExact) {
  StartServer();
  auto peer = Connect();
  const char request[] = {0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01,
                          0x00, 0x0A, 0x03, 0x61, 0x2E, 0x42, 0x12, 0x01, 0x4D};
  ASSERT_TRUE(peer->Send(std::string_view(request, sizeof request)));
  const char reply_header[] = {0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x01,
                               0x02, 0x00, 0x0A, 0x0F, 0x08, 0x0C, 0x12, 0x0B};
  std::string want = std::string(reply_header, sizeof reply_header) + "service a.B";
  EXPECT_EQ(peer->ReadRaw(want.size()), want);
}

TEST_F(ServerTest, UnknownMethodIsUnimplemented) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 1, "Nope");
  EXPECT_EQ(r.code, Code::kUnimplemented);
  EXPECT_EQ(r.message, "method Nope");
}

TEST_F(ServerTest, HandlerStatusReachesCaller) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 1, "Fail");
  EXPECT_EQ(r.code, Code::kNotFound);
  EXPECT_EQ(r.message, "nope");
  EXPECT_TRUE(r.payload.empty());
}

TEST_F(ServerTest, ParkedCallDoesNotBlockOthersOnSameConnection) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "wait")));
  ExpectEchoWorks(*peer, 3);  // answered while call 1 is parked
  ASSERT_TRUE(parked_.contains("wait"));
  parked_["wait"].Reply("exited");
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.payload, "exited");
}

TEST_F(ServerTest, RepliesGoOutInCompletionOrder) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "a") +
                         RequestFrame(3, kEchoService, "Park", "b") +
                         RequestFrame(5, kEchoService, "Park", "c")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.size() == 3; }, testing::kWait));
  parked_["c"].Reply("c");
  parked_["a"].Reply("a");
  parked_["b"].Reply("b");
  EXPECT_EQ(ReadResponse(*peer, 5).payload, "c");
  EXPECT_EQ(ReadResponse(*peer, 1).payload, "a");
  EXPECT_EQ(ReadResponse(*peer, 3).payload, "b");
}

TEST_F(ServerTest, ManyConnectionsAreServed) {
  StartServer();
  std::vector<std::unique_ptr<RawPeer>> peers;
  for (int i = 0; i < 8; ++i) peers.push_back(Connect());
  for (auto& peer : peers) ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Echo", "x")));
  for (auto& peer : peers) EXPECT_EQ(ReadResponse(*peer, 1).payload, "x");
  EXPECT_EQ(server_->connection_count(), 8u);
}

TEST_F(ServerTest, OversizedFrameIsResourceExhaustedAndConnectionKeepsWorking) {
  StartServer();
  auto peer = Connect();
  const uint32_t length = kMaxMessageSize + 100;
  auto header = EncodeHeader({.length = length, .stream_id = 1, .type = 1, .flags = 0});
  std::string wire(reinterpret_cast<const char*>(header.data()), header.size());
  wire.append(length, '\x0a');  // would be a valid-looking body if it were read
  ASSERT_TRUE(peer->Send(wire));
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kResourceExhausted);
  EXPECT_EQ(r.message, "message length 4194404 exceed maximum message size of 4194304");
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, BodyOfExactlyMaxSizeIsServed) {
  StartServer();
  auto peer = Connect();
  // Pad the payload so that the whole Request body is exactly 4 MiB.
  std::string probe =
      testing::RequestBody(kEchoService, "Echo", std::string(kMaxMessageSize - 64, 'p'));
  std::string payload(kMaxMessageSize - 64 + (kMaxMessageSize - probe.size()), 'p');
  std::string body = testing::RequestBody(kEchoService, "Echo", payload);
  ASSERT_EQ(body.size(), kMaxMessageSize);
  ASSERT_TRUE(peer->Send(MakeFrame(1, MessageType::kRequest, 0, body)));
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.payload.size(), payload.size());
}

TEST_F(ServerTest, ReplyTooBigForAFrameFailsOnlyThatCall) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 1, "Big");
  EXPECT_EQ(r.code, Code::kResourceExhausted);
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, TruncatedFrameClosesOnlyThatConnection) {
  StartServer();
  auto bad = Connect();
  auto good = Connect();
  // Half a header, then the peer stops sending.
  ASSERT_TRUE(bad->Send(std::string("\x00\x00\x00\x08\x00", 5)));
  ASSERT_EQ(::shutdown(bad->fd(), SHUT_WR), 0);
  EXPECT_TRUE(bad->WaitForEof());
  ExpectEchoWorks(*good, 1);
  ASSERT_TRUE(loop_->RunUntil([&] { return server_->connection_count() == 1; }, testing::kWait));
}

TEST_F(ServerTest, GarbageThatLooksLikeAHugeFrameIsDiscardedNotBuffered) {
  StartServer();
  auto bad = Connect();
  auto good = Connect();
  // "GET / HTTP/1.1": its first four bytes declare a ~1.2 GB body.
  ASSERT_TRUE(bad->Send("GET / HTTP/1.1\r\n\r\n"));
  bad->Close();
  ASSERT_TRUE(loop_->RunUntil([&] { return server_->connection_count() == 1; }, testing::kWait));
  ExpectEchoWorks(*good, 1);
}

TEST_F(ServerTest, UndecodableRequestIsInvalidArgument) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(MakeFrame(1, MessageType::kRequest, 0,
                                   "\x0a\x7f"
                                   "abc")));
  EXPECT_EQ(ReadResponse(*peer, 1).code, Code::kInvalidArgument);
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, UndecodableTypedPayloadIsInvalidArgument) {
  StartServer();
  server_->RegisterUnary<::ttrpc::KeyValue, ::ttrpc::KeyValue>(
      kEchoService, "Typed",
      [](const CallContext&, ::ttrpc::KeyValue req, TypedResponder<::ttrpc::KeyValue> r) {
        ::ttrpc::KeyValue resp;
        resp.set_key(req.value());
        resp.set_value(req.key());
        r.Reply(resp);
      });
  auto peer = Connect();
  ::ttrpc::KeyValue kv;
  kv.set_key("k");
  kv.set_value("v");
  DecodedResponse ok = Call(*peer, 1, "Typed", kv.SerializeAsString());
  ASSERT_EQ(ok.code, Code::kOk);
  ::ttrpc::KeyValue back;
  ASSERT_TRUE(back.ParseFromString(ok.payload));
  EXPECT_EQ(back.key(), "v");
  EXPECT_EQ(back.value(), "k");
  EXPECT_EQ(Call(*peer, 3, "Typed", "\x0a\x7f").code, Code::kInvalidArgument);
}

TEST_F(ServerTest, EvenStreamIdIsInvalidArgument) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 2, "Echo");
  EXPECT_EQ(r.code, Code::kInvalidArgument);
  EXPECT_EQ(r.message, "StreamID must be odd for client initiated streams");
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, ReusedStreamIdIsInvalidArgument) {
  StartServer();
  auto peer = Connect();
  ExpectEchoWorks(*peer, 5);
  EXPECT_EQ(Call(*peer, 5, "Echo").code, Code::kInvalidArgument);
  EXPECT_EQ(Call(*peer, 3, "Echo").code, Code::kInvalidArgument);
  ExpectEchoWorks(*peer, 7);
}

TEST_F(ServerTest, TimeoutNanoGivesDeadlineExceededAndDropsLateAnswer) {
  StartServer();
  auto peer = Connect();
  auto sent_at = loop_->Now();
  ASSERT_TRUE(
      peer->Send(RequestFrame(1, kEchoService, "Park", "slow", /*timeout_nano=*/50'000'000)));
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kDeadlineExceeded);
  EXPECT_GE(loop_->Now() - sent_at, milliseconds(50));
  ASSERT_TRUE(parked_deadline_.has_value());
  ASSERT_TRUE(parked_.contains("slow"));
  EXPECT_FALSE(parked_["slow"].active());
  parked_["slow"].Reply("too late");  // dropped: the next frame is call 3's
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, AnswerBeforeDeadlineWins) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 1, "Echo", "quick");
  ASSERT_TRUE(peer->Send(RequestFrame(3, kEchoService, "Echo", "quick", 10'000'000'000)));
  EXPECT_EQ(ReadResponse(*peer, 3).code, Code::kOk);
  EXPECT_EQ(r.code, Code::kOk);
}

TEST_F(ServerTest, NegativeTimeoutIsAlreadyExpired) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "never", -1)));
  EXPECT_EQ(ReadResponse(*peer, 1).code, Code::kDeadlineExceeded);
  EXPECT_FALSE(parked_.contains("never"));
}

TEST_F(ServerTest, HugeTimeoutIsServed) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "p", INT64_MAX)));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("p"); }, testing::kWait));
  ASSERT_TRUE(parked_deadline_.has_value());
  EXPECT_GT(*parked_deadline_ - loop_->Now(), std::chrono::hours(24 * 365));
  parked_["p"].Reply("ok");
  EXPECT_EQ(ReadResponse(*peer, 1).payload, "ok");
}

TEST_F(ServerTest, MetadataIsVisibleToHandlers) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Meta", "", 0,
                                      {{"other", "x"}, {"containerd-namespace-ttrpc", "k8s.io"}})));
  EXPECT_EQ(ReadResponse(*peer, 1).payload, "k8s.io");
}

TEST_F(ServerTest, DroppedResponderFailsTheCall) {
  StartServer();
  auto peer = Connect();
  DecodedResponse r = Call(*peer, 1, "Drop");
  EXPECT_EQ(r.code, Code::kInternal);
  EXPECT_EQ(r.message, "ttrpc: no reply");
}

TEST_F(ServerTest, ResponderIsSafeAfterConnectionClosed) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "orphan")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("orphan"); }, testing::kWait));
  EXPECT_TRUE(parked_connection_.open());
  EXPECT_TRUE(parked_["orphan"].active());
  peer->Close();
  ASSERT_TRUE(loop_->RunUntil([&] { return server_->connection_count() == 0; }, testing::kWait));
  EXPECT_FALSE(parked_connection_.open());
  EXPECT_FALSE(parked_["orphan"].active());
  parked_["orphan"].Reply("nobody listens");
  // Also after the server itself is gone.
  ASSERT_TRUE(Connect()->Send(RequestFrame(1, kEchoService, "Park", "orphan2")));
  loop_->RunUntil([&] { return parked_.contains("orphan2"); }, testing::kWait);
  server_.reset();
  parked_.clear();
}

TEST_F(ServerTest, DataForUnknownStreamIsAnsweredNotFatal) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(MakeFrame(7, MessageType::kData, 0, "stray")));
  DecodedResponse r = ReadResponse(*peer, 7);
  EXPECT_EQ(r.code, Code::kInvalidArgument);
  EXPECT_EQ(r.message, "StreamID is no longer active");
  ExpectEchoWorks(*peer, 9);
}

TEST_F(ServerTest, DataOnUnaryCallInFlightEndsItWithOneResponse) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "u")));
  ASSERT_TRUE(peer->Send(MakeFrame(1, MessageType::kData, 0, "more")));
  EXPECT_EQ(ReadResponse(*peer, 1).code, Code::kInvalidArgument);
  parked_["u"].Reply("dropped");
  ExpectEchoWorks(*peer, 3);
}

TEST_F(ServerTest, StreamingRequestToUnknownMethodIsUnimplemented) {
  StartServer();
  auto peer = Connect();
  // Go's client opens a client-streaming call with flags 0x02 and no payload,
  // Rust's with 0x06.
  ASSERT_TRUE(peer->Send(RequestFrame(1, "ttrpc.Streaming", "Sum", "", 0, {}, kFlagRemoteOpen)));
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kUnimplemented);
  EXPECT_EQ(r.message, "service ttrpc.Streaming");
  ASSERT_TRUE(peer->Send(
      RequestFrame(3, kEchoService, "Stream", "", 0, {}, kFlagRemoteOpen | kFlagNoData)));
  r = ReadResponse(*peer, 3);
  EXPECT_EQ(r.code, Code::kUnimplemented);
  EXPECT_EQ(r.message, "method Stream");
  // The close-send that follows has no stream to go to.
  ASSERT_TRUE(peer->Send(MakeFrame(3, MessageType::kData, kFlagRemoteClosed | kFlagNoData, "")));
  EXPECT_EQ(ReadResponse(*peer, 3).code, Code::kInvalidArgument);
  ExpectEchoWorks(*peer, 5);
}

TEST_F(ServerTest, StreamingFlagsOnUnaryMethodAreServedAsUnary) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Echo", "x", 0, {}, kFlagRemoteClosed)));
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.payload, "x");
}

TEST_F(ServerTest, UnknownFrameTypesAndResponsesAreIgnored) {
  StartServer();
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(MakeFrame(1, static_cast<MessageType>(9), 0xff, "future")));
  ASSERT_TRUE(peer->Send(MakeFrame(3, MessageType::kResponse, 0, "")));
  ExpectEchoWorks(*peer, 5);
}

TEST_F(ServerTest, SlowReaderDoesNotBlockOtherConnections) {
  StartServer();
  auto slow = Connect();
  auto other = Connect();
  // 8 replies of 3 MiB that nobody reads: far more than the socket buffers.
  std::string requests;
  for (uint32_t id = 1; id <= 15; id += 2) requests += RequestFrame(id, kEchoService, "Huge");
  ASSERT_TRUE(slow->Send(requests));
  ExpectEchoWorks(*other, 1);
  // The slow peer gets every byte once it reads.
  for (uint32_t id = 1; id <= 15; id += 2) {
    DecodedResponse r = ReadResponse(*slow, id);
    EXPECT_EQ(r.payload.size(), 3u << 20);
  }
}

TEST_F(ServerTest, ListensOnAPathAndServesClients) {
  StartServer();
  char dir_template[] = "/tmp/hull-ttrpc-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  std::string path = std::string(dir_template) + "/s.sock";
  ASSERT_TRUE(server_->Listen("unix://" + path).ok());
  EXPECT_EQ(server_->Listen(path).code(), Code::kAlreadyExists);
  for (int i = 0; i < 3; ++i) {
    auto client = Client::Connect(*loop_, path);
    ASSERT_TRUE(client.has_value()) << client.error().ToString();
    Result<std::string> reply = (*client)->CallSync(kEchoService, "Echo", "over a path");
    ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
    EXPECT_EQ(*reply, "over a path");
  }
  server_.reset();
  ::unlink(path.c_str());
  ::rmdir(dir_template);
}

TEST_F(ServerTest, ServesAnInheritedListener) {
  StartServer();
  std::string name = "@hull-ttrpc-test-" + std::to_string(::getpid());
  int raw = ::socket(AF_UNIX, SOCK_STREAM, 0);  // blocking, no CLOEXEC: as inherited
  ASSERT_GE(raw, 0);
  UniqueFd listener(raw);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data() + 1, name.size() - 1);
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  ASSERT_EQ(::bind(raw, reinterpret_cast<sockaddr*>(&addr), len), 0);
  // Not listening yet: refused.
  Result<UniqueFd> dup = listener.Duplicate();
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(server_->Serve(std::move(*dup)).code(), Code::kInvalidArgument);
  ASSERT_EQ(::listen(raw, 8), 0);
  ASSERT_TRUE(server_->Serve(std::move(listener)).ok());
  EXPECT_NE(::fcntl(raw, F_GETFD) & FD_CLOEXEC, 0);
  auto client = Client::Connect(*loop_, name);
  ASSERT_TRUE(client.has_value()) << client.error().ToString();
  EXPECT_EQ(*(*client)->CallSync(kEchoService, "Echo", "fd 3"), "fd 3");
}

TEST_F(ServerTest, ShutdownAnswersCallsInFlightThenCloses) {
  StartServer();
  auto busy = Connect();
  auto idle = Connect();
  ExpectEchoWorks(*idle, 1);
  ASSERT_TRUE(busy->Send(RequestFrame(1, kEchoService, "Park", "wait")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("wait"); }, testing::kWait));
  bool done = false;
  server_->Shutdown([&] { done = true; });
  EXPECT_TRUE(idle->WaitForEof());  // idle connections close at once
  // The busy connection keeps serving until its call is answered.
  ExpectEchoWorks(*busy, 3);
  EXPECT_FALSE(done);
  parked_["wait"].Reply("exited");
  DecodedResponse r = ReadResponse(*busy, 1);
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.payload, "exited");
  EXPECT_TRUE(busy->WaitForEof());
  EXPECT_TRUE(loop_->RunUntil([&] { return done; }, testing::kWait));
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(ServerTest, ShutdownFailsCallsStillInFlightAfterGrace) {
  StartServer({.shutdown_grace = milliseconds(50)});
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "forever")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("forever"); }, testing::kWait));
  bool done = false;
  server_->Shutdown([&] { done = true; });
  DecodedResponse r = ReadResponse(*peer, 1);
  EXPECT_EQ(r.code, Code::kUnavailable);
  EXPECT_TRUE(peer->WaitForEof());
  EXPECT_TRUE(loop_->RunUntil([&] { return done; }, testing::kWait));
  EXPECT_FALSE(parked_["forever"].active());
}

TEST_F(ServerTest, ShutdownWithNothingToDoStillCallsDoneLater) {
  StartServer();
  bool done = false;
  server_->Shutdown([&] { done = true; });
  EXPECT_FALSE(done);  // never inside Shutdown
  EXPECT_TRUE(loop_->RunUntil([&] { return done; }, testing::kWait));
  testing::SocketPair pair = testing::MakeSocketPair();
  EXPECT_EQ(server_->ServeConnection(std::move(pair.a)).code(), Code::kUnavailable);
}

// Runs `child` in a forked process that drops to nobody first; returns its
// exit code (or -1). The parent's loop keeps running meanwhile.
int RunAsNobody(EventLoop& loop, const std::function<int()>& child) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(99);
    _exit(child());
  }
  int status = -1;
  bool reaped = false;
  EventHandle poll = loop.AddRepeatingTimer(milliseconds(5), [&] {
    if (::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
  });
  if (!loop.RunUntil([&] { return reaped; }, testing::kWait)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// In the child: connect, send one Echo, and report what came back:
// 0 = closed with no reply, 1 = got a reply, 2 = error.
int ConnectAndCall(const std::string& name) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data() + 1, name.size() - 1);
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) return 2;
  std::string req = RequestFrame(1, kEchoService, "Echo", "hi");
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return 0;  // already closed by the server
  }
  timeval tv{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[64];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n == 0 || (n < 0 && errno == ECONNRESET)) return 0;
  return n > 0 ? 1 : 2;
}

TEST_F(ServerTest, PeerWithOtherCredentialsIsClosedWithoutReply) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user (setresuid)";
  StartServer();
  std::string name = "@hull-ttrpc-cred-" + std::to_string(::getpid());
  ASSERT_TRUE(server_->Listen(name).ok());
  EXPECT_EQ(RunAsNobody(*loop_, [&] { return ConnectAndCall(name); }), 0);
  ASSERT_FALSE(errors_.empty());
  EXPECT_EQ(errors_.back().code(), Code::kPermissionDenied);
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(ServerTest, PeerCredentialCheckCanBeTurnedOff) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user (setresuid)";
  StartServer({.require_same_user = false});
  std::string name = "@hull-ttrpc-nocred-" + std::to_string(::getpid());
  ASSERT_TRUE(server_->Listen(name).ok());
  EXPECT_EQ(RunAsNobody(*loop_, [&] { return ConnectAndCall(name); }), 1);
}

}  // namespace
}  // namespace hull::ttrpc
