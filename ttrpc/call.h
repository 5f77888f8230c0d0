// What a ttrpc server handler sees: the CallContext (valid only during the
// handler call) and a Responder (move-only, may be kept and answered later,
// e.g. by a Wait that answers when a process exits). Loop thread only.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/event_loop.h"
#include "base/status.h"
#include "ttrpc/metadata.h"

namespace hull::ttrpc {

namespace internal {
class ServerConnection;
}

// Tells whether the connection a call came on is still open; copyable, cheap,
// safe to keep after the connection and the server are gone.
class ConnectionWatch {
 public:
  ConnectionWatch() = default;
  explicit ConnectionWatch(std::weak_ptr<const internal::ServerConnection> conn)
      : conn_(std::move(conn)) {}
  bool open() const;

 private:
  std::weak_ptr<const internal::ServerConnection> conn_;
};

struct CallContext {
  std::string_view service;  // e.g. "containerd.task.v2.Task"
  std::string_view method;   // e.g. "Wait"
  const Metadata& metadata;
  // From the Request's timeout_nano, counted from receipt. When it passes the
  // server answers DeadlineExceeded itself and drops the handler's answer.
  std::optional<EventLoop::Clock::time_point> deadline;
  uint32_t stream_id = 0;
  ConnectionWatch connection;

  std::optional<std::string_view> FindMetadata(std::string_view key) const {
    return ttrpc::FindMetadata(metadata, key);
  }
};

// The one answer to one call. Answer with Reply or Fail, now or later. A
// Responder dropped unanswered fails the call with Internal "ttrpc: no reply"
// so the caller never hangs. Answers after the connection closed, after the
// deadline passed or after a first answer are dropped silently.
class Responder {
 public:
  Responder() = default;  // answers nothing
  Responder(std::weak_ptr<internal::ServerConnection> conn, uint32_t stream_id,
            uint32_t session = 0)
      : conn_(std::move(conn)), stream_id_(stream_id), session_(session), pending_(true) {}
  Responder(Responder&& other) noexcept
      : conn_(std::move(other.conn_)),
        stream_id_(other.stream_id_),
        session_(other.session_),
        pending_(std::exchange(other.pending_, false)) {}
  // Answers the call this one held ("no reply") before taking the other's.
  Responder& operator=(Responder&& other) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  // `payload` is the serialized reply message. A payload over the 4 MiB
  // frame limit is answered ResourceExhausted instead.
  void Reply(std::string payload);
  // A non-OK status goes to the caller as is; an OK one is an empty Reply.
  void Fail(Status status);

  // True while an answer would still reach the caller: not yet answered,
  // connection open, deadline not passed.
  bool active() const;
  uint32_t stream_id() const { return stream_id_; }

 private:
  void Answer(const Status& status, std::string payload);

  std::weak_ptr<internal::ServerConnection> conn_;
  uint32_t stream_id_ = 0;
  uint32_t session_ = 0;  // see ConnectionOptions::restart_session_on_stream_one
  bool pending_ = false;
};

using Handler = std::function<void(const CallContext&, std::string payload, Responder)>;

// A protobuf(-lite) message: what the typed helpers need of one.
template <typename M>
concept LiteMessage = requires(M m, const M cm, std::string* out, const void* data, int size) {
  { cm.SerializeToString(out) } -> std::convertible_to<bool>;
  { m.ParseFromArray(data, size) } -> std::convertible_to<bool>;
};

// A Responder for handlers registered with Server::RegisterUnary: replies
// with a message instead of bytes.
template <LiteMessage Resp>
class TypedResponder {
 public:
  TypedResponder() = default;
  explicit TypedResponder(Responder responder) : responder_(std::move(responder)) {}

  void Reply(const Resp& response) {
    std::string payload;
    if (!response.SerializeToString(&payload)) {
      responder_.Fail(InternalError("ttrpc: error marshaling payload"));
      return;
    }
    responder_.Reply(std::move(payload));
  }
  void Fail(Status status) { responder_.Fail(std::move(status)); }
  bool active() const { return responder_.active(); }
  Responder& untyped() { return responder_; }

 private:
  Responder responder_;
};

// A TypedResponder that std::function can hold: copyable, every copy answers
// the one call (the first answer wins). What a callback that outlives the
// handler carries.
template <typename Resp>
class SharedResponder {
 public:
  explicit SharedResponder(TypedResponder<Resp> r)
      : r_(std::make_shared<TypedResponder<Resp>>(std::move(r))) {}
  void Reply(const Resp& response) const { r_->Reply(response); }
  void Fail(Status status) const { r_->Fail(std::move(status)); }
  // The value of `result`, or its error.
  void Answer(const Result<Resp>& result) const {
    if (!result) return r_->Fail(result.error());
    r_->Reply(*result);
  }
  bool active() const { return r_->active(); }

 private:
  std::shared_ptr<TypedResponder<Resp>> r_;
};

}  // namespace hull::ttrpc
