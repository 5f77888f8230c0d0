// LongPolls: the parked callers of one long-poll (a stream's reads, the OOM
// events), oldest first. A caller is answered when there is something to
// say; a caller whose ttrpc deadline is near is answered DeadlineExceeded a
// little before it (kDeadlineMargin), so the agent never takes data out of
// a pipe or a queue for a reply the host has already given up on (the
// host's deadline runs from the send, the agent's from the receipt).
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "base/event_loop.h"
#include "base/status.h"
#include "ttrpc/call.h"

namespace hull::agent {

inline constexpr std::chrono::milliseconds kDeadlineMargin{1000};

// Copyable responders: the one helper of ttrpc/call.h.
using ttrpc::SharedResponder;

template <typename Resp>
class LongPolls {
 public:
  struct Waiter {
    ttrpc::TypedResponder<Resp> responder;
    uint32_t max_bytes = 0;  // what the caller takes (stream reads)
  };

  explicit LongPolls(EventLoop& loop) : loop_(loop) {}
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  void Park(const ttrpc::CallContext& context, ttrpc::TypedResponder<Resp> responder,
            uint32_t max_bytes = 0) {
    const uint64_t key = next_++;
    Entry& entry = waiters_[key];
    entry.waiter = Waiter{std::move(responder), max_bytes};
    if (context.deadline) {
      auto left = *context.deadline - loop_.Now();
      // At most a quarter of the time given goes to the margin.
      auto margin = std::min<EventLoop::Clock::duration>(kDeadlineMargin, left / 4);
      entry.timer = loop_.AddTimer(left - margin, [this, key] {
        auto it = waiters_.find(key);
        if (it == waiters_.end()) return;
        Waiter expired = std::move(it->second.waiter);
        waiters_.erase(it);
        expired.responder.Fail(DeadlineExceededError("no event before the call's deadline"));
      });
    }
  }

  // The oldest caller still listening, left in place (null: none); callers
  // whose connection closed are dropped on the way.
  Waiter* Front() {
    while (!waiters_.empty() && !waiters_.begin()->second.waiter.responder.active()) {
      waiters_.erase(waiters_.begin());
    }
    return waiters_.empty() ? nullptr : &waiters_.begin()->second.waiter;
  }

  // Takes the oldest caller still listening out of the line.
  std::optional<Waiter> Take() {
    if (Front() == nullptr) return std::nullopt;
    Waiter w = std::move(waiters_.begin()->second.waiter);
    waiters_.erase(waiters_.begin());
    return w;
  }

  template <typename F>
  void AnswerAll(F answer) {
    auto all = std::move(waiters_);
    waiters_.clear();
    for (auto& [key, entry] : all) answer(entry.waiter.responder);
  }

 private:
  struct Entry {
    Waiter waiter;
    EventHandle timer;
  };
  EventLoop& loop_;
  uint64_t next_ = 0;
  std::map<uint64_t, Entry> waiters_;
};

}  // namespace hull::agent
