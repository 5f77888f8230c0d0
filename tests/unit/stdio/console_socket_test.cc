// Tests for ConsoleSocket: receiving a real pty master sent as runc sends it,
// the short-path fallback, and a runtime that sends nothing or a non-tty.
#include "runtime/console_socket.h"

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>

#include <optional>

#include "tests/unit/stdio/stdio_test_util.h"

namespace hull::runtime {
namespace {

namespace testing = shim::stdio::testing;

using testing::SendFd;
using testing::TempDir;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class ConsoleSocketTest : public testing::LoopTest {
 protected:
  void TearDown() override {
    received_.reset();
    LoopTest::TearDown();
  }
  std::optional<Result<UniqueFd>> received_;
  TempDir dir_;
};

TEST_F(ConsoleSocketTest, ReceivesThePtyMasterAndRemovesTheFile) {
  auto sock = ConsoleSocket::Create(dir_.path());
  ASSERT_TRUE(sock.has_value()) << sock.error().ToString();
  const std::string path = (*sock)->path();
  EXPECT_EQ(path.rfind(dir_.path() + "/", 0), 0u) << path;
  EXPECT_TRUE(Exists(path));
  (*sock)->Receive(*loop_, [&](Result<UniqueFd> m) { received_ = std::move(m); });

  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  UniqueFd master_fd(master), slave_fd(slave);
  ASSERT_TRUE(SendFd(path, master, ttyname(slave)));
  master_fd.reset();  // runc closes its copy

  ASSERT_TRUE(RunUntil([&] { return received_.has_value(); }));
  ASSERT_TRUE(received_->has_value()) << received_->error().ToString();
  EXPECT_TRUE(::isatty((*received_)->get()));
  EXPECT_FALSE(Exists(path));
  // The received master is the one the slave belongs to.
  ASSERT_EQ(::write(slave, "x", 1), 1);
  char c = 0;
  EXPECT_EQ(::read((*received_)->get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
  EXPECT_NE(::fcntl((*received_)->get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(ConsoleSocketTest, LongDirectoryFallsBackToAPrivateTempDir) {
  std::string deep = dir_.path();
  while (deep.size() < 120) deep += "/a-rather-long-directory-name";
  auto sock = ConsoleSocket::Create(deep);  // need not even exist
  ASSERT_TRUE(sock.has_value()) << sock.error().ToString();
  const std::string path = (*sock)->path();
  EXPECT_LT(path.size(), sizeof(sockaddr_un::sun_path));
  const std::string parent = path.substr(0, path.rfind('/'));
  struct stat st;
  ASSERT_EQ(::stat(parent.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  sock->reset();
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(parent));
}

TEST_F(ConsoleSocketTest, RuntimeClosingWithoutSendingIsAnError) {
  auto sock = ConsoleSocket::Create(dir_.path());
  ASSERT_TRUE(sock.has_value());
  const std::string path = (*sock)->path();
  (*sock)->Receive(*loop_, [&](Result<UniqueFd> m) { received_ = std::move(m); });
  {
    UniqueFd conn(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(::connect(conn.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ASSERT_TRUE(RunUntil([&] { return received_.has_value(); }));
  EXPECT_FALSE(received_->has_value());
  EXPECT_FALSE(Exists(path));
}

TEST_F(ConsoleSocketTest, ANonTerminalDescriptorIsRefused) {
  auto sock = ConsoleSocket::Create(dir_.path());
  ASSERT_TRUE(sock.has_value());
  (*sock)->Receive(*loop_, [&](Result<UniqueFd> m) { received_ = std::move(m); });
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  ASSERT_TRUE(SendFd((*sock)->path(), pipe->read.get(), "/dev/pts/bogus"));
  ASSERT_TRUE(RunUntil([&] { return received_.has_value(); }));
  EXPECT_FALSE(received_->has_value());
}

TEST_F(ConsoleSocketTest, DroppedBeforeAnyConnectionLeavesNothing) {
  std::string path;
  {
    auto sock = ConsoleSocket::Create(dir_.path());
    ASSERT_TRUE(sock.has_value());
    path = (*sock)->path();
    (*sock)->Receive(*loop_, [&](Result<UniqueFd> m) { received_ = std::move(m); });
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(received_.has_value());
}

}  // namespace
}  // namespace hull::runtime
