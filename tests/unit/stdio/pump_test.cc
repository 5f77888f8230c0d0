// Tests for Pump over real pipes: copying to EOF, backpressure without
// blocking the loop, a vanished reader, Finish, and a pty master's EIO as EOF.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/ioctl.h>

#include <optional>

#include "shim/stdio/pump_internal.h"
#include "tests/unit/stdio/stdio_test_util.h"

namespace hull::shim::stdio {
namespace {

using std::chrono::milliseconds;
using testing::ReadAvailable;

class PumpTest : public testing::LoopTest {
 protected:
  // source: the test writes `in.write`; the pump reads `in.read`.
  // sink: the pump writes `out.write`; the test reads `out.read`.
  void SetUp() override {
    LoopTest::SetUp();
    in_ = std::move(*MakePipe(O_NONBLOCK));
    out_ = std::move(*MakePipe(O_NONBLOCK));
  }
  void TearDown() override {
    in_ = Pipe();
    out_ = Pipe();
    LoopTest::TearDown();
  }
  std::unique_ptr<Pump> StartPump(size_t limit = Pump::kDefaultBufferLimit) {
    return Pump::Start(
        *loop_, "test", in_.read.get(), out_.write.get(), [this](Status s) { done_ = s; }, limit);
  }
  Pipe in_, out_;
  std::optional<Status> done_;
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 1000) % 26);
  return s;
}

TEST_F(PumpTest, CopiesEverythingThenReportsEof) {
  auto pump = StartPump();
  const std::string data = Pattern(1 << 20);
  size_t written = 0;
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    while (written < data.size()) {
      ssize_t n = ::write(in_.write.get(), data.data() + written, data.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    if (written == data.size() && in_.write) in_.write.reset();
    ReadAvailable(out_.read.get(), got);
    return done_.has_value() && got.size() == data.size();
  }));
  EXPECT_TRUE(done_->ok()) << done_->ToString();
  EXPECT_EQ(got, data);
  EXPECT_EQ(pump->buffered(), 0u);
}

TEST_F(PumpTest, FullSinkStopsReadingAndNeverBlocksTheLoop) {
  const size_t limit = 32 * 1024;
  auto pump = StartPump(limit);
  // Nobody reads the sink: fill the source until it would block.
  const std::string data = Pattern(512 * 1024);
  size_t written = 0;
  auto feed = [&] {
    while (written < data.size()) {
      ssize_t n = ::write(in_.write.get(), data.data() + written, data.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
  };
  // The loop keeps turning (timers fire) while the pump is stuck.
  int ticks = 0;
  EventHandle tick = loop_->AddRepeatingTimer(milliseconds(5), [&] { ++ticks; });
  EXPECT_TRUE(RunUntil([&] {
    feed();
    return ticks >= 20;
  }));
  EXPECT_LT(written, data.size()) << "backpressure should have reached the writer";
  EXPECT_LE(pump->buffered(), limit);
  EXPECT_FALSE(done_.has_value());

  // A reader arrives: everything comes through, in order.
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    feed();
    if (written == data.size() && in_.write) in_.write.reset();
    ReadAvailable(out_.read.get(), got);
    return done_.has_value() && got.size() == data.size();
  }));
  EXPECT_TRUE(done_->ok());
  EXPECT_EQ(got, data);
}

TEST_F(PumpTest, VanishedReaderDiscardsUntilEofAndReportsTheError) {
  auto pump = StartPump();
  out_.read.reset();  // EPIPE from now on (SIGPIPE is ignored)
  // The writer is never left blocked: far more than any buffer goes through.
  const std::string data = Pattern(1 << 20);
  size_t written = 0;
  ASSERT_TRUE(RunUntil([&] {
    while (written < data.size()) {
      ssize_t n = ::write(in_.write.get(), data.data() + written, data.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    if (written == data.size() && in_.write) in_.write.reset();
    return done_.has_value();
  }));
  EXPECT_EQ(written, data.size());
  EXPECT_FALSE(done_->ok());
}

TEST_F(PumpTest, FinishWritesWhatIsBufferedAndIsNeverReentrant) {
  const size_t limit = 256 * 1024;
  auto pump = StartPump(limit);
  // Nobody reads the sink yet: it fills (64 KiB) and the rest waits in the
  // pump's buffer.
  const std::string data = Pattern(150 * 1024);
  size_t written = 0;
  ASSERT_TRUE(RunUntil([&] {
    while (written < data.size()) {
      ssize_t n = ::write(in_.write.get(), data.data() + written, data.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    return written == data.size() && pump->buffered() > 0 && [&] {
      // Everything written has been read by the pump.
      int pending = 0;
      return ::ioctl(in_.read.get(), FIONREAD, &pending) == 0 && pending == 0;
    }();
  }));
  pump->Finish();
  EXPECT_FALSE(done_.has_value()) << "done must not run inside Finish";
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    ReadAvailable(out_.read.get(), got);
    return done_.has_value();
  }));
  ReadAvailable(out_.read.get(), got);
  EXPECT_TRUE(done_->ok());
  EXPECT_EQ(got, data);
}

TEST_F(PumpTest, OwnerMayDestroyThePumpInsideDone) {
  std::unique_ptr<Pump> pump;
  bool called = false;
  pump = Pump::Start(*loop_, "test", in_.read.get(), out_.write.get(), [&](Status) {
    called = true;
    pump.reset();
  });
  in_.write.reset();
  ASSERT_TRUE(RunUntil([&] { return called; }));
  EXPECT_EQ(pump, nullptr);
}

TEST_F(PumpTest, PtyMasterEioIsEof) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  UniqueFd master_fd(master), slave_fd(slave);
  ASSERT_TRUE(SetNonBlocking(master).ok());
  auto pump = Pump::Start(*loop_, "pty", master, out_.write.get(), [this](Status s) { done_ = s; });
  ASSERT_EQ(::write(slave, "hi\n", 3), 3);
  slave_fd.reset();  // the last slave goes: reads of the master give EIO
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    ReadAvailable(out_.read.get(), got);
    return done_.has_value();
  }));
  ReadAvailable(out_.read.get(), got);
  EXPECT_TRUE(done_->ok()) << done_->ToString();
  EXPECT_EQ(got, "hi\r\n");  // the pty's output processing adds the CR
}

}  // namespace
}  // namespace hull::shim::stdio
