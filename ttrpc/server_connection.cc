#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "ttrpc/envelope_internal.h"
#include "ttrpc/server_connection_internal.h"

namespace hull::ttrpc::internal {
namespace {

// Ten years: longer timeouts are as good as none, and shorter than the
// steady clock's range.
constexpr int64_t kMaxTimeoutNano = int64_t{10} * 365 * 24 * 3600 * 1'000'000'000;

}  // namespace

Result<std::shared_ptr<ServerConnection>> ServerConnection::Create(
    EventLoop& loop, UniqueFd fd, const ServiceTable& services, ConnectionLimits limits,
    ActivityCounter activity, std::function<void(ServerConnection*, const Status&)> on_closed,
    std::function<void(const Status&)> on_limit) {
  // Not make_shared: Responders parked by handlers (Wait) hold weak_ptrs, and
  // with make_shared each would pin the whole object's memory after close.
  std::shared_ptr<ServerConnection> conn(new ServerConnection(
      loop, services, limits, std::move(activity), std::move(on_closed), std::move(on_limit)));
  // The callbacks hold raw pointers: the FramedConnection never calls them
  // after Close(), which ~ServerConnection does.
  ServerConnection* raw = conn.get();
  HULL_ASSIGN_OR_RETURN(
      conn->framed_,
      FramedConnection::Create(loop, std::move(fd),
                               {.on_frame = [raw](Frame frame) { raw->OnFrame(std::move(frame)); },
                                .on_closed = [raw](const Status& why) { raw->OnClosed(why); }},
                               limits.partial_frame_deadline));
  return conn;
}

ServerConnection::ServerConnection(EventLoop& loop, const ServiceTable& services,
                                   ConnectionLimits limits, ActivityCounter activity,
                                   std::function<void(ServerConnection*, const Status&)> on_closed,
                                   std::function<void(const Status&)> on_limit)
    : loop_(loop),
      services_(services),
      limits_(limits),
      on_closed_(std::move(on_closed)),
      on_limit_(std::move(on_limit)),
      activity_(std::move(activity)) {
  MarkActive();
}

void ServerConnection::MarkActive() {
  last_active_ = loop_.Now();
  if (activity_ != nullptr) activity_seq_ = ++*activity_;
}

ServerConnection::~ServerConnection() {
  Close();
}

void ServerConnection::Close() {
  if (framed_ != nullptr) framed_->Close();
  calls_.clear();
}

void ServerConnection::OnClosed(const Status& why) {
  auto self = shared_from_this();  // the owner drops its reference below
  calls_.clear();
  if (on_closed_) std::exchange(on_closed_, nullptr)(this, why);
}

void ServerConnection::Drain() {
  draining_ = true;
  if (calls_.empty() && framed_ != nullptr) framed_->CloseAfterFlush();
}

void ServerConnection::FailAll(const Status& status) {
  std::vector<uint32_t> ids;
  ids.reserve(calls_.size());
  for (const auto& [id, call] : calls_) ids.push_back(id);
  for (uint32_t id : ids) Answer(id, status, {});
}

void ServerConnection::OnFrame(Frame frame) {
  auto self = shared_from_this();  // a handler may shut the server down
  MarkActive();
  spoke_ = true;
  const FrameHeader& header = frame.header;
  // Go's order: the size check comes before anything else about the frame.
  if (frame.oversized()) {
    SendResponse(header.stream_id, CheckMessageSize(header.length), {});
    return;
  }
  if (header.stream_id % 2 == 0) {
    SendResponse(header.stream_id,
                 InvalidArgumentError("StreamID must be odd for client initiated streams"), {});
    return;
  }
  switch (static_cast<MessageType>(header.type)) {
    case MessageType::kRequest: OnRequest(header.stream_id, frame.body); return;
    case MessageType::kData: OnData(header.stream_id); return;
    default:
      // Responses from a client and unknown types are ignored, as Go does,
      // for forward compatibility.
      return;
  }
}

void ServerConnection::OnRequest(uint32_t stream_id, std::string_view body) {
  if (stream_id == 1 && last_request_id_ != 0 && restart_session_on_stream_one_) {
    // A new peer: the old one's calls have nobody to answer to.
    ++session_;
    calls_.clear();
    last_request_id_ = 0;
  }
  if (stream_id <= last_request_id_) {
    SendResponse(stream_id, InvalidArgumentError("StreamID cannot be re-used and must increment"),
                 {});
    return;
  }
  last_request_id_ = stream_id;
  Result<RequestEnvelope> request = DecodeRequest(body);
  if (!request) {
    SendResponse(stream_id, request.error(), {});
    return;
  }
  // Every registered method is unary, and the method kind, not the Request's
  // flags, decides how a call is served (Go does the same): a streaming
  // Request to an unknown method gets Unimplemented below, one to a unary
  // method is served as unary.
  Result<const Handler*> handler = services_.Find(request->service, request->method);
  if (!handler) {
    SendResponse(stream_id, handler.error(), {});
    return;
  }
  if (limits_.max_calls > 0 && calls_.size() >= limits_.max_calls) {
    Status refused = ResourceExhaustedError("ttrpc: " + std::to_string(calls_.size()) +
                                            " calls in flight on this connection (the limit)");
    if (on_limit_) std::exchange(on_limit_, nullptr)(refused);  // once per connection
    SendResponse(stream_id, refused, {});
    return;
  }
  std::optional<EventLoop::Clock::time_point> deadline;
  Call call;
  if (request->timeout_nano < 0) {
    SendResponse(stream_id, DeadlineExceededError("ttrpc: deadline exceeded"), {});
    return;
  }
  if (request->timeout_nano > 0) {
    // Clamped so that now + timeout cannot overflow the clock.
    std::chrono::nanoseconds timeout(std::min(request->timeout_nano, kMaxTimeoutNano));
    deadline = loop_.Now() + timeout;
    // Rounded up: the loop's timers have microsecond resolution.
    call.deadline_timer =
        loop_.AddTimer(std::chrono::ceil<std::chrono::microseconds>(timeout), [this, stream_id] {
          Answer(stream_id, DeadlineExceededError("ttrpc: deadline exceeded"), {});
        });
  }
  calls_.emplace(stream_id, std::move(call));
  CallContext context{.service = request->service,
                      .method = request->method,
                      .metadata = request->metadata,
                      .deadline = deadline,
                      .stream_id = stream_id,
                      .connection = ConnectionWatch(weak_from_this())};
  (**handler)(context, std::move(request->payload),
              Responder(weak_from_this(), stream_id, session_));
}

void ServerConnection::OnData(uint32_t stream_id) {
  // No method streams, so no Data is ever expected. Data on a unary call in
  // flight ends that call (Go would crash here); exactly one Response still
  // goes out on the stream.
  if (calls_.contains(stream_id)) {
    Answer(stream_id, InvalidArgumentError("data frame on a unary stream: method does not stream"),
           {});
    return;
  }
  SendResponse(stream_id, InvalidArgumentError("StreamID is no longer active"), {});
}

void ServerConnection::Answer(uint32_t session, uint32_t stream_id, const Status& status,
                              std::string payload) {
  if (session != session_) return;  // a session that has been replaced
  auto it = calls_.find(stream_id);
  if (it == calls_.end()) return;  // already answered, timed out, or the connection is gone
  calls_.erase(it);
  SendResponse(stream_id, status, std::move(payload));
  if (draining_ && calls_.empty() && framed_ != nullptr) framed_->CloseAfterFlush();
}

void ServerConnection::SendResponse(uint32_t stream_id, const Status& status, std::string payload) {
  if (!open()) return;
  MarkActive();
  std::string body = EncodeResponse(status, std::move(payload));
  // A reply too big for a frame fails its own call instead of the connection.
  if (Status size = CheckMessageSize(body.size()); !size.ok()) body = EncodeResponse(size, {});
  framed_->Send(stream_id, MessageType::kResponse, 0, body);
}

}  // namespace hull::ttrpc::internal
