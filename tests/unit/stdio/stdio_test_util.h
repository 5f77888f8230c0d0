// Helpers for the stdio tests: a temporary directory, a loop+reaper fixture
// that checks for leaked descriptors, nonblocking reads of what a client
// would see, and a stand-in for runc that sends a pty master over a console
// socket the way runc's utils.SendFd does. Loop thread only.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/unique_fd.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/base/fd_count.h"

namespace hull::shim::stdio::testing {

inline constexpr std::chrono::seconds kWait(10);

// The one temporary-directory fixture (tests/support/temp_dir.h).
using hull::testing::TempDir;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline void WriteExecutable(const std::string& path, const std::string& text) {
  WriteFile(path, text);
  ::chmod(path.c_str(), 0755);
}

// Appends whatever `fd` (nonblocking) has now to `out`; true at EOF.
inline bool ReadAvailable(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n == 0;
  }
}

inline bool ProcessGone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Connects to `socket_path` and sends `fd` with SCM_RIGHTS and `name` as the
// data, in one message, as runc does with the pty master.
inline ::testing::AssertionResult SendFd(const std::string& socket_path, int fd,
                                         const std::string& name) {
  UniqueFd conn(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    return ::testing::AssertionFailure() << "socket path too long: " << socket_path;
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (::connect(conn.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return ::testing::AssertionFailure() << "connect " << socket_path << ": " << strerror(errno);
  }
  iovec iov{const_cast<char*>(name.data()), name.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (::sendmsg(conn.get(), &msg, MSG_NOSIGNAL) < 0) {
    return ::testing::AssertionFailure() << "sendmsg: " << strerror(errno);
  }
  return ::testing::AssertionSuccess();
}

// A loop and a reaper per test, and no descriptor left open afterwards.
class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The shim ignores SIGPIPE (its server does); writes to a closed pipe
    // must come back as EPIPE here too.
    ::signal(SIGPIPE, SIG_IGN);
    fds_before_ = hull::testing::CountOpenFds();
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(*Reaper::Create(*loop_));
  }
  void TearDown() override {
    reaper_.reset();
    loop_.reset();
    EXPECT_EQ(hull::testing::CountOpenFds(), fds_before_) << "descriptor leaked";
  }

  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout = kWait) {
    return loop_->RunUntil(done, timeout);
  }
  // Runs the loop for `d` regardless, to show something does not happen.
  void RunFor(std::chrono::nanoseconds d) {
    bool fired = false;
    EventHandle t = loop_->AddTimer(d, [&] { fired = true; });
    loop_->RunUntil([&] { return fired; }, d + kWait);
  }

  int fds_before_ = 0;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
};

}  // namespace hull::shim::stdio::testing
