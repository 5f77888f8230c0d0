// ttrpc::Server's limits: the connection cap (evicting the idlest), the cap
// on calls in flight per connection, the partial-frame deadline, and a flood
// of connections past the server's descriptor limit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/server.h"

namespace hull::ttrpc {
namespace {

using std::chrono::milliseconds;
using testing::kEchoService;
using testing::ParseResponse;
using testing::RawPeer;
using testing::RequestFrame;

void RegisterTestMethods(Server& server, std::map<std::string, Responder>* parked) {
  server.Register(kEchoService, "Echo", [](const CallContext&, std::string payload, Responder r) {
    r.Reply(std::move(payload));
  });
  server.Register(kEchoService, "Park",
                  [parked](const CallContext&, std::string payload, Responder r) {
                    (*parked)[payload] = std::move(r);
                  });
}

class ServerLimitsTest : public testing::FdLeakCheck, public ::testing::Test {
 protected:
  ServerLimitsTest() : loop_(testing::NewLoop()) {}

  void StartServer(ServerOptions options) {
    options.on_error = [this](const Status& s) { errors_.push_back(s); };
    server_ = std::make_unique<Server>(*loop_, std::move(options));
    RegisterTestMethods(*server_, &parked_);
  }

  std::unique_ptr<RawPeer> Connect() {
    testing::SocketPair pair = testing::MakeSocketPair();
    EXPECT_TRUE(server_->ServeConnection(std::move(pair.a)).ok());
    return std::make_unique<RawPeer>(*loop_, std::move(pair.b));
  }

  // Sends an Echo on `id` and checks the reply.
  void ExpectEcho(RawPeer& peer, uint32_t id) {
    ASSERT_TRUE(peer.Send(RequestFrame(id, kEchoService, "Echo", "e" + std::to_string(id))));
    std::optional<Frame> frame = peer.Read();
    ASSERT_TRUE(frame.has_value());
    EXPECT_EQ(frame->header.stream_id, id);
    EXPECT_EQ(ParseResponse(frame->body).payload, "e" + std::to_string(id));
  }

  size_t CountErrors(Code code) const {
    size_t n = 0;
    for (const Status& s : errors_) n += s.code() == code;
    return n;
  }

  std::unique_ptr<EventLoop> loop_;
  std::map<std::string, Responder> parked_;
  std::vector<Status> errors_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerLimitsTest, AtTheCapTheIdlestConnectionWithoutCallsIsClosed) {
  StartServer({.max_connections = 3});
  ASSERT_EQ(server_->connection_cap(), 3u);
  auto busy = Connect();  // oldest, but has a call in flight
  ASSERT_TRUE(busy->Send(RequestFrame(1, kEchoService, "Park", "w")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("w"); }, testing::kWait));
  auto quiet = Connect();
  auto talking = Connect();
  ExpectEcho(*quiet, 1);
  ExpectEcho(*talking, 1);  // now `quiet` is the idlest without calls
  auto fresh = Connect();

  EXPECT_TRUE(quiet->WaitForEof());
  EXPECT_EQ(server_->connection_count(), 3u);
  EXPECT_EQ(server_->evictions(), 1u);
  EXPECT_EQ(CountErrors(Code::kResourceExhausted), 1u);
  EXPECT_TRUE(parked_["w"].active());
  ExpectEcho(*fresh, 1);
  ExpectEcho(*talking, 3);
  parked_["w"].Reply("done");
  std::optional<Frame> reply = busy->Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(ParseResponse(reply->body).payload, "done");
}

TEST_F(ServerLimitsTest, SilentConnectionsGoBeforeOnesThatMadeCalls) {
  StartServer({.max_connections = 3});
  auto containerd = Connect();
  ExpectEcho(*containerd, 1);  // spoke once, long ago
  auto silent1 = Connect();
  auto silent2 = Connect();
  auto fresh = Connect();
  EXPECT_TRUE(silent1->WaitForEof());  // the oldest of the silent ones
  auto fresher = Connect();
  EXPECT_TRUE(silent2->WaitForEof());
  ExpectEcho(*containerd, 3);
  ExpectEcho(*fresher, 1);
  EXPECT_EQ(server_->evictions(), 2u);
}

TEST_F(ServerLimitsTest, AtTheCapWithEveryConnectionBusyTheIdlestStillGoes) {
  StartServer({.max_connections = 2});
  auto first = Connect();
  auto second = Connect();
  ASSERT_TRUE(first->Send(RequestFrame(1, kEchoService, "Park", "a")));
  ASSERT_TRUE(second->Send(RequestFrame(1, kEchoService, "Park", "b")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.size() == 2; }, testing::kWait));
  auto fresh = Connect();  // never refused

  EXPECT_TRUE(first->WaitForEof());
  EXPECT_FALSE(parked_["a"].active());
  EXPECT_TRUE(parked_["b"].active());
  ExpectEcho(*fresh, 1);
  EXPECT_EQ(server_->connection_count(), 2u);
}

TEST_F(ServerLimitsTest, CallsInFlightPastTheCapAreResourceExhausted) {
  StartServer({.max_calls_per_connection = 2});
  auto peer = Connect();
  ASSERT_TRUE(peer->Send(RequestFrame(1, kEchoService, "Park", "1") +
                         RequestFrame(3, kEchoService, "Park", "3") +
                         RequestFrame(5, kEchoService, "Park", "5")));
  std::optional<Frame> refused = peer->Read();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->header.stream_id, 5u);
  EXPECT_EQ(ParseResponse(refused->body).code, Code::kResourceExhausted);
  EXPECT_EQ(parked_.size(), 2u);
  EXPECT_EQ(CountErrors(Code::kResourceExhausted), 1u);

  // Answering one makes room again; the connection kept working throughout.
  parked_["1"].Reply("one");
  ASSERT_TRUE(peer->Read().has_value());
  ASSERT_TRUE(peer->Send(RequestFrame(7, kEchoService, "Park", "7")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked_.contains("7"); }, testing::kWait));
  EXPECT_TRUE(parked_["7"].active());
}

TEST_F(ServerLimitsTest, HalfFrameIsClosedAfterTheDeadlineIdleConnectionsStay) {
  StartServer({.partial_frame_deadline = milliseconds(50)});
  auto idle = Connect();
  ExpectEcho(*idle, 1);  // a whole frame, then silence: not a partial frame
  auto half = Connect();
  std::string frame = RequestFrame(1, kEchoService, "Echo", "x");
  ASSERT_TRUE(half->Send(frame.substr(0, frame.size() / 2)));

  EXPECT_TRUE(half->WaitForEof());
  EXPECT_EQ(CountErrors(Code::kDeadlineExceeded), 1u);
  EXPECT_EQ(server_->connection_count(), 1u);
  ExpectEcho(*idle, 3);
}

TEST_F(ServerLimitsTest, ClaimOfAFourGibBodyIsClosedAfterTheDeadline) {
  StartServer({.partial_frame_deadline = milliseconds(50)});
  auto peer = Connect();
  std::string header = testing::MakeFrame(1, MessageType::kRequest, 0, "");
  header[0] = header[1] = header[2] = header[3] = '\xff';
  ASSERT_TRUE(peer->Send(header + std::string(64 * 1024, 'g')));
  EXPECT_TRUE(peer->WaitForEof());
  EXPECT_EQ(CountErrors(Code::kDeadlineExceeded), 1u);
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(ServerLimitsTest, FrameCompletedBeforeTheDeadlineIsServed) {
  StartServer({.partial_frame_deadline = std::chrono::seconds(30)});
  auto peer = Connect();
  std::string frame = RequestFrame(1, kEchoService, "Echo", "e1");
  ASSERT_TRUE(peer->Send(frame.substr(0, 7)));
  (void)loop_->RunUntil([] { return false; }, milliseconds(5));  // the server reads part one
  ASSERT_TRUE(peer->Send(frame.substr(7)));
  std::optional<Frame> reply = peer->Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(ParseResponse(reply->body).payload, "e1");
  EXPECT_EQ(CountErrors(Code::kDeadlineExceeded), 0u);
}

TEST_F(ServerLimitsTest, CapFollowsTheDescriptorLimit) {
  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  StartServer({.max_connections = 0});
  if (nofile.rlim_cur == RLIM_INFINITY) {
    EXPECT_EQ(server_->connection_cap(), std::numeric_limits<size_t>::max());
  } else {
    EXPECT_EQ(server_->connection_cap(), std::max<size_t>(4, nofile.rlim_cur / 2));
  }
}

// --- A flood past the descriptor limit, against a server in a child process.

std::string AbstractName(const char* tag) {
  return std::string("@hull-ttrpc-") + tag + "-" + std::to_string(::getpid());
}

UniqueFd ConnectTo(const std::string& name) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data() + 1, name.size() - 1);
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  // Bounds connect() too: it blocks while the server's backlog is full.
  timeval tv{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) return UniqueFd();
  return fd;
}

// A blocking Echo call; the payload that came back, or nullopt.
std::optional<std::string> CallEcho(int fd, const std::string& payload) {
  std::string req = RequestFrame(1, kEchoService, "Echo", payload);
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return std::nullopt;
  }
  FrameDecoder decoder;
  char buf[4096];
  for (;;) {
    if (std::optional<Frame> frame = decoder.Next()) return ParseResponse(frame->body).payload;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

// True once the peer has closed `fd` (without blocking).
bool ClosedByPeer(int fd) {
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

class ChildServer {
 public:
  // Forks a server with RLIMIT_NOFILE `nofile` and default options, listening
  // on `name`. The child serves until killed.
  ChildServer(const std::string& name, rlim_t nofile) {
    int ready[2];
    EXPECT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      rlimit limit{.rlim_cur = nofile, .rlim_max = nofile};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
      auto loop = EventLoop::Create();
      if (!loop) _exit(3);
      std::map<std::string, Responder> parked;
      Server server(**loop, {});
      RegisterTestMethods(server, &parked);
      if (!server.Listen(name).ok()) _exit(4);
      char ok = 1;
      if (::write(ready[1], &ok, 1) != 1) _exit(5);
      ::close(ready[1]);
      (void)(*loop)->Run();
      _exit(0);
    }
    ::close(ready[1]);
    char ok = 0;
    ready_ = ::read(ready[0], &ok, 1) == 1 && ok == 1;
    ::close(ready[0]);
  }
  ~ChildServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool ready() const { return ready_; }
  bool alive() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
};

TEST(ServerFloodTest, MoreConnectionsThanTheServerHasDescriptorsAndAFreshClientIsServed) {
  constexpr rlim_t kServerFds = 64;
  constexpr int kFlood = 400;  // 6x the server's descriptors, all held open
  rlimit own{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &own), 0);
  if (own.rlim_cur < kFlood + 64) GTEST_SKIP() << "this process needs " << kFlood + 64 << " fds";
  std::string name = AbstractName("flood");
  ChildServer server(name, kServerFds);
  ASSERT_TRUE(server.ready());

  std::vector<UniqueFd> held;
  for (int i = 0; i < kFlood; ++i) {
    UniqueFd fd = ConnectTo(name);
    ASSERT_TRUE(fd) << "connect " << i << ": " << std::strerror(errno);
    held.push_back(std::move(fd));
  }
  // The flood itself was served as it came: the newest connection works.
  ASSERT_EQ(CallEcho(held.back().get(), "newest"), "newest");

  UniqueFd fresh = ConnectTo(name);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(CallEcho(fresh.get(), "fresh"), "fresh");
  EXPECT_TRUE(server.alive());

  size_t closed = 0;
  for (const UniqueFd& fd : held) closed += ClosedByPeer(fd.get());
  // At most half the server's descriptors hold connections.
  EXPECT_GE(closed, held.size() + 1 - kServerFds / 2);
}

}  // namespace
}  // namespace hull::ttrpc
