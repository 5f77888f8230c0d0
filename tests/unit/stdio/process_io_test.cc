// Tests for ProcessIo end to end: real FIFOs made with mkfifo, a real child
// (a shell) standing in for the container process, a real pty sent over the
// console socket as runc sends it, real logging binaries (shell scripts), and
// file:// logs. Each test also checks that no descriptor, process or socket
// file is left behind.
#include "shim/stdio/process_io.h"

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <optional>

#include "base/spawn.h"
#include "tests/unit/stdio/stdio_test_util.h"

namespace hull::shim {
namespace {

using runtime::ProcessStdio;
using std::chrono::milliseconds;
using stdio::testing::ProcessGone;
using stdio::testing::ReadAvailable;
using stdio::testing::ReadFile;
using stdio::testing::SendFd;
using stdio::testing::TempDir;
using stdio::testing::WriteExecutable;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class ProcessIoTest : public stdio::testing::LoopTest {
 protected:
  StdioContext Context() {
    return StdioContext{.container_id = "c1", .ns = "testns", .work_dir = dir_.path()};
  }

  Result<std::unique_ptr<ProcessIo>> CreateIo(const StdioConfig& config,
                                              std::optional<StdioContext> context = {}) {
    std::optional<Result<std::unique_ptr<ProcessIo>>> result;
    ProcessIo::Create(*loop_, *reaper_, config, context.value_or(Context()),
                      [&](Result<std::unique_ptr<ProcessIo>> r) { result = std::move(r); });
    EXPECT_FALSE(result.has_value()) << "done must run on a later loop turn";
    EXPECT_TRUE(RunUntil([&] { return result.has_value(); }));
    if (!result) return InternalError("Create never completed");
    return std::move(*result);
  }

  std::string Fifo(const std::string& name) {
    std::string path = dir_ / name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path;
  }

  // The client end of an output FIFO, as containerd or ctr opens it.
  UniqueFd OpenReader(const std::string& path) {
    return UniqueFd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  }

  // Starts `script` under /bin/sh with the descriptors the runtime would
  // give the container process.
  pid_t Run(const ProcessStdio& stdio, const std::string& script, bool new_session = false) {
    SpawnOptions options{.argv = {"/bin/sh", "-c", script}};
    if (stdio.stdin_fd >= 0) options.fds.emplace_back(0, stdio.stdin_fd);
    if (stdio.stdout_fd >= 0) options.fds.emplace_back(1, stdio.stdout_fd);
    if (stdio.stderr_fd >= 0) options.fds.emplace_back(2, stdio.stderr_fd);
    options.new_session = new_session;
    return Watch(Spawn(options));
  }
  pid_t RunOnTerminal(int slave, const std::string& script) {
    SpawnOptions options{.argv = {"/bin/sh", "-c", script},
                         .fds = {{0, slave}, {1, slave}, {2, slave}},
                         .new_session = true};
    return Watch(Spawn(options));
  }
  pid_t Watch(Result<pid_t> pid) {
    EXPECT_TRUE(pid.has_value()) << pid.error().ToString();
    if (!pid) return -1;
    reaper_->Watch(*pid, [this, p = *pid](int status) { exits_[p] = status; });
    return *pid;
  }
  bool Exited(pid_t pid) const { return exits_.count(pid) > 0; }

  // Drains and waits for the answer.
  ::testing::AssertionResult DrainNow(ProcessIo& io, milliseconds timeout = milliseconds(5000)) {
    bool drained = false;
    io.Drain(timeout, [&] { drained = true; });
    if (drained) return ::testing::AssertionFailure() << "Drain answered inside the call";
    if (!RunUntil([&] { return drained; })) return ::testing::AssertionFailure() << "no answer";
    return ::testing::AssertionSuccess();
  }

  // A logging binary. It records its pid, environment and arguments in
  // `$2` (the value of its first query key), copies fd 3 and 4 to files
  // there, and signals readiness per `ready`: "byte" writes one, "eof" closes
  // fd 5, "fail" exits without either.
  std::string Logger(const std::string& ready) {
    std::string path = dir_ / ("logger-" + ready);
    std::string script =
        "#!/bin/sh\n"
        "out=\"$2\"\n"
        "echo $$ > \"$out/pid\"\n"
        "/usr/bin/tr '\\0' '\\n' < /proc/$$/environ > \"$out/env\"\n"
        "printf '%s\\n' \"$@\" > \"$out/args\"\n";
    if (ready == "fail") {
      script += "exit 3\n";
    } else {
      script +=
          "/bin/cat <&3 > \"$out/stdout\" 4<&- 5>&- &\n"
          "/bin/cat <&4 > \"$out/stderr\" 3<&- 5>&- &\n"
          "exec 3<&- 4<&-\n";
      script += ready == "byte" ? "printf x >&5\n" : "";
      script += "exec 5>&-\nwait\n";
    }
    WriteExecutable(path, script);
    return path;
  }
  pid_t LoggerPid(const std::string& out_dir) {
    return static_cast<pid_t>(std::atoi(ReadFile(out_dir + "/pid").c_str()));
  }

  TempDir dir_;
  std::map<pid_t, int> exits_;
};

TEST_F(ProcessIoTest, FifosCopyOutputAndStdinIsHeldOpenUntilCloseStdin) {
  std::string in = Fifo("in"), out = Fifo("out"), err = Fifo("err");
  UniqueFd out_reader = OpenReader(out), err_reader = OpenReader(err);
  auto io = CreateIo({.stdin_path = in, .stdout_path = out, .stderr_path = err});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  ProcessStdio stdio = (*io)->runtime_stdio();
  EXPECT_GE(stdio.stdin_fd, 0);
  EXPECT_GE(stdio.stdout_fd, 0);
  EXPECT_GE(stdio.stderr_fd, 0);
  EXPECT_TRUE(stdio.console_socket.empty());
  pid_t pid = Run(stdio, "echo out; echo err >&2; cat; echo after");
  (*io)->RuntimeStarted();

  // A client writes to stdin and goes away.
  {
    UniqueFd writer(::open(in.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    ASSERT_TRUE(writer);
    ASSERT_EQ(::write(writer.get(), "input\n", 6), 6);
  }
  std::string got_out, got_err;
  auto read_both = [&] {
    ReadAvailable(out_reader.get(), got_out);
    ReadAvailable(err_reader.get(), got_err);
  };
  ASSERT_TRUE(RunUntil([&] {
    read_both();
    return got_out == "out\ninput\n" && got_err == "err\n";
  })) << got_out
      << "|" << got_err;
  // The shim still holds stdin open: the client leaving is no EOF.
  RunFor(milliseconds(300));
  EXPECT_FALSE(Exited(pid));

  (*io)->CloseStdin();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  EXPECT_EQ(exits_[pid], 0);
  ASSERT_TRUE(DrainNow(**io));
  read_both();
  EXPECT_EQ(got_out, "out\ninput\nafter\n");
  EXPECT_EQ(got_err, "err\n");
}

TEST_F(ProcessIoTest, SameFifoForStdoutAndStderr) {
  std::string out = Fifo("out");
  UniqueFd reader = OpenReader(out);
  auto io = CreateIo({.stdout_path = out, .stderr_path = out});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  ProcessStdio stdio = (*io)->runtime_stdio();
  EXPECT_EQ(stdio.stdin_fd, -1);
  pid_t pid = Run(stdio, "echo one; echo two >&2");
  (*io)->RuntimeStarted();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  std::string got;
  ReadAvailable(reader.get(), got);
  EXPECT_EQ(got.size(), 8u);
  EXPECT_NE(got.find("one\n"), std::string::npos);
  EXPECT_NE(got.find("two\n"), std::string::npos);
}

// The client reading an output FIFO sees EOF once the process's output is
// copied, while the ProcessIo (the exec) still exists: CRI's ExecSync waits
// for that EOF before it answers.
TEST_F(ProcessIoTest, OutputFifosReachEofBeforeTheIoIsDropped) {
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "one FIFO for both" : "two FIFOs");
    std::string out = Fifo(shared ? "shared-out" : "out");
    std::string err = shared ? out : Fifo("err");
    UniqueFd out_reader = OpenReader(out);
    UniqueFd err_reader = shared ? UniqueFd() : OpenReader(err);
    auto io = CreateIo({.stdout_path = out, .stderr_path = err});
    ASSERT_TRUE(io.has_value()) << io.error().ToString();
    pid_t pid = Run((*io)->runtime_stdio(), "echo hi; echo oops >&2");
    (*io)->RuntimeStarted();
    ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
    // Reads everything, then 0 (EOF): no writer is left on the FIFO.
    auto reaches_eof = [&](int fd, std::string& got) {
      return RunUntil([&] {
        char buf[256];
        for (;;) {
          ssize_t n = ::read(fd, buf, sizeof buf);
          if (n > 0) {
            got.append(buf, static_cast<size_t>(n));
            continue;
          }
          return n == 0;
        }
      });
    };
    std::string got_out, got_err;
    EXPECT_TRUE(reaches_eof(out_reader.get(), got_out)) << got_out;
    if (shared) {
      EXPECT_EQ(got_out.size(), 8u) << got_out;
    } else {
      EXPECT_EQ(got_out, "hi\n");
      EXPECT_TRUE(reaches_eof(err_reader.get(), got_err)) << got_err;
      EXPECT_EQ(got_err, "oops\n");
    }
    ASSERT_TRUE(DrainNow(**io));
  }
}

TEST_F(ProcessIoTest, AFifoNobodyReadsNeverBlocksTheLoop) {
  std::string out = Fifo("out");
  auto io = CreateIo({.stdout_path = out});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  constexpr size_t kBytes = 1 << 20;  // far more than FIFO + pipe + pump buffer
  pid_t pid = Run((*io)->runtime_stdio(), "head -c " + std::to_string(kBytes) + " /dev/zero");
  (*io)->RuntimeStarted();
  int ticks = 0;
  EventHandle tick = loop_->AddRepeatingTimer(milliseconds(5), [&] { ++ticks; });
  ASSERT_TRUE(RunUntil([&] { return ticks >= 40; }));
  EXPECT_FALSE(Exited(pid)) << "the writer should be held back, not the loop";

  // The client attaches late and gets every byte.
  UniqueFd reader = OpenReader(out);
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    ReadAvailable(reader.get(), got);
    return got.size() >= kBytes && Exited(pid);
  }));
  EXPECT_EQ(got, std::string(kBytes, '\0'));
  ASSERT_TRUE(DrainNow(**io));
}

TEST_F(ProcessIoTest, FileUriAppendsBothStreamsAndMakesDirectories) {
  ::umask(022);
  std::string log = dir_ / "logs/sub/c.log";
  std::string uri = "file://" + log;
  for (const char* script : {"echo out; echo err >&2", "echo again"}) {
    auto io = CreateIo({.stdout_path = uri, .stderr_path = uri});
    ASSERT_TRUE(io.has_value()) << io.error().ToString();
    pid_t pid = Run((*io)->runtime_stdio(), script);
    (*io)->RuntimeStarted();
    ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
    ASSERT_TRUE(DrainNow(**io));
  }
  std::string got = ReadFile(log);
  EXPECT_TRUE(got == "out\nerr\nagain\n" || got == "err\nout\nagain\n") << got;
  struct stat st;
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat((dir_ / "logs/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(ProcessIoTest, FailingSinkIsReportedOnceAndThePipeKeepsDraining) {
  // /dev/full fails every write with ENOSPC, like a full log disk.
  std::string log = dir_ / "err.log";
  std::vector<Status> reported;
  StdioContext context = Context();
  context.on_output_error = [&](const Status& s) { reported.push_back(s); };
  std::ofstream(log).flush();  // a plain path names an existing file
  auto io = CreateIo({.stdout_path = "/dev/full", .stderr_path = log}, context);
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  // 1 MiB is far more than the pipe holds: the writer finishes only if the
  // shim keeps reading after the sink failed.
  pid_t pid = Run((*io)->runtime_stdio(), "head -c 1048576 /dev/zero; echo more; echo alive >&2");
  (*io)->RuntimeStarted();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_EQ(exits_[pid], 0);
  EXPECT_EQ(ReadFile(log), "alive\n");
  ASSERT_EQ(reported.size(), 1u);  // the first error only, and only stdout's
  EXPECT_EQ(reported[0].code(), Code::kResourceExhausted);
  const std::string& message = reported[0].message();
  EXPECT_NE(message.find("container c1: stdout:"), std::string::npos) << message;
  EXPECT_NE(message.find("errno " + std::to_string(ENOSPC)), std::string::npos) << message;
}

TEST_F(ProcessIoTest, PlainPathToARegularFileIsAppended) {
  std::string path = dir_ / "existing.log";
  stdio::testing::WriteFile(path, "old\n");
  auto io = CreateIo({.stdout_path = path});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  EXPECT_EQ((*io)->runtime_stdio().stderr_fd, -1);
  pid_t pid = Run((*io)->runtime_stdio(), "echo new");
  (*io)->RuntimeStarted();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_EQ(ReadFile(path), "old\nnew\n");
}

TEST_F(ProcessIoTest, AllEmptyIsNullIo) {
  auto io = CreateIo({});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  ProcessStdio stdio = (*io)->runtime_stdio();
  EXPECT_EQ(stdio.stdin_fd, -1);
  EXPECT_EQ(stdio.stdout_fd, -1);
  EXPECT_EQ(stdio.stderr_fd, -1);
  EXPECT_TRUE(stdio.console_socket.empty());
  (*io)->RuntimeStarted();
  EXPECT_TRUE((*io)->Resize(80, 24).ok());
  ASSERT_TRUE(DrainNow(**io));
}

TEST_F(ProcessIoTest, BadUrisAreInvalidArgumentAndStartNothing) {
  // The logger would leave a mark if it were ever run.
  std::string marker = dir_ / "ran";
  std::string logger = dir_ / "marker-logger";
  WriteExecutable(logger, "#!/bin/sh\ntouch " + marker + "\n");
  std::string in = Fifo("in");
  int fds = hull::testing::CountOpenFds();
  for (const std::string& uri :
       std::vector<std::string>{"binary://" + logger + "#x", "http://example.com/log",
                                "file://host/x.log", "binary://" + logger + "?a=%zz", "fifo://"}) {
    auto io = CreateIo({.stdin_path = in, .stdout_path = uri, .stderr_path = uri});
    ASSERT_FALSE(io.has_value()) << uri;
    EXPECT_EQ(io.error().code(), Code::kInvalidArgument) << io.error().ToString();
    EXPECT_EQ(hull::testing::CountOpenFds(), fds) << uri;
  }
  RunFor(milliseconds(100));
  EXPECT_FALSE(Exists(marker));
}

TEST_F(ProcessIoTest, MissingPathsFailCleanly) {
  int fds = hull::testing::CountOpenFds();
  auto io = CreateIo({.stdin_path = dir_ / "no-such-stdin"});
  ASSERT_FALSE(io.has_value());
  EXPECT_EQ(io.error().code(), Code::kNotFound) << io.error().ToString();
  std::string in = Fifo("in");
  io = CreateIo({.stdin_path = in, .stdout_path = dir_ / "no-such-stdout"});
  ASSERT_FALSE(io.has_value());
  EXPECT_EQ(io.error().code(), Code::kNotFound) << io.error().ToString();
  io = CreateIo({.stdout_path = "binary://" + (dir_ / "no-such-logger")});
  ASSERT_FALSE(io.has_value());
  EXPECT_EQ(io.error().code(), Code::kNotFound) << io.error().ToString();
  EXPECT_EQ(hull::testing::CountOpenFds(), fds);
}

TEST_F(ProcessIoTest, IoUidAndGidOwnTheProcessEnds) {
  const bool root = ::geteuid() == 0;
  StdioContext context = Context();
  context.io_uid = root ? 12345 : ::getuid();
  context.io_gid = root ? 23456 : ::getgid();
  std::string in = Fifo("in"), out = Fifo("out"), err = Fifo("err");
  auto io = CreateIo({.stdin_path = in, .stdout_path = out, .stderr_path = err}, context);
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  ProcessStdio stdio = (*io)->runtime_stdio();
  for (int fd : {stdio.stdin_fd, stdio.stdout_fd, stdio.stderr_fd}) {
    struct stat st;
    ASSERT_EQ(::fstat(fd, &st), 0);
    EXPECT_EQ(st.st_uid, context.io_uid);
    EXPECT_EQ(st.st_gid, context.io_gid);
  }
}

TEST_F(ProcessIoTest, RuntimeFailedReleasesEverything) {
  int fds = hull::testing::CountOpenFds();
  std::string in = Fifo("in"), out = Fifo("out");
  auto io = CreateIo({.stdin_path = in, .stdout_path = out, .stderr_path = out});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  EXPECT_GT(hull::testing::CountOpenFds(), fds);
  (*io)->RuntimeFailed();
  EXPECT_EQ(hull::testing::CountOpenFds(), fds);
  ASSERT_TRUE(DrainNow(**io));
}

TEST_F(ProcessIoTest, DrainGivesUpAfterTheTimeoutWhileAWriterLives) {
  std::string out = Fifo("out");
  UniqueFd reader = OpenReader(out);
  auto io = CreateIo({.stdout_path = out});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  // A grandchild that inherited stdout and lives on.
  UniqueFd grandchild(::fcntl((*io)->runtime_stdio().stdout_fd, F_DUPFD_CLOEXEC, 0));
  (*io)->RuntimeStarted();
  auto start = loop_->Now();
  ASSERT_TRUE(DrainNow(**io, milliseconds(200)));
  EXPECT_GE(loop_->Now() - start, milliseconds(190));
  // Once it goes, a new Drain is answered by the EOF.
  ASSERT_EQ(::write(grandchild.get(), "late\n", 5), 5);
  grandchild.reset();
  ASSERT_TRUE(DrainNow(**io, milliseconds(60000)));
  EXPECT_LT(loop_->Now() - start, milliseconds(30000));
  std::string got;
  ReadAvailable(reader.get(), got);
  EXPECT_EQ(got, "late\n");
}

TEST_F(ProcessIoTest, DroppingTheIoDropsAPendingDrain) {
  std::string out = Fifo("out");
  auto io = CreateIo({.stdout_path = out});
  ASSERT_TRUE(io.has_value());
  UniqueFd grandchild(::fcntl((*io)->runtime_stdio().stdout_fd, F_DUPFD_CLOEXEC, 0));
  (*io)->RuntimeStarted();
  bool called = false;
  (*io)->Drain(milliseconds(50), [&] { called = true; });
  io->reset();
  RunFor(milliseconds(150));
  EXPECT_FALSE(called);
}

TEST_F(ProcessIoTest, BinaryLoggerGetsArgsEnvAndBothStreams) {
  TempDir out_dir;
  std::string uri = "binary://" + Logger("eof") + "?out=" + out_dir.path() + "&mode=a+b";
  auto io = CreateIo({.stdout_path = uri, .stderr_path = uri});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  pid_t logger = LoggerPid(out_dir.path());
  ASSERT_GT(logger, 0);
  ProcessStdio stdio = (*io)->runtime_stdio();
  EXPECT_EQ(stdio.stdin_fd, -1);
  pid_t pid = Run(stdio, "echo to-out; echo to-err >&2");
  (*io)->RuntimeStarted();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  // The logger reads to EOF and exits; Drain waits for that.
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_TRUE(ProcessGone(logger));
  EXPECT_EQ(ReadFile(out_dir / "stdout"), "to-out\n");
  EXPECT_EQ(ReadFile(out_dir / "stderr"), "to-err\n");
  EXPECT_EQ(ReadFile(out_dir / "env"), "CONTAINER_ID=c1\nCONTAINER_NAMESPACE=testns\n");
  EXPECT_EQ(ReadFile(out_dir / "args"), "out\n" + out_dir.path() + "\nmode\na b\n");
}

TEST_F(ProcessIoTest, BinaryV2ReadyByteAndStdinFifo) {
  TempDir out_dir;
  std::string in = Fifo("in");
  std::string uri = "binary-v2://" + Logger("byte") + "?out=" + out_dir.path();
  auto io = CreateIo({.stdin_path = in, .stdout_path = uri, .stderr_path = uri});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  pid_t logger = LoggerPid(out_dir.path());
  pid_t pid = Run((*io)->runtime_stdio(), "cat");
  (*io)->RuntimeStarted();
  {
    UniqueFd writer(::open(in.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    ASSERT_EQ(::write(writer.get(), "piped\n", 6), 6);
  }
  (*io)->CloseStdin();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_TRUE(ProcessGone(logger));
  EXPECT_EQ(ReadFile(out_dir / "stdout"), "piped\n");
}

TEST_F(ProcessIoTest, BinaryV2WithoutTheReadyByteFails) {
  TempDir out_dir;
  int fds = hull::testing::CountOpenFds();
  std::string uri = "binary-v2://" + Logger("fail") + "?out=" + out_dir.path();
  auto io = CreateIo({.stdout_path = uri, .stderr_path = uri});
  ASSERT_FALSE(io.has_value());
  EXPECT_NE(io.error().code(), Code::kOk);
  pid_t logger = LoggerPid(out_dir.path());
  ASSERT_GT(logger, 0);
  ASSERT_TRUE(RunUntil([&] { return ProcessGone(logger); }));
  EXPECT_EQ(hull::testing::CountOpenFds(), fds);
}

TEST_F(ProcessIoTest, LoggerStillRunningGetsSigterm) {
  TempDir out_dir;
  std::string logger_path = dir_ / "sleeper";
  WriteExecutable(logger_path,
                  "#!/bin/sh\necho $$ > \"$2/pid\"\nprintf x >&5\n"
                  "exec /bin/sleep 1000 3<&- 4<&- 5>&-\n");
  std::string uri = "binary-v2://" + logger_path + "?out=" + out_dir.path();
  auto io = CreateIo({.stdout_path = uri});  // grace: the default 12 s
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  pid_t logger = LoggerPid(out_dir.path());
  auto start = loop_->Now();
  io->reset();
  ASSERT_TRUE(RunUntil([&] { return ProcessGone(logger); }));
  EXPECT_LT(loop_->Now() - start, std::chrono::seconds(5));
}

TEST_F(ProcessIoTest, LoggerIgnoringSigtermIsKilledAfterTheGrace) {
  TempDir out_dir;
  std::string logger_path = dir_ / "stubborn";
  WriteExecutable(logger_path,
                  "#!/bin/sh\necho $$ > \"$2/pid\"\ntrap '' TERM\nprintf x >&5\n"
                  "exec /bin/sleep 1000 3<&- 4<&- 5>&-\n");
  std::string uri = "binary-v2://" + logger_path + "?out=" + out_dir.path();
  StdioContext context = Context();
  context.logger_stop_grace = milliseconds(300);
  auto io = CreateIo({.stdout_path = uri}, context);
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  pid_t logger = LoggerPid(out_dir.path());
  auto start = loop_->Now();
  io->reset();  // never started: the runtime failed or the task was deleted
  ASSERT_TRUE(RunUntil([&] { return ProcessGone(logger); }));
  EXPECT_GE(loop_->Now() - start, milliseconds(250));
}

// runc's side of a terminal: a pty whose master goes over the console socket.
struct FakeTerminal {
  UniqueFd master;
  UniqueFd slave;
};

FakeTerminal OpenTerminal() {
  int master = -1, slave = -1;
  EXPECT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  return FakeTerminal{UniqueFd(master), UniqueFd(slave)};
}

bool WindowIs(int fd, unsigned short cols, unsigned short rows) {
  winsize ws{};
  return ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col == cols && ws.ws_row == rows;
}

TEST_F(ProcessIoTest, TerminalCopiesBothWaysAndResizes) {
  std::string in = Fifo("in"), out = Fifo("out");
  UniqueFd reader = OpenReader(out);
  auto io = CreateIo({.stdin_path = in, .stdout_path = out, .terminal = true});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  ProcessStdio stdio = (*io)->runtime_stdio();
  EXPECT_EQ(stdio.stdin_fd, -1);
  EXPECT_EQ(stdio.stdout_fd, -1);
  const std::string socket = stdio.console_socket;
  ASSERT_EQ(socket.rfind(dir_.path() + "/", 0), 0u) << socket;
  EXPECT_TRUE((*io)->Resize(100, 30).ok());  // before the master: kept for it
  (*io)->RuntimeStarted();

  FakeTerminal tty = OpenTerminal();
  ASSERT_TRUE(SendFd(socket, tty.master.get(), ttyname(tty.slave.get())));
  tty.master.reset();
  ASSERT_TRUE(RunUntil([&] { return WindowIs(tty.slave.get(), 100, 30); }));
  EXPECT_FALSE(Exists(socket));
  EXPECT_TRUE((*io)->Resize(120, 40).ok());
  EXPECT_TRUE(WindowIs(tty.slave.get(), 120, 40));

  pid_t pid = RunOnTerminal(tty.slave.get(), "read line; echo \"got:$line\"");
  tty.slave.reset();
  {
    UniqueFd writer(::open(in.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    ASSERT_EQ(::write(writer.get(), "hello\n", 6), 6);
  }
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    ReadAvailable(reader.get(), got);
    return got.find("got:hello\r\n") != std::string::npos && Exited(pid);
  })) << got;
  ASSERT_TRUE(DrainNow(**io));
}

TEST_F(ProcessIoTest, TerminalStdinEofShutsTheConsoleDown) {
  std::string in = Fifo("in"), out = Fifo("out");
  UniqueFd reader = OpenReader(out);
  auto io = CreateIo({.stdin_path = in, .stdout_path = out, .terminal = true});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  (*io)->RuntimeStarted();
  FakeTerminal tty = OpenTerminal();
  ASSERT_TRUE(SendFd((*io)->runtime_stdio().console_socket, tty.master.get(), "/dev/pts/x"));
  tty.master.reset();
  pid_t pid = RunOnTerminal(tty.slave.get(), "cat");
  tty.slave.reset();
  RunFor(milliseconds(200));
  EXPECT_FALSE(Exited(pid));
  (*io)->CloseStdin();  // no client writer: EOF at once
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
}

TEST_F(ProcessIoTest, TerminalOutputToABinaryLogger) {
  TempDir out_dir;
  std::string uri = "binary-v2://" + Logger("byte") + "?out=" + out_dir.path();
  auto io = CreateIo({.stdout_path = uri, .terminal = true});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  pid_t logger = LoggerPid(out_dir.path());
  (*io)->RuntimeStarted();
  FakeTerminal tty = OpenTerminal();
  ASSERT_TRUE(SendFd((*io)->runtime_stdio().console_socket, tty.master.get(), "/dev/pts/x"));
  tty.master.reset();
  pid_t pid = RunOnTerminal(tty.slave.get(), "echo hi");
  tty.slave.reset();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_TRUE(ProcessGone(logger));
  EXPECT_EQ(ReadFile(out_dir / "stdout"), "hi\r\n");
  EXPECT_EQ(ReadFile(out_dir / "stderr"), "");
}

TEST_F(ProcessIoTest, TerminalInALongBundleUsesAShortSocketPath) {
  std::string deep = dir_.path();
  while (deep.size() < 120) deep += "/io.containerd.runtime.v2.task";
  StdioContext context = Context();
  context.work_dir = deep;
  auto io = CreateIo({.terminal = true}, context);
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  const std::string socket = (*io)->runtime_stdio().console_socket;
  EXPECT_LT(socket.size(), sizeof(sockaddr_un::sun_path));
  EXPECT_TRUE(Exists(socket));
  (*io)->RuntimeStarted();
  FakeTerminal tty = OpenTerminal();
  ASSERT_TRUE(SendFd(socket, tty.master.get(), "/dev/pts/x"));
  tty.master.reset();
  // No stdout: the output is read and dropped, so the process never blocks.
  pid_t pid = RunOnTerminal(tty.slave.get(), "head -c 1000000 /dev/zero");
  tty.slave.reset();
  ASSERT_TRUE(RunUntil([&] { return Exited(pid); }));
  ASSERT_TRUE(DrainNow(**io));
  EXPECT_FALSE(Exists(socket));
  EXPECT_FALSE(Exists(socket.substr(0, socket.rfind('/'))));
}

TEST_F(ProcessIoTest, TerminalRuntimeFailedRemovesTheSocket) {
  auto io = CreateIo({.terminal = true});
  ASSERT_TRUE(io.has_value()) << io.error().ToString();
  const std::string socket = (*io)->runtime_stdio().console_socket;
  EXPECT_TRUE(Exists(socket));
  (*io)->RuntimeFailed();
  EXPECT_FALSE(Exists(socket));
  ASSERT_TRUE(DrainNow(**io));
}

}  // namespace
}  // namespace hull::shim
