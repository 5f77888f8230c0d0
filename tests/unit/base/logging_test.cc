#include "base/logging.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace hull {
namespace {

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(LoggingTest, WritesLogrusStyleLinesToFd) {
  auto pipe = MakePipe(O_NONBLOCK);
  ASSERT_TRUE(pipe.has_value());
  int read_fd = pipe->read.get();
  Logger log = Logger::ToFd(std::move(pipe->write));
  log.Info("created {} with pid {}", "abc", 42);
  log.Debug("not shown at info level");
  std::string out = Drain(read_fd);
  EXPECT_NE(out.find("level=info msg=\"created abc with pid 42\""), std::string::npos) << out;
  EXPECT_EQ(out.find("not shown"), std::string::npos);
  log.set_level(LogLevel::kDebug);
  log.Debug("now shown");
  EXPECT_NE(Drain(read_fd).find("level=debug"), std::string::npos);
}

TEST(LoggingTest, WriteToClosedReaderIsDropped) {
  signal(SIGPIPE, SIG_IGN);
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe.has_value());
  pipe->read.reset();
  Logger log = Logger::ToFd(std::move(pipe->write));
  log.Error("nobody listens");  // must not crash or throw
}

}  // namespace
}  // namespace hull
