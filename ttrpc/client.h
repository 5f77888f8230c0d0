// ttrpc::Client: unary calls to a ttrpc server over one unix-socket
// connection, multiplexed on odd, increasing stream ids, on the loop.
// Every call's `done` runs exactly once, unless the Client is destroyed first:
// with the reply, the server's status, DeadlineExceeded, or Unavailable
// "ttrpc: closed" when the connection goes.
// The Client owns its connection; `done` and `on_close` may destroy the
// Client. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "ttrpc/call.h"
#include "ttrpc/metadata.h"

namespace hull::ttrpc {

namespace internal {
class ClientConnection;
}

struct CallOptions {
  // Sent as timeout_nano; when it passes the call fails locally with
  // DeadlineExceeded and a late reply is dropped.
  std::optional<EventLoop::Clock::time_point> deadline;
  // Sent with the Request; use lowercase keys.
  Metadata metadata;
};

class Client {
 public:
  using Callback = std::function<void(Result<std::string>)>;

  // Connects to a unix socket (a path, `unix://path`, or `@abstract`).
  // Never blocks: a server with a full backlog is Unavailable.
  static Result<std::unique_ptr<Client>> Connect(EventLoop& loop, std::string_view address);
  // Talks over an already connected socket (e.g. one end of a socketpair).
  static Result<std::unique_ptr<Client>> FromFd(EventLoop& loop, UniqueFd connected);

  // Closes the connection. Pending calls are dropped without their `done`
  // being called (whoever owns the Client is going away; what the callbacks
  // captured is destroyed). on_close is not called. Close() first to have
  // them fail with Unavailable instead.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends one unary call; `done` gets the reply payload or the error. `done`
  // never runs inside Call itself.
  void Call(std::string service, std::string method, std::string payload, CallOptions options,
            Callback done);

  // Typed form: serializes `request`, parses the reply into Resp.
  template <LiteMessage Resp, LiteMessage Req>
  void CallUnary(std::string service, std::string method, const Req& request, CallOptions options,
                 std::function<void(Result<Resp>)> done);

  // Runs the loop until the call completes. For tools and tests; never call
  // it from inside a loop callback.
  Result<std::string> CallSync(std::string service, std::string method, std::string payload,
                               CallOptions options = {});
  template <LiteMessage Resp, LiteMessage Req>
  Result<Resp> CallUnarySync(std::string service, std::string method, const Req& request,
                             CallOptions options = {});

  // Runs once when the connection ends by itself (peer gone, I/O error),
  // after the pending calls have failed; not after Close() or destruction.
  void SetOnClose(std::function<void(const Status&)> on_close);
  // Closes now; pending calls fail with Unavailable "ttrpc: closed".
  void Close();

  bool open() const;
  size_t calls_in_flight() const;

 private:
  explicit Client(std::shared_ptr<internal::ClientConnection> conn) : conn_(std::move(conn)) {}

  // Runs `task` on a later loop turn.
  void RunSoon(std::function<void()> task);

  template <LiteMessage Resp>
  static Result<Resp> ParseReply(const Result<std::string>& reply);

  std::shared_ptr<internal::ClientConnection> conn_;
};

template <LiteMessage Resp>
Result<Resp> Client::ParseReply(const Result<std::string>& reply) {
  if (!reply.has_value()) return reply.error();
  Resp response;
  if (!response.ParseFromArray(reply->data(), static_cast<int>(reply->size()))) {
    return InternalError("ttrpc: error unmarshalling reply payload");
  }
  return response;
}

template <LiteMessage Resp, LiteMessage Req>
void Client::CallUnary(std::string service, std::string method, const Req& request,
                       CallOptions options, std::function<void(Result<Resp>)> done) {
  std::string payload;
  if (!request.SerializeToString(&payload)) {
    RunSoon([done = std::move(done)] {
      done(InternalError("ttrpc: error marshaling request payload"));
    });
    return;
  }
  Call(std::move(service), std::move(method), std::move(payload), std::move(options),
       [done = std::move(done)](Result<std::string> reply) { done(ParseReply<Resp>(reply)); });
}

template <LiteMessage Resp, LiteMessage Req>
Result<Resp> Client::CallUnarySync(std::string service, std::string method, const Req& request,
                                   CallOptions options) {
  std::string payload;
  if (!request.SerializeToString(&payload)) {
    return InternalError("ttrpc: error marshaling request payload");
  }
  return ParseReply<Resp>(
      CallSync(std::move(service), std::move(method), std::move(payload), std::move(options)));
}

}  // namespace hull::ttrpc
