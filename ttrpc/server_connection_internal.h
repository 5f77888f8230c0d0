// ServerConnection: the server side of one accepted connection. Turns Request
// frames into handler calls, tracks the calls in flight (each with its
// deadline timer) and writes their Responses in completion order.
//
// Owned by the Server through a shared_ptr; Responders and ConnectionWatches
// hold weak_ptrs, so they outlive it safely. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "ttrpc/frame.h"
#include "ttrpc/framed_connection_internal.h"
#include "ttrpc/service_table_internal.h"

namespace hull::ttrpc::internal {

// The per-connection limits (ServerOptions explains them).
struct ConnectionLimits {
  size_t max_calls = 0;  // 0: none
  std::chrono::nanoseconds partial_frame_deadline{0};
};

// Orders activity across a server's connections (times may tie within one
// loop turn); shared by the server and its connections.
using ActivityCounter = std::shared_ptr<uint64_t>;

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
 public:
  // `services` must outlive the connection. `on_closed` runs once, on a loop
  // turn of its own, when the connection has ended by itself (not after
  // Close), with why it ended. `on_limit` (optional) is told the first time a
  // call is refused for `max_calls`.
  static Result<std::shared_ptr<ServerConnection>> Create(
      EventLoop& loop, UniqueFd fd, const ServiceTable& services, ConnectionLimits limits,
      ActivityCounter activity, std::function<void(ServerConnection*, const Status&)> on_closed,
      std::function<void(const Status&)> on_limit);
  ~ServerConnection();

  // Shutdown, step 1: keep serving; close once no call is in flight and the
  // replies are written.
  void Drain();
  // Shutdown, step 2: answer every call in flight with `status`.
  void FailAll(const Status& status);
  // Closes now; calls in flight lose their caller.
  void Close();

  bool open() const { return framed_ != nullptr && framed_->open(); }
  size_t calls_in_flight() const { return calls_.size(); }
  // When a frame last arrived or a reply was last sent (or it was accepted).
  EventLoop::Clock::time_point last_active() const { return last_active_; }
  // The ActivityCounter's value then: a higher one was active later.
  uint64_t activity_seq() const { return activity_seq_; }
  // Whether a frame ever arrived: containerd's connection has spoken, a
  // flood's idle connections have not.
  bool spoke() const { return spoke_; }

  // ConnectionOptions::restart_session_on_stream_one.
  void set_restart_session_on_stream_one(bool on) { restart_session_on_stream_one_ = on; }

  // For Responder: answers call `stream_id` of session `session` if it still
  // waits for an answer.
  void Answer(uint32_t stream_id, const Status& status, std::string payload) {
    Answer(session_, stream_id, status, std::move(payload));
  }
  void Answer(uint32_t session, uint32_t stream_id, const Status& status, std::string payload);
  bool Waiting(uint32_t session, uint32_t stream_id) const {
    return open() && session == session_ && calls_.contains(stream_id);
  }

  // Private, public only for make_shared.
  ServerConnection(EventLoop& loop, const ServiceTable& services, ConnectionLimits limits,
                   ActivityCounter activity,
                   std::function<void(ServerConnection*, const Status&)> on_closed,
                   std::function<void(const Status&)> on_limit);

 private:
  struct Call {
    EventHandle deadline_timer;
  };

  void OnFrame(Frame frame);
  void OnRequest(uint32_t stream_id, std::string_view body);
  void OnData(uint32_t stream_id);
  void OnClosed(const Status& why);
  void SendResponse(uint32_t stream_id, const Status& status, std::string payload);
  void MarkActive();

  EventLoop& loop_;
  const ServiceTable& services_;
  ConnectionLimits limits_;
  std::function<void(ServerConnection*, const Status&)> on_closed_;
  std::function<void(const Status&)> on_limit_;
  ActivityCounter activity_;
  EventLoop::Clock::time_point last_active_;
  uint64_t activity_seq_ = 0;
  bool spoke_ = false;
  std::shared_ptr<FramedConnection> framed_;
  std::unordered_map<uint32_t, Call> calls_;
  uint32_t last_request_id_ = 0;
  // Counts peer sessions on a restartable connection; a Responder remembers
  // its call's, so an answer from an old session is dropped.
  uint32_t session_ = 0;
  bool restart_session_on_stream_one_ = false;
  bool draining_ = false;
};

}  // namespace hull::ttrpc::internal
