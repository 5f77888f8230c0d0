#include "ttrpc/client.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ttrpc/envelope_internal.h"
#include "ttrpc/framed_connection_internal.h"
#include "ttrpc/unix_socket_internal.h"

namespace hull::ttrpc {
namespace internal {
namespace {

// Ids are odd, start at 1 and never wrap (Go does not handle wrap-around
// either); a client that used them all must reconnect.
constexpr uint32_t kLastStreamId = 0x7fffffff;
Status ClosedError() {
  return UnavailableError("ttrpc: closed");
}

}  // namespace

// The client's state, shared with the loop callbacks that keep it alive while
// they run (a `done` may destroy the Client that owns it).
class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  explicit ClientConnection(EventLoop& loop) : loop_(loop) {}
  ~ClientConnection() { Abandon(); }

  Status Start(UniqueFd fd) {
    HULL_ASSIGN_OR_RETURN(
        framed_,
        FramedConnection::Create(loop_, std::move(fd),
                                 {.on_frame = [this](Frame frame) { OnFrame(std::move(frame)); },
                                  .on_closed = [this](const Status& why) { OnClosed(why); }}));
    return Status::Ok();
  }

  EventLoop& loop() { return loop_; }

  void Call(RequestEnvelope request, std::optional<EventLoop::Clock::time_point> deadline,
            Client::Callback done) {
    if (!open()) return FailSoon(std::move(done), ClosedError());
    if (next_id_ > kLastStreamId) {
      return FailSoon(std::move(done),
                      ResourceExhaustedError("ttrpc: stream ids exhausted; reconnect"));
    }
    if (deadline) {
      auto left = *deadline - loop_.Now();
      if (left <= std::chrono::nanoseconds::zero()) {
        return FailSoon(std::move(done), DeadlineExceededError("ttrpc: deadline exceeded"));
      }
      request.timeout_nano = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    }
    std::string body = EncodeRequest(std::move(request));
    // Refused before sending, as Go (v1.2.6+) does: the server would only
    // discard it.
    if (Status size = CheckMessageSize(body.size()); !size.ok()) {
      return FailSoon(std::move(done), size);
    }
    uint32_t id = next_id_;
    next_id_ += 2;
    Pending& pending = pending_[id];
    pending.done = std::move(done);
    if (deadline) {
      // Rounded up: the loop's timers have microsecond resolution, and a
      // deadline must not fire early.
      auto delay = std::chrono::ceil<std::chrono::microseconds>(*deadline - loop_.Now());
      pending.deadline_timer = loop_.AddTimer(delay, [this, id] {
        auto self = shared_from_this();
        Complete(id, DeadlineExceededError("ttrpc: deadline exceeded"));
      });
    }
    framed_->Send(id, MessageType::kRequest, 0, body);
  }

  void FailSoon(Client::Callback done, Status status) {
    loop_.Post([done = std::move(done), status = std::move(status)] { done(status); });
  }

  void SetOnClose(std::function<void(const Status&)> on_close) { on_close_ = std::move(on_close); }

  // Closes without telling on_close; pending calls fail now.
  void Close() {
    auto self = shared_from_this();  // a `done` may destroy the Client
    on_close_ = nullptr;
    if (framed_ != nullptr) framed_->Close();
    FailAllPending();
  }

  // Closes and forgets the pending calls without calling them: their owner
  // is going away. What the callbacks captured is destroyed.
  void Abandon() {
    abandoned_ = true;
    on_close_ = nullptr;
    if (framed_ != nullptr) framed_->Close();
    auto pending = std::exchange(pending_, {});
  }

  bool open() const { return framed_ != nullptr && framed_->open(); }
  size_t calls_in_flight() const { return pending_.size(); }

 private:
  struct Pending {
    Client::Callback done;
    EventHandle deadline_timer;
  };

  void OnFrame(Frame frame) {
    auto self = shared_from_this();
    uint32_t id = frame.header.stream_id;
    if (!pending_.contains(id)) return;  // late (after a deadline) or never ours
    if (frame.oversized()) {
      Complete(id, CheckMessageSize(frame.header.length));
      return;
    }
    switch (static_cast<MessageType>(frame.header.type)) {
      case MessageType::kResponse: Complete(id, DecodeResponse(frame.body)); return;
      case MessageType::kData:
        Complete(id,
                 InternalError("ttrpc: unexpected data message on a unary call: protocol error"));
        return;
      default: return;
    }
  }

  void Complete(uint32_t id, Result<std::string> result) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Client::Callback done = std::move(it->second.done);
    pending_.erase(it);
    done(std::move(result));
  }

  void FailAllPending() {
    // A `done` may start new calls (which fail soon, the connection being
    // closed) or destroy the client, so take the whole set out first.
    auto pending = std::exchange(pending_, {});
    std::vector<uint32_t> ids;
    ids.reserve(pending.size());
    for (const auto& [id, p] : pending) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (uint32_t id : ids) {
      if (abandoned_) return;  // a `done` destroyed the Client
      Client::Callback done = std::move(pending[id].done);
      pending[id].deadline_timer.Reset();
      done(ClosedError());
    }
  }

  void OnClosed(const Status& why) {
    auto self = shared_from_this();
    FailAllPending();
    if (on_close_ && !abandoned_) std::exchange(on_close_, nullptr)(why.ok() ? ClosedError() : why);
  }

  EventLoop& loop_;
  std::shared_ptr<FramedConnection> framed_;
  std::unordered_map<uint32_t, Pending> pending_;
  uint32_t next_id_ = 1;
  bool abandoned_ = false;
  std::function<void(const Status&)> on_close_;
};

}  // namespace internal

namespace {

// CallSync without a deadline still gives up eventually rather than hang a tool.
constexpr std::chrono::hours kSyncWaitLimit(24);

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(EventLoop& loop, std::string_view address) {
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, internal::ConnectUnix(address));
  return FromFd(loop, std::move(fd));
}

Result<std::unique_ptr<Client>> Client::FromFd(EventLoop& loop, UniqueFd connected) {
  auto conn = std::make_shared<internal::ClientConnection>(loop);
  HULL_RETURN_IF_ERROR(conn->Start(std::move(connected)));
  return std::unique_ptr<Client>(new Client(std::move(conn)));
}

Client::~Client() {
  conn_->Abandon();
}

void Client::Call(std::string service, std::string method, std::string payload, CallOptions options,
                  Callback done) {
  conn_->Call(internal::RequestEnvelope{.service = std::move(service),
                                        .method = std::move(method),
                                        .payload = std::move(payload),
                                        .timeout_nano = 0,
                                        .metadata = std::move(options.metadata)},
              options.deadline, std::move(done));
}

Result<std::string> Client::CallSync(std::string service, std::string method, std::string payload,
                                     CallOptions options) {
  // Shared with the callback, which may outlive this frame if we give up.
  auto result = std::make_shared<std::optional<Result<std::string>>>();
  std::chrono::nanoseconds wait = kSyncWaitLimit;
  if (options.deadline) {
    // The call's own timer fails it at the deadline; this is only a backstop.
    wait = *options.deadline - conn_->loop().Now() + std::chrono::seconds(1);
  }
  Call(std::move(service), std::move(method), std::move(payload), std::move(options),
       [result](Result<std::string> reply) { *result = std::move(reply); });
  if (!conn_->loop().RunUntil([&] { return result->has_value(); }, wait)) {
    return DeadlineExceededError("ttrpc: gave up waiting for the reply");
  }
  return std::move(**result);
}

void Client::RunSoon(std::function<void()> task) {
  conn_->loop().Post(std::move(task));
}

void Client::SetOnClose(std::function<void(const Status&)> on_close) {
  conn_->SetOnClose(std::move(on_close));
}

void Client::Close() {
  conn_->Close();
}

bool Client::open() const {
  return conn_->open();
}

size_t Client::calls_in_flight() const {
  return conn_->calls_in_flight();
}

}  // namespace hull::ttrpc
