// EventLoop: hull's one thread, one libevent loop. Everything hull does runs
// in callbacks of this loop; nothing blocks it. Registrations (fd watches,
// timers, signals) are RAII EventHandles: dropping the handle unregisters, and
// that is safe even from inside the handle's own callback.
// Not thread-safe: every call must come from the loop's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "base/status.h"
#include "base/unique_fd.h"

struct event_base;
struct event;

namespace hull {

namespace internal {
struct Registration;
}

// Readiness bits for WatchFd.
inline constexpr uint32_t kReadable = 1;
inline constexpr uint32_t kWritable = 2;

class EventHandle {
 public:
  EventHandle() = default;
  EventHandle(EventHandle&& other) noexcept;
  EventHandle& operator=(EventHandle&& other) noexcept;
  EventHandle(const EventHandle&) = delete;
  EventHandle& operator=(const EventHandle&) = delete;
  ~EventHandle() { Reset(); }

  // Unregisters now. Safe inside the registration's own callback.
  void Reset();
  bool active() const { return reg_ != nullptr; }

 private:
  friend class EventLoop;
  explicit EventHandle(internal::Registration* reg) : reg_(reg) {}
  internal::Registration* reg_ = nullptr;
};

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;

  static Result<std::unique_ptr<EventLoop>> Create();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Calls `cb(ready_bits)` whenever `fd` is ready for any of `events`
  // (kReadable | kWritable), until the handle is dropped. Does not own `fd`.
  [[nodiscard]] EventHandle WatchFd(int fd, uint32_t events, std::function<void(uint32_t)> cb);

  // Calls `cb` once, `delay` from now.
  [[nodiscard]] EventHandle AddTimer(std::chrono::nanoseconds delay, std::function<void()> cb);
  // Calls `cb` every `interval` until the handle is dropped.
  [[nodiscard]] EventHandle AddRepeatingTimer(std::chrono::nanoseconds interval,
                                              std::function<void()> cb);

  // Blocks `signo` for the process and delivers it through a signalfd: `cb`
  // runs on the loop (signals that arrive together may be coalesced into one
  // call, as with SIGCHLD). Children spawned by hull reset their signal mask.
  [[nodiscard]] Result<EventHandle> WatchSignal(int signo, std::function<void()> cb);

  // Runs `task` on a later turn of the loop, never inside the caller.
  void Post(std::function<void()> task);

  // Runs until Stop().
  Status Run();
  // Runs until `done()` is true or `timeout` passes; returns done(). For
  // start-up paths and tests that must wait on a condition with a deadline.
  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout);
  // Makes Run() return after the current callback.
  void Stop();

  Clock::time_point Now() const { return Clock::now(); }

 private:
  EventLoop() = default;
  EventHandle Register(event* ev, internal::Registration* reg);
  EventHandle AddTimerImpl(std::chrono::nanoseconds delay, bool repeat, std::function<void()> cb);
  void RunPosted();

  event_base* base_ = nullptr;
  event* post_event_ = nullptr;
  std::deque<std::function<void()>> posted_;
  bool stop_ = false;
};

}  // namespace hull
