// RecordingSink: an EventSink for the shim core's tests. It records every
// event the EventPublisher sends, decoded into a short line
// ("/tasks/exit c1 137"), and answers OK at once: the publisher then sends
// each event as soon as it is queued, so the record is the order in which
// events were queued. Owned by the EventPublisher; the test keeps a pointer.
// Loop thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "containerd/events/task.pb.h"
#include "shim/publisher.h"

namespace hull::shim::testing {

struct RecordedEvent {
  std::string topic;
  google::protobuf::Any event;
  // "<topic> <process id>" plus " <exit status>" for /tasks/exit: the
  // process id is the exec id for exec events, else the container id.
  std::string line;
};

class RecordingSink final : public EventSink {
 public:
  void Send(const std::string& topic, const google::protobuf::Any& event,
            std::function<void(Status)> done) override {
    events_.push_back(RecordedEvent{topic, event, Describe(topic, event)});
    done(Status::Ok());
  }

  const std::vector<RecordedEvent>& events() const { return events_; }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& e : events_) out.push_back(e.line);
    return out;
  }
  // Index of the first event whose line is `line` or starts with `line `;
  // -1 if none.
  int IndexOf(std::string_view line) const {
    for (size_t i = 0; i < events_.size(); ++i) {
      const std::string& l = events_[i].line;
      if (l == line || (l.size() > line.size() && l.starts_with(line) && l[line.size()] == ' ')) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  bool Has(std::string_view line) const { return IndexOf(line) >= 0; }
  size_t Count(std::string_view topic) const {
    size_t n = 0;
    for (const auto& e : events_) n += e.topic == topic ? 1 : 0;
    return n;
  }

 private:
  static std::string Describe(const std::string& topic, const google::protobuf::Any& any) {
    namespace ev = containerd::events;
    const std::string& type = any.type_url();
    std::string line = topic + " ";
    if (type == "containerd.events.TaskExit") {
      ev::TaskExit e;
      e.ParseFromString(any.value());
      return line + e.id() + " " + std::to_string(e.exit_status());
    }
    if (type == "containerd.events.TaskExecStarted") {
      ev::TaskExecStarted e;
      e.ParseFromString(any.value());
      return line + e.exec_id();
    }
    if (type == "containerd.events.TaskExecAdded") {
      ev::TaskExecAdded e;
      e.ParseFromString(any.value());
      return line + e.exec_id();
    }
    // Every other task event has container_id = 1 and nothing else the
    // tests look at: TaskOOM reads it (the rest is kept as unknown fields).
    ev::TaskOOM e;
    e.ParseFromString(any.value());
    return line + e.container_id();
  }

  std::vector<RecordedEvent> events_;
};

}  // namespace hull::shim::testing
