// AgentClient: hull's ttrpc client to one guest's hull-agent, with typed
// calls and a default deadline. Shared (shared_ptr) by the vm backend and
// its stdio pumps, so a pump never outlives the connection it uses.
// Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/status.h"
#include "hull/agent/v1/agent.pb.h"
#include "ttrpc/client.h"

namespace hull::shim::vm {

inline constexpr char kAgentService[] = "hull.agent.v1.Agent";
// Ordinary calls; long-polls ask for kLongPoll and ask again on
// DeadlineExceeded.
inline constexpr std::chrono::seconds kCallDeadline{30};
inline constexpr std::chrono::seconds kLongPoll{20};

class AgentClient {
 public:
  explicit AgentClient(std::unique_ptr<ttrpc::Client> client) : client_(std::move(client)) {}

  template <typename Resp, typename Req>
  void Call(const char* method, const Req& request, std::function<void(Result<Resp>)> done,
            std::chrono::nanoseconds timeout = kCallDeadline) {
    if (!client_) {
      return done(UnavailableError(std::string("agent ") + method + ": the VM is gone"));
    }
    ttrpc::CallOptions options{.deadline = EventLoop::Clock::now() + timeout};
    client_->CallUnary<Resp>(kAgentService, method, request, std::move(options), std::move(done));
  }

  // Fails the calls in flight (Unavailable) and every later one.
  void Close() {
    if (!client_) return;
    client_->Close();
    client_.reset();
  }
  bool open() const { return client_ != nullptr && client_->open(); }

 private:
  std::unique_ptr<ttrpc::Client> client_;
};

}  // namespace hull::shim::vm
