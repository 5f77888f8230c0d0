// DrainWaiters: see drain_waiters_internal.h.
#include <utility>

#include "shim/stdio/drain_waiters_internal.h"

namespace hull::shim::stdio {

void DrainWaiters::Add(std::chrono::milliseconds timeout, bool drained,
                       std::function<void()> done) {
  auto it = waiters_.insert(waiters_.end(), Waiter{std::move(done), EventHandle()});
  Arm(it, drained ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(timeout));
}

void DrainWaiters::Notify() {
  // A timer each, rather than a loop over the list: an answered waiter may
  // destroy the ProcessIo, and with it this list.
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) Arm(it, std::chrono::nanoseconds(0));
}

void DrainWaiters::Arm(std::list<Waiter>::iterator it, std::chrono::nanoseconds delay) {
  it->timer = loop_.AddTimer(delay, [this, it] {
    std::function<void()> done = std::move(it->done);
    waiters_.erase(it);  // drops the running timer's handle: allowed
    done();              // may destroy us: nothing after this
  });
}

}  // namespace hull::shim::stdio
