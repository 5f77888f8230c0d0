// PortServer over a pty master, which behaves like a virtio-serial port on
// the guest side: it stays open, reports POLLHUP while nobody holds the other
// end, and the hangup clears when someone opens it again.
#include "agent/port_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::agent {
namespace {

using namespace std::chrono_literals;

class PortServerTest : public ::testing::Test {
 protected:
  PortServerTest() {
    auto loop = EventLoop::Create();
    EXPECT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    server_->Register("test.Echo", "Echo",
                      [](const ttrpc::CallContext&, std::string payload, ttrpc::Responder r) {
                        r.Reply(std::move(payload));
                      });
    UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    EXPECT_TRUE(master.valid());
    EXPECT_EQ(::grantpt(master.get()), 0);
    EXPECT_EQ(::unlockpt(master.get()), 0);
    slave_path_ = ::ptsname(master.get());
    // Raw mode is a property of the pty, kept while the master is open.
    UniqueFd slave = OpenSlave();
    termios tio{};
    EXPECT_EQ(::tcgetattr(slave.get(), &tio), 0);
    ::cfmakeraw(&tio);
    EXPECT_EQ(::tcsetattr(slave.get(), TCSANOW, &tio), 0);
    held_slave_ = std::move(slave);
    port_ = std::make_unique<PortServer>(*loop_, *server_, std::move(master));
  }

  UniqueFd OpenSlave() {
    UniqueFd slave(::open(slave_path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
    EXPECT_TRUE(slave.valid());
    return slave;
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ttrpc::Server> server_;
  std::string slave_path_;
  UniqueFd held_slave_;
  std::unique_ptr<PortServer> port_;
};

TEST_F(PortServerTest, ServesEachHostThatAttachesInTurn) {
  port_->Start();
  ASSERT_TRUE(port_->attached());
  auto first = ttrpc::Client::FromFd(*loop_, std::move(held_slave_));
  ASSERT_TRUE(first.has_value());
  Result<std::string> reply = (*first)->CallSync("test.Echo", "Echo", "one");
  ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
  EXPECT_EQ(*reply, "one");

  // The host goes: the port hangs up, the connection ends, PortServer waits.
  first->reset();
  ASSERT_TRUE(loop_->RunUntil([&] { return !port_->attached(); }, 5s));
  loop_->RunUntil([] { return false; }, 3 * PortServer::kAttachPoll);
  EXPECT_FALSE(port_->attached());
  EXPECT_EQ(port_->connections(), 1u);

  // A new host: a fresh session (stream ids from 1 again) is served.
  for (int round = 2; round <= 3; ++round) {
    auto next = ttrpc::Client::FromFd(*loop_, OpenSlave());
    ASSERT_TRUE(next.has_value());
    reply = (*next)->CallSync("test.Echo", "Echo", std::to_string(round));
    ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
    EXPECT_EQ(*reply, std::to_string(round));
    EXPECT_TRUE(port_->attached());
    EXPECT_EQ(port_->connections(), static_cast<uint64_t>(round));
    next->reset();
    ASSERT_TRUE(loop_->RunUntil([&] { return !port_->attached(); }, 5s));
  }
}

TEST_F(PortServerTest, AHostThatAttachesAgainBeforeTheHangupIsSeenStartsANewSession) {
  port_->Start();
  // Two clients one after the other on the same open slave, with no hangup
  // in between: the second starts at stream 1 again.
  int fd = held_slave_.get();
  for (int round = 0; round < 2; ++round) {
    auto client = ttrpc::Client::FromFd(*loop_, UniqueFd(::dup(fd)));
    ASSERT_TRUE(client.has_value());
    for (int i = 0; i < 2; ++i) {
      Result<std::string> reply = (*client)->CallSync("test.Echo", "Echo", "x");
      ASSERT_TRUE(reply.has_value()) << "round " << round << ": " << reply.error().ToString();
    }
  }
  EXPECT_EQ(port_->connections(), 1u);
}

}  // namespace
}  // namespace hull::agent
