// EventPublisher: sends task events to containerd, in order, as ttrpc
// `containerd.services.events.ttrpc.v1.Events/Forward` calls to
// TTRPC_ADDRESS. One event is in flight at a time, so containerd sees them in
// the order they were published; a failed send is retried (after a reconnect,
// with backoff) while containerd is briefly away, without reordering.
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

class EventPublisher {
 public:
  EventPublisher(EventLoop& loop, const Logger& log, std::unique_ptr<EventSink> sink);
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

  EventLoop& loop_;
  const Logger& log_;
  std::unique_ptr<EventSink> sink_;
  std::deque<Pending> queue_;
  bool in_flight_ = false;
  EventHandle retry_timer_;
  std::vector<std::function<void()>> flush_waiters_;
  EventHandle flush_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim
