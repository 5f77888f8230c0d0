#include "base/event_loop.h"

#include <event2/event.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <utility>

namespace hull {
namespace internal {

// Heap state behind an EventHandle. It outlives the handle when the handle is
// dropped inside its own callback: the trampoline frees it on the way out.
struct Registration {
  event* ev = nullptr;
  std::function<void(uint32_t)> cb;
  UniqueFd owned_fd;  // the signalfd, for signal watches
  bool in_callback = false;
  bool dead = false;

  ~Registration() {
    if (ev != nullptr) event_free(ev);
  }

  static void Dispatch(evutil_socket_t, short what, void* arg) {
    auto* reg = static_cast<Registration*>(arg);
    uint32_t ready = 0;
    if (what & (EV_READ | EV_TIMEOUT | EV_SIGNAL)) ready |= kReadable;
    if (what & EV_WRITE) ready |= kWritable;
    reg->in_callback = true;
    reg->cb(ready);
    reg->in_callback = false;
    if (reg->dead) delete reg;
  }
};

}  // namespace internal

using internal::Registration;

EventHandle::EventHandle(EventHandle&& other) noexcept : reg_(std::exchange(other.reg_, nullptr)) {}

EventHandle& EventHandle::operator=(EventHandle&& other) noexcept {
  if (this != &other) {
    Reset();
    reg_ = std::exchange(other.reg_, nullptr);
  }
  return *this;
}

void EventHandle::Reset() {
  Registration* reg = std::exchange(reg_, nullptr);
  if (reg == nullptr) return;
  if (reg->ev != nullptr) event_del(reg->ev);
  if (reg->in_callback) {
    reg->dead = true;  // the trampoline deletes it when the callback returns
  } else {
    delete reg;
  }
}

Result<std::unique_ptr<EventLoop>> EventLoop::Create() {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  event_config* config = event_config_new();
  if (config == nullptr) return InternalError("event_config_new failed");
  // One thread: no locking, and no libevent signal handling (hull uses signalfd).
  event_config_set_flag(config, EVENT_BASE_FLAG_NOLOCK);
  // Without this libevent reads CLOCK_MONOTONIC_COARSE (4 ms ticks here), and a
  // timer armed just before a tick fires up to a tick early: a deadline would
  // expire before its time.
  event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
  loop->base_ = event_base_new_with_config(config);
  event_config_free(config);
  if (loop->base_ == nullptr) return InternalError("event_base_new failed");
  loop->post_event_ = event_new(
      loop->base_, -1, 0,
      [](evutil_socket_t, short, void* arg) { static_cast<EventLoop*>(arg)->RunPosted(); },
      loop.get());
  if (loop->post_event_ == nullptr) return InternalError("event_new failed");
  return loop;
}

EventLoop::~EventLoop() {
  if (post_event_ != nullptr) event_free(post_event_);
  if (base_ != nullptr) event_base_free(base_);
}

EventHandle EventLoop::Register(event* ev, Registration* reg) {
  reg->ev = ev;
  return EventHandle(reg);
}

EventHandle EventLoop::WatchFd(int fd, uint32_t events, std::function<void(uint32_t)> cb) {
  auto* reg = new Registration();
  reg->cb = std::move(cb);
  short what = EV_PERSIST;
  if (events & kReadable) what |= EV_READ;
  if (events & kWritable) what |= EV_WRITE;
  event* ev = event_new(base_, fd, what, &Registration::Dispatch, reg);
  event_add(ev, nullptr);
  return Register(ev, reg);
}

namespace {
timeval ToTimeval(std::chrono::nanoseconds d) {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}
}  // namespace

EventHandle EventLoop::AddTimerImpl(std::chrono::nanoseconds delay, bool repeat,
                                    std::function<void()> cb) {
  auto* reg = new Registration();
  reg->cb = [cb = std::move(cb)](uint32_t) { cb(); };
  event* ev = event_new(base_, -1, repeat ? EV_PERSIST : 0, &Registration::Dispatch, reg);
  timeval tv = ToTimeval(delay);
  event_add(ev, &tv);
  return Register(ev, reg);
}

EventHandle EventLoop::AddTimer(std::chrono::nanoseconds delay, std::function<void()> cb) {
  return AddTimerImpl(delay, false, std::move(cb));
}

EventHandle EventLoop::AddRepeatingTimer(std::chrono::nanoseconds interval,
                                         std::function<void()> cb) {
  return AddTimerImpl(interval, true, std::move(cb));
}

Result<EventHandle> EventLoop::WatchSignal(int signo, std::function<void()> cb) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return ErrnoError("sigprocmask");
  UniqueFd sfd(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!sfd) return ErrnoError("signalfd", std::to_string(signo));
  auto* reg = new Registration();
  int fd = sfd.get();
  reg->owned_fd = std::move(sfd);
  reg->cb = [fd, cb = std::move(cb)](uint32_t) {
    signalfd_siginfo info[8];
    bool got = false;
    while (::read(fd, info, sizeof(info)) > 0) got = true;
    if (got) cb();
  };
  event* ev = event_new(base_, fd, EV_READ | EV_PERSIST, &Registration::Dispatch, reg);
  event_add(ev, nullptr);
  return Register(ev, reg);
}

void EventLoop::Post(std::function<void()> task) {
  posted_.push_back(std::move(task));
  event_active(post_event_, 0, 0);
}

void EventLoop::RunPosted() {
  // Tasks posted while these run wait for the next turn, so a task that posts
  // itself again cannot starve fd and timer events.
  std::deque<std::function<void()>> batch;
  batch.swap(posted_);
  while (!batch.empty()) {
    auto task = std::move(batch.front());
    batch.pop_front();
    task();
  }
  if (!posted_.empty()) event_active(post_event_, 0, 0);
}

Status EventLoop::Run() {
  stop_ = false;
  while (!stop_) {
    if (event_base_loop(base_, EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY) < 0)
      return InternalError("event_base_loop failed");
  }
  return Status::Ok();
}

namespace {
// How often RunUntil looks at its condition when nothing happens.
constexpr std::chrono::milliseconds kRunUntilTick{10};
}  // namespace

bool EventLoop::RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) {
  bool expired = false;
  EventHandle deadline = AddTimer(timeout, [&expired] { expired = true; });
  // `done` may wait on what no event reports (a file, /proc): looked at
  // again on every tick, not only when a callback ran.
  EventHandle tick = AddRepeatingTimer(kRunUntilTick, [] {});
  while (!done() && !expired) {
    if (event_base_loop(base_, EVLOOP_ONCE) < 0) break;
  }
  return done();
}

void EventLoop::Stop() {
  stop_ = true;
  event_base_loopbreak(base_);
}

}  // namespace hull
