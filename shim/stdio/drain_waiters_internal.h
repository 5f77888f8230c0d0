// DrainWaiters: the Drain calls parked on one ProcessIo, each with its own
// deadline. Whichever comes first, Notify() or the deadline, answers a
// waiter, always from a loop callback. Dropping DrainWaiters drops the
// waiters unanswered. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <list>

#include "base/event_loop.h"

namespace hull::shim::stdio {

class DrainWaiters {
 public:
  explicit DrainWaiters(EventLoop& loop) : loop_(loop) {}
  DrainWaiters(const DrainWaiters&) = delete;
  DrainWaiters& operator=(const DrainWaiters&) = delete;

  // Parks `done` until Notify() or `timeout`; with `drained` already true it
  // is answered on the next loop turn.
  void Add(std::chrono::milliseconds timeout, bool drained, std::function<void()> done);
  // Everything is copied out: answers every parked waiter on the next turn.
  void Notify();

 private:
  struct Waiter {
    std::function<void()> done;
    EventHandle timer;
  };
  void Arm(std::list<Waiter>::iterator it, std::chrono::nanoseconds delay);

  EventLoop& loop_;
  std::list<Waiter> waiters_;
};

}  // namespace hull::shim::stdio
