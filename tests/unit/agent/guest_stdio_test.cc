// GuestStdio without a VM: the "process" is the test holding the far ends of
// the pipes; reads are real ttrpc long-polls over a socketpair.
#include "agent/guest_stdio.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;

int OpenFds() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n - 1;  // the directory's own descriptor
}

class GuestStdioTest : public ::testing::Test {
 protected:
  GuestStdioTest() {
    auto loop = EventLoop::Create();
    EXPECT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    server_->RegisterUnary<pb::ReadStreamRequest, pb::ReadStreamResponse>(
        "test", "Read",
        [this](const ttrpc::CallContext& ctx, pb::ReadStreamRequest req,
               ttrpc::TypedResponder<pb::ReadStreamResponse> r) {
          OutputStream& s = req.exec_id() == "err" ? io_->stderr_stream() : io_->stdout_stream();
          s.Read(ctx, req.max_bytes(), std::move(r));
        });
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    EXPECT_TRUE(server_->ServeConnection(UniqueFd(fds[0])).ok());
    auto client = ttrpc::Client::FromFd(*loop_, UniqueFd(fds[1]));
    EXPECT_TRUE(client.has_value());
    client_ = std::move(*client);
    baseline_fds_ = OpenFds();
  }

  // Makes the streams and takes the process's ends (as crun would).
  void Make(bool in, bool out, bool err) {
    pb::Stdio stdio;
    stdio.set_stdin(in);
    stdio.set_stdout(out);
    stdio.set_stderr(err);
    auto io = GuestStdio::Create(*loop_, stdio, "/nonexistent");
    ASSERT_TRUE(io.has_value()) << io.error().ToString();
    io_ = std::move(*io);
    runtime::ProcessStdio ends = io_->ForRuntime();
    if (ends.stdin_fd >= 0) proc_in_.reset(::dup(ends.stdin_fd));
    if (ends.stdout_fd >= 0) proc_out_.reset(::dup(ends.stdout_fd));
    if (ends.stderr_fd >= 0) proc_err_.reset(::dup(ends.stderr_fd));
    io_->ProcessStarted();
  }

  Result<pb::ReadStreamResponse> Read(uint32_t max_bytes = 0, std::chrono::milliseconds within = 5s,
                                      const std::string& which = "out") {
    pb::ReadStreamRequest req;
    req.set_max_bytes(max_bytes);
    req.set_exec_id(which);
    return client_->CallUnarySync<pb::ReadStreamResponse>(
        "test", "Read", req, ttrpc::CallOptions{.deadline = loop_->Now() + within});
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ttrpc::Server> server_;
  std::unique_ptr<ttrpc::Client> client_;
  std::unique_ptr<GuestStdio> io_;
  UniqueFd proc_in_, proc_out_, proc_err_;
  int baseline_fds_ = 0;
};

TEST_F(GuestStdioTest, ReadsWaitForDataAreBoundedAndEndWithEof) {
  Make(false, true, false);
  // Written while the read is parked.
  EventHandle later = loop_->AddTimer(
      100ms, [this] { ASSERT_EQ(::write(proc_out_.get(), "hello world", 11), 11); });
  auto first = Read(5);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->data(), "hello");
  EXPECT_FALSE(first->eof());
  auto rest = Read();
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->data(), " world");
  // A stream not asked for is EOF at once.
  auto err = Read(0, 5s, "err");
  ASSERT_TRUE(err.has_value());
  EXPECT_TRUE(err->eof());
  EXPECT_TRUE(err->data().empty());
  proc_out_.reset();  // the process is gone
  auto eof = Read();
  ASSERT_TRUE(eof.has_value());
  EXPECT_TRUE(eof->eof());
  EXPECT_TRUE(Read()->eof());  // and stays so
  // The agent's end closed at EOF: nothing is held for a finished process.
  io_->ProcessExited();
  EXPECT_EQ(OpenFds(), baseline_fds_);
}

TEST_F(GuestStdioTest, AReadThatTimesOutTakesNoData) {
  Make(false, true, false);
  auto start = loop_->Now();
  auto timed_out = Read(0, 400ms);
  ASSERT_FALSE(timed_out.has_value());
  EXPECT_EQ(timed_out.error().code(), Code::kDeadlineExceeded);
  EXPECT_LT(loop_->Now() - start, 2s);
  // Data written after the caller gave up is there for the next one.
  ASSERT_EQ(::write(proc_out_.get(), "kept", 4), 4);
  loop_->RunUntil([] { return false; }, 50ms);
  auto next = Read();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->data(), "kept");
}

TEST_F(GuestStdioTest, StdinIsWrittenAndClosed) {
  Make(true, false, false);
  auto written = io_->WriteStdin("abc");
  ASSERT_TRUE(written.has_value());
  EXPECT_EQ(*written, 3u);
  char buf[8] = {};
  ASSERT_EQ(::read(proc_in_.get(), buf, sizeof buf), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
  ASSERT_TRUE(io_->CloseStdin().ok());
  EXPECT_EQ(::read(proc_in_.get(), buf, sizeof buf), 0);  // EOF for the process
  EXPECT_EQ(io_->WriteStdin("x").error().code(), Code::kFailedPrecondition);
  EXPECT_TRUE(io_->CloseStdin().ok());                               // again: fine
  EXPECT_EQ(io_->Resize(24, 80).code(), Code::kFailedPrecondition);  // no terminal
}

TEST_F(GuestStdioTest, AFullPipeTakesWhatItCan) {
  Make(true, false, false);
  std::string big(1 << 20, 'x');
  auto first = io_->WriteStdin(big);
  ASSERT_TRUE(first.has_value());
  EXPECT_GT(*first, 0u);
  EXPECT_LT(*first, big.size());
  auto full = io_->WriteStdin(big);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(*full, 0u);  // the host sends it again later
}

TEST_F(GuestStdioTest, WithoutStdinWritesAreRefused) {
  Make(false, true, true);
  EXPECT_EQ(io_->WriteStdin("x").error().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace hull::agent
