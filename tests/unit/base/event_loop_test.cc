#include "base/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "tests/unit/base/fd_count.h"

namespace hull {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<EventLoop> NewLoop() {
  auto loop = EventLoop::Create();
  EXPECT_TRUE(loop.has_value());
  return std::move(*loop);
}

// A condition no event reports (here the clock; in tests a file or /proc)
// ends RunUntil soon after it holds, not at its deadline.
TEST(EventLoopTest, RunUntilSeesAConditionNoEventReports) {
  auto loop = NewLoop();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(
      loop->RunUntil([&] { return std::chrono::steady_clock::now() - start >= milliseconds(50); },
                     std::chrono::seconds(20)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(EventLoopTest, WatchFdFiresOnReadable) {
  auto loop = NewLoop();
  auto pipe = MakePipe(O_NONBLOCK);
  ASSERT_TRUE(pipe.has_value());
  std::string got;
  EventHandle watch = loop->WatchFd(pipe->read.get(), kReadable, [&](uint32_t ready) {
    EXPECT_TRUE(ready & kReadable);
    char buf[16];
    ssize_t n = ::read(pipe->read.get(), buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  });
  ASSERT_EQ(::write(pipe->write.get(), "hi", 2), 2);
  EXPECT_TRUE(loop->RunUntil([&] { return got == "hi"; }, milliseconds(2000)));
}

TEST(EventLoopTest, DroppedWatchNoLongerFires) {
  auto loop = NewLoop();
  auto pipe = MakePipe(O_NONBLOCK);
  ASSERT_TRUE(pipe.has_value());
  int calls = 0;
  EventHandle watch = loop->WatchFd(pipe->read.get(), kReadable, [&](uint32_t) { ++calls; });
  watch.Reset();
  EXPECT_FALSE(watch.active());
  ASSERT_EQ(::write(pipe->write.get(), "x", 1), 1);
  loop->RunUntil([] { return false; }, milliseconds(50));
  EXPECT_EQ(calls, 0);
}

TEST(EventLoopTest, HandleMayDieInsideItsOwnCallback) {
  auto loop = NewLoop();
  auto pipe = MakePipe(O_NONBLOCK);
  ASSERT_TRUE(pipe.has_value());
  int calls = 0;
  auto watch = std::make_unique<EventHandle>();
  *watch = loop->WatchFd(pipe->read.get(), kReadable, [&](uint32_t) {
    ++calls;
    watch.reset();  // destroys the handle and, with it, this very closure
  });
  ASSERT_EQ(::write(pipe->write.get(), "x", 1), 1);
  loop->RunUntil([&] { return watch == nullptr; }, milliseconds(2000));
  loop->RunUntil([] { return false; }, milliseconds(30));
  EXPECT_EQ(calls, 1);
}

TEST(EventLoopTest, TimersFireInOrder) {
  auto loop = NewLoop();
  std::vector<int> order;
  EventHandle late = loop->AddTimer(milliseconds(40), [&] { order.push_back(2); });
  EventHandle early = loop->AddTimer(milliseconds(10), [&] { order.push_back(1); });
  EXPECT_TRUE(loop->RunUntil([&] { return order.size() == 2; }, milliseconds(2000)));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(EventLoopTest, TimersNeverFireEarly) {
  // A timer armed just before the coarse clock ticks, with the tick passing
  // before the loop polls, used to fire up to one tick (4 ms) early.
  auto loop = NewLoop();
  auto coarse_now = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  };
  timespec res;
  ASSERT_EQ(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
  const auto tick = std::chrono::nanoseconds(res.tv_nsec);
  for (int i = 0; i < 20; ++i) {
    auto c0 = coarse_now();
    while (coarse_now() == c0) {
    }
    auto c1 = coarse_now();
    auto tick_seen = EventLoop::Clock::now();
    while (EventLoop::Clock::now() - tick_seen < tick - std::chrono::microseconds(200)) {
    }
    auto start = EventLoop::Clock::now();
    bool fired = false;
    EventHandle timer = loop->AddTimer(milliseconds(20), [&] { fired = true; });
    while (coarse_now() == c1) {
    }
    ASSERT_TRUE(loop->RunUntil([&] { return fired; }, milliseconds(2000)));
    EXPECT_GE(EventLoop::Clock::now() - start, milliseconds(20)) << "iteration " << i;
  }
}

TEST(EventLoopTest, RepeatingTimerRepeatsUntilDropped) {
  auto loop = NewLoop();
  int ticks = 0;
  EventHandle timer;
  timer = loop->AddRepeatingTimer(milliseconds(5), [&] {
    if (++ticks == 3) timer.Reset();
  });
  EXPECT_TRUE(loop->RunUntil([&] { return ticks == 3; }, milliseconds(2000)));
  loop->RunUntil([] { return false; }, milliseconds(30));
  EXPECT_EQ(ticks, 3);
}

TEST(EventLoopTest, PostedTasksRunLaterInOrder) {
  auto loop = NewLoop();
  std::vector<int> order;
  loop->Post([&] {
    order.push_back(1);
    loop->Post([&] { order.push_back(3); });
  });
  loop->Post([&] { order.push_back(2); });
  EXPECT_TRUE(order.empty());  // never inside the caller
  EXPECT_TRUE(loop->RunUntil([&] { return order.size() == 3; }, milliseconds(2000)));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(EventLoopTest, SignalsArriveOnTheLoop) {
  auto loop = NewLoop();
  int got = 0;
  auto handle = loop->WatchSignal(SIGUSR2, [&] { ++got; });
  ASSERT_TRUE(handle.has_value());
  ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
  EXPECT_TRUE(loop->RunUntil([&] { return got > 0; }, milliseconds(2000)));
}

TEST(EventLoopTest, StopEndsRun) {
  auto loop = NewLoop();
  EventHandle timer = loop->AddTimer(milliseconds(5), [&] { loop->Stop(); });
  EXPECT_TRUE(loop->Run().ok());
}

TEST(EventLoopTest, NoDescriptorLeaks) {
  int before = testing::CountOpenFds();
  {
    auto loop = NewLoop();
    auto sig = loop->WatchSignal(SIGUSR1, [] {});
    ASSERT_TRUE(sig.has_value());
    EventHandle timer = loop->AddTimer(milliseconds(1), [] {});
    loop->RunUntil([] { return false; }, milliseconds(5));
  }
  EXPECT_EQ(testing::CountOpenFds(), before);
}

}  // namespace
}  // namespace hull
