// ttrpc over a character device: hull's client and server on the two ends of
// a pty in raw mode, which (like a virtio-serial port) must be driven with
// read()/write(), not recv()/send(). Sockets keep their own path (the rest of
// the ttrpc tests).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::ttrpc {
namespace {

using testing::FdLeakCheck;
using testing::kEchoService;
using testing::kWait;

struct Pty {
  UniqueFd master;
  UniqueFd slave;
};

// A pty pair whose line discipline passes every byte through unchanged.
Pty OpenRawPty() {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  EXPECT_TRUE(master.valid());
  EXPECT_EQ(::grantpt(master.get()), 0);
  EXPECT_EQ(::unlockpt(master.get()), 0);
  UniqueFd slave(::open(::ptsname(master.get()), O_RDWR | O_NOCTTY | O_CLOEXEC));
  EXPECT_TRUE(slave.valid());
  struct termios tio {};
  EXPECT_EQ(::tcgetattr(slave.get(), &tio), 0);
  ::cfmakeraw(&tio);
  EXPECT_EQ(::tcsetattr(slave.get(), TCSANOW, &tio), 0);
  return Pty{std::move(master), std::move(slave)};
}

// Writes all of `bytes` to a blocking descriptor with write().
void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    ASSERT_GT(n, 0) << "write: " << errno;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

class DeviceTest : public FdLeakCheck, public ::testing::Test {
 protected:
  DeviceTest() : loop_(testing::NewLoop()) {
    // The default, require_same_user, must not refuse a device: it has no peer.
    server_ = std::make_unique<Server>(*loop_);
    server_->Register(
        kEchoService, "Echo",
        [](const CallContext&, std::string payload, Responder r) { r.Reply(std::move(payload)); });
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Server> server_;
};

TEST_F(DeviceTest, UnaryCallsOverAPty) {
  Pty pty = OpenRawPty();
  ASSERT_TRUE(server_->ServeConnection(std::move(pty.master)).ok());
  auto client = Client::FromFd(*loop_, std::move(pty.slave));
  ASSERT_TRUE(client.has_value());

  Result<std::string> reply = (*client)->CallSync(kEchoService, "Echo", "hello");
  ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
  EXPECT_EQ(*reply, "hello");

  // Far more than a pty buffers (about 4 KiB): both ends see short reads and
  // writes and EAGAIN, in both directions.
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
  reply = (*client)->CallSync(kEchoService, "Echo", big);
  ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
  EXPECT_EQ(*reply, big);

  Result<std::string> missing = (*client)->CallSync(kEchoService, "Nope", "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Code::kUnimplemented);
}

TEST_F(DeviceTest, OversizedFrameIsRefusedAndTheDeviceKeepsServing) {
  Pty pty = OpenRawPty();
  ASSERT_TRUE(server_->ServeConnection(std::move(pty.master)).ok());
  int peer = pty.slave.get();

  // A Request whose body is one byte over the limit: skipped exactly, then
  // ResourceExhausted on its stream, and the next call is served.
  std::string oversized =
      testing::MakeFrame(1, MessageType::kRequest, 0, std::string(kMaxMessageSize + 1, 'x'));
  std::string next = testing::RequestFrame(3, kEchoService, "Echo", "after");
  std::string received;
  FrameDecoder decoder;
  std::vector<Frame> frames;
  // The writes run beside the loop (the pty holds only a few KiB), so a
  // thread of the test writes while the loop serves.
  std::thread writer([&] {
    WriteAll(peer, oversized);
    WriteAll(peer, next);
  });
  EventHandle watch = loop_->WatchFd(peer, kReadable, [&](uint32_t) {
    char buf[4096];
    ssize_t n = ::read(peer, buf, sizeof buf);
    if (n > 0) decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
    while (auto f = decoder.Next()) frames.push_back(std::move(*f));
  });
  bool got_both = loop_->RunUntil([&] { return frames.size() >= 2; }, kWait * 4);
  writer.join();
  ASSERT_TRUE(got_both);
  EXPECT_EQ(frames[0].header.stream_id, 1u);
  EXPECT_EQ(testing::ParseResponse(frames[0].body).code, Code::kResourceExhausted);
  EXPECT_EQ(frames[1].header.stream_id, 3u);
  EXPECT_EQ(testing::ParseResponse(frames[1].body).payload, "after");
}

TEST_F(DeviceTest, OnClosedRunsWhenThePeerGoesAndANewConnectionIsServed) {
  for (int round = 0; round < 2; ++round) {
    Pty pty = OpenRawPty();
    bool closed = false;
    ASSERT_TRUE(
        server_->ServeConnection(std::move(pty.master), {.on_closed = [&closed] { closed = true; }})
            .ok());
    auto client = Client::FromFd(*loop_, std::move(pty.slave));
    ASSERT_TRUE(client.has_value());
    Result<std::string> reply = (*client)->CallSync(kEchoService, "Echo", std::to_string(round));
    ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
    EXPECT_EQ(*reply, std::to_string(round));
    EXPECT_FALSE(closed);
    client->reset();  // the slave closes: the master reads EIO, which is EOF
    ASSERT_TRUE(loop_->RunUntil([&] { return closed; }, kWait));
    EXPECT_EQ(server_->connection_count(), 0u);
  }
}

// A peer that attached again before the hangup was read: its first Request
// (stream 1) starts a new session; the old session's parked call can no
// longer answer on the wire, even though the new session reuses its id.
TEST_F(DeviceTest, StreamOneRestartsTheSessionWhenAsked) {
  Responder parked;
  server_->Register(kEchoService, "Park", [&parked](const CallContext&, std::string, Responder r) {
    parked = std::move(r);
  });
  testing::SocketPair pair = testing::MakeSocketPair();
  ASSERT_TRUE(
      server_->ServeConnection(std::move(pair.a), {.restart_session_on_stream_one = true}).ok());
  testing::RawPeer peer(*loop_, std::move(pair.b));

  ASSERT_TRUE(peer.Send(testing::RequestFrame(1, kEchoService, "Park")));
  ASSERT_TRUE(loop_->RunUntil([&] { return parked.active(); }, kWait));
  ASSERT_TRUE(peer.Send(testing::RequestFrame(3, kEchoService, "Echo", "old")));
  std::optional<Frame> frame = peer.Read();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->header.stream_id, 3u);

  // The new peer starts at 1 again.
  ASSERT_TRUE(peer.Send(testing::RequestFrame(1, kEchoService, "Echo", "new")));
  frame = peer.Read();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->header.stream_id, 1u);
  EXPECT_EQ(testing::ParseResponse(frame->body).payload, "new");
  EXPECT_FALSE(parked.active());
  parked.Reply("stale");  // dropped: it belongs to the old session

  ASSERT_TRUE(peer.Send(testing::RequestFrame(3, kEchoService, "Echo", "next")));
  frame = peer.Read();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->header.stream_id, 3u);
  EXPECT_EQ(testing::ParseResponse(frame->body).payload, "next");
}

TEST_F(DeviceTest, StreamOneAgainIsRefusedByDefault) {
  testing::SocketPair pair = testing::MakeSocketPair();
  ASSERT_TRUE(server_->ServeConnection(std::move(pair.a)).ok());
  testing::RawPeer peer(*loop_, std::move(pair.b));
  ASSERT_TRUE(peer.Send(testing::RequestFrame(1, kEchoService, "Echo", "a")));
  ASSERT_TRUE(peer.Read().has_value());
  ASSERT_TRUE(peer.Send(testing::RequestFrame(1, kEchoService, "Echo", "b")));
  std::optional<Frame> frame = peer.Read();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(testing::ParseResponse(frame->body).code, Code::kInvalidArgument);
}

TEST_F(DeviceTest, APipeIsDrivenWithWrite) {
  // A pipe is not a socket either: the client's Request goes out with write()
  // and reaches the other end byte for byte.
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]);
  auto client = Client::FromFd(*loop_, UniqueFd(fds[1]));
  ASSERT_TRUE(client.has_value());
  (*client)->Call(kEchoService, "Echo", "p", {}, [](Result<std::string>) {});
  std::string expected = testing::RequestFrame(1, kEchoService, "Echo", "p");
  std::string got;
  EventHandle watch = loop_->WatchFd(read_end.get(), kReadable, [&](uint32_t) {
    char buf[256];
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  });
  ASSERT_TRUE(loop_->RunUntil([&] { return got.size() >= expected.size(); }, kWait));
  EXPECT_EQ(got, expected);
  watch.Reset();
  client->reset();
}

}  // namespace
}  // namespace hull::ttrpc
