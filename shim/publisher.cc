#include "shim/publisher.h"

#include <chrono>

#include "containerd/services/events/ttrpc/v1/events.pb.h"
#include "google/protobuf/empty.pb.h"
#include "ttrpc/client.h"

namespace hull::shim {
namespace {

constexpr auto kForwardTimeout = std::chrono::seconds(5);
constexpr char kEventsService[] = "containerd.services.events.ttrpc.v1.Events";
constexpr char kExitTopic[] = "/tasks/exit";
// While containerd stays away, a retry is logged this often (the first one
// always).
constexpr int kLogEveryAttempts = 12;

// Forwards over one ttrpc connection, made on first use and again after it
// breaks.
class ForwardSink : public EventSink {
 public:
  ForwardSink(EventLoop& loop, std::string address, std::string ns)
      : loop_(loop), address_(std::move(address)), ns_(std::move(ns)) {}

  void Send(const std::string& topic, const google::protobuf::Any& event,
            std::function<void(Status)> done) override {
    if (client_ == nullptr || !client_->open()) {
      auto client = ttrpc::Client::Connect(loop_, address_);
      if (!client) {
        loop_.Post([done = std::move(done), s = client.error()] {
          done(s.WithContext("connect to containerd events"));
        });
        return;
      }
      client_ = std::move(*client);
    }
    containerd::services::events::ttrpc::v1::ForwardRequest request;
    auto* envelope = request.mutable_envelope();
    auto now = std::chrono::system_clock::now().time_since_epoch();
    auto ns_count = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    envelope->mutable_timestamp()->set_seconds(ns_count / 1000000000);
    envelope->mutable_timestamp()->set_nanos(static_cast<int32_t>(ns_count % 1000000000));
    envelope->set_namespace_(ns_);
    envelope->set_topic(topic);
    *envelope->mutable_event() = event;
    ttrpc::CallOptions options;
    options.deadline = loop_.Now() + kForwardTimeout;
    options.metadata.emplace_back("containerd-namespace-ttrpc", ns_);
    client_->CallUnary<google::protobuf::Empty>(
        kEventsService, "Forward", request, std::move(options),
        [done = std::move(done)](Result<google::protobuf::Empty> r) { done(r.status()); });
  }

 private:
  EventLoop& loop_;
  std::string address_;
  std::string ns_;
  std::unique_ptr<ttrpc::Client> client_;
};

}  // namespace

std::unique_ptr<EventSink> MakeForwardSink(EventLoop& loop, std::string ttrpc_address,
                                           std::string ns) {
  return std::make_unique<ForwardSink>(loop, std::move(ttrpc_address), std::move(ns));
}

EventPublisher::EventPublisher(EventLoop& loop, const Logger& log, std::unique_ptr<EventSink> sink,
                               PublisherOptions options)
    : loop_(loop), log_(log), sink_(std::move(sink)), options_(options) {}

EventPublisher::~EventPublisher() {
  *alive_ = false;
}

void EventPublisher::Enqueue(std::string topic, google::protobuf::Any event) {
  bool exit = topic == kExitTopic;
  if (!MakeRoom(exit)) {
    ++dropped_;
    log_.Warn("event queue full ({} events); dropping {} {}", queue_.size(), topic,
              event.type_url());
    return;
  }
  queued_exits_ += exit;
  queue_.push_back(Pending{std::move(topic), std::move(event)});
  if (!in_flight_ && !retry_timer_.active()) SendHead();
}

bool EventPublisher::MakeRoom(bool exit) {
  bool exits_full = exit && queued_exits_ >= options_.max_queued_exits;
  if (queue_.size() < options_.max_queued && !exits_full) return true;
  // The head may be in flight: it stays. Oldest first among the rest: a
  // non-exit event (unless an exit must go to respect the exit bound).
  auto victim = queue_.end();
  for (auto it = queue_.size() > 1 ? queue_.begin() + 1 : queue_.end(); it < queue_.end(); ++it) {
    bool is_exit = it->topic == kExitTopic;
    if (exits_full ? is_exit : !is_exit) {
      victim = it;
      break;
    }
  }
  if (victim == queue_.end()) {
    // Only exits queued (or only the head): keep them, past max_queued, up
    // to the exit bound; a non-exit event is the one dropped.
    return exit && !exits_full;
  }
  ++dropped_;
  log_.Warn("event queue full ({} events); dropping {} {}", queue_.size(), victim->topic,
            victim->event.type_url());
  queued_exits_ -= victim->topic == kExitTopic;
  queue_.erase(victim);
  return true;
}

void EventPublisher::SendHead() {
  if (queue_.empty()) {
    MaybeFlushed();
    return;
  }
  in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  sink_->Send(queue_.front().topic, queue_.front().event, [this, alive](Status status) {
    if (alive.expired()) return;
    OnSent(std::move(status));
  });
}

void EventPublisher::OnSent(Status status) {
  in_flight_ = false;
  if (queue_.empty()) return;
  Pending& head = queue_.front();
  if (status.ok() || status.code() == Code::kInvalidArgument) {
    // InvalidArgument: containerd refused the envelope; retrying cannot help.
    if (!status.ok()) log_.Error("publish {}: {}", head.topic, status.ToString());
    if (head.attempts > 0 && status.ok()) {
      log_.Info("publish {}: delivered after {} retries", head.topic, head.attempts);
    }
    queued_exits_ -= head.topic == kExitTopic;
    queue_.pop_front();
    SendHead();
    return;
  }
  // containerd is away (restarting, or down for longer): retry for as long
  // as the server lives, backing off (doubling, capped).
  ++head.attempts;
  auto delay = options_.initial_backoff * (int64_t{1} << std::min(head.attempts - 1, 20));
  delay = std::min(delay, options_.max_backoff);
  if (head.attempts == 1 || head.attempts % kLogEveryAttempts == 0) {
    log_.Warn("publish {} failed ({}), attempt {}, retrying in {} ms ({} events queued)",
              head.topic, status.ToString(), head.attempts, delay.count(), queue_.size());
  }
  retry_timer_ = loop_.AddTimer(delay, [this] {
    retry_timer_.Reset();
    SendHead();
  });
}

void EventPublisher::Flush(std::chrono::milliseconds timeout, std::function<void()> done) {
  flush_waiters_.push_back(std::move(done));
  if (!flush_timer_.active()) {
    flush_timer_ = loop_.AddTimer(timeout, [this] {
      flush_timer_.Reset();
      auto waiters = std::move(flush_waiters_);
      flush_waiters_.clear();
      for (auto& w : waiters) w();
    });
  }
  MaybeFlushed();
}

void EventPublisher::MaybeFlushed() {
  if (!queue_.empty() || in_flight_ || flush_waiters_.empty()) return;
  flush_timer_.Reset();
  auto waiters = std::move(flush_waiters_);
  flush_waiters_.clear();
  loop_.Post([waiters = std::move(waiters)] {
    for (auto& w : waiters) w();
  });
}

}  // namespace hull::shim
