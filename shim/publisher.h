// EventPublisher: sends task events to containerd, in order, as ttrpc
// `containerd.services.events.ttrpc.v1.Events/Forward` calls to
// TTRPC_ADDRESS. One event is in flight at a time, so containerd sees them in
// the order they were published; a failed send is retried (after a reconnect,
// with capped backoff) for as long as containerd is away, without
// reordering. The queue is bounded; past the bound non-exit events are
// dropped first, so exits survive any outage (docs/exit-ordering.md).
// Loop thread only.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/logging.h"
#include "google/protobuf/any.pb.h"

namespace hull::ttrpc {
class Client;
}

namespace hull::shim {

// Where events go. The production sink forwards over ttrpc; tests may pass
// their own.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // Publishes `topic` with `event` (its type_url set); exactly one call of
  // `done` follows.
  virtual void Send(const std::string& topic, const google::protobuf::Any& event,
                    std::function<void(Status)> done) = 0;
};

// Forwards to containerd's ttrpc Events service, reconnecting as needed.
std::unique_ptr<EventSink> MakeForwardSink(EventLoop& loop, std::string ttrpc_address,
                                           std::string ns);

struct PublisherOptions {
  // Retry delays: `initial_backoff`, doubling up to `max_backoff`.
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  // Events queued at most; past it the oldest queued non-exit event is
  // dropped to make room (the one in flight is kept).
  size_t max_queued = 2048;
  // A second bound, for exits only: hit only if a full queue holds nothing
  // but exits; then the oldest exit goes (memory stays bounded: ~100 bytes
  // an exit).
  size_t max_queued_exits = 65536;
};

class EventPublisher {
 public:
  EventPublisher(EventLoop& loop, const Logger& log, std::unique_ptr<EventSink> sink,
                 PublisherOptions options = {});
  ~EventPublisher();

  // Queues an event. `type_url` is containerd's bare type name, e.g.
  // "containerd.events.TaskExit".
  template <typename Message>
  void Publish(const std::string& topic, const std::string& type_url, const Message& event) {
    google::protobuf::Any any;
    any.set_type_url(type_url);
    event.SerializeToString(any.mutable_value());
    Enqueue(topic, std::move(any));
  }

  // Calls `done` once every queued event has been sent or given up on, or
  // after `timeout`. For an orderly exit.
  void Flush(std::chrono::milliseconds timeout, std::function<void()> done);

  size_t queued() const { return queue_.size(); }
  // Events dropped because the queue was full, since construction.
  uint64_t dropped() const { return dropped_; }

 private:
  struct Pending {
    std::string topic;
    google::protobuf::Any event;
    int attempts = 0;
  };
  void Enqueue(std::string topic, google::protobuf::Any event);
  void SendHead();
  void OnSent(Status status);
  void MaybeFlushed();
  // Makes room for one more event of kind `exit`; false if it must be dropped.
  bool MakeRoom(bool exit);

  EventLoop& loop_;
  const Logger& log_;
  std::unique_ptr<EventSink> sink_;
  PublisherOptions options_;
  std::deque<Pending> queue_;
  size_t queued_exits_ = 0;
  uint64_t dropped_ = 0;
  bool in_flight_ = false;
  EventHandle retry_timer_;
  std::vector<std::function<void()>> flush_waiters_;
  EventHandle flush_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
