// ServerConnection: the server side of one accepted connection. Turns Request
// frames into handler calls, tracks the calls in flight (each with its
// deadline timer) and writes their Responses in completion order.
//
// Owned by the Server through a shared_ptr; Responders and ConnectionWatches
// hold weak_ptrs, so they outlive it safely. Loop thread only.
#pragma once

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

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
 public:
  // `services` must outlive the connection. `on_closed` runs once, on a loop
  // turn of its own, when the connection has ended by itself (not after Close).
  static Result<std::shared_ptr<ServerConnection>> Create(
      EventLoop& loop, UniqueFd fd, const ServiceTable& services,
      std::function<void(ServerConnection*)> on_closed);
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
  ServerConnection(EventLoop& loop, const ServiceTable& services,
                   std::function<void(ServerConnection*)> on_closed);

 private:
  struct Call {
    EventHandle deadline_timer;
  };

  void OnFrame(Frame frame);
  void OnRequest(uint32_t stream_id, std::string_view body);
  void OnData(uint32_t stream_id);
  void OnClosed();
  void SendResponse(uint32_t stream_id, const Status& status, std::string payload);

  EventLoop& loop_;
  const ServiceTable& services_;
  std::function<void(ServerConnection*)> on_closed_;
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
