#include "bench/shims/shim_client.h"

#include <functional>

#include "bench/shims/measure.h"
#include "google/protobuf/empty.pb.h"

namespace hull::bench {

namespace tv2 = containerd::task::v2;
using namespace std::chrono_literals;

namespace {
constexpr char kTaskService[] = "containerd.task.v2.Task";
}

Result<std::unique_ptr<ShimClient>> ShimClient::Dial(const std::string& address,
                                                     const std::string& ns) {
  std::unique_ptr<ShimClient> c(new ShimClient());
  c->ns_ = ns;
  HULL_ASSIGN_OR_RETURN(c->loop_, EventLoop::Create());
  HULL_ASSIGN_OR_RETURN(c->client_, ttrpc::Client::Connect(*c->loop_, address));
  return c;
}

ttrpc::CallOptions ShimClient::Options(std::chrono::milliseconds timeout) const {
  ttrpc::CallOptions options;
  options.deadline = loop_->Now() + timeout;
  options.metadata.emplace_back("containerd-namespace-ttrpc", ns_);
  return options;
}

Result<tv2::ConnectResponse> ShimClient::Connect(const std::string& id,
                                                 std::chrono::milliseconds timeout) {
  tv2::ConnectRequest request;
  request.set_id(id);
  return client_->CallUnarySync<tv2::ConnectResponse>(kTaskService, "Connect", request,
                                                      Options(timeout));
}

Result<tv2::StateResponse> ShimClient::State(const std::string& id) {
  tv2::StateRequest request;
  request.set_id(id);
  return client_->CallUnarySync<tv2::StateResponse>(kTaskService, "State", request, Options(10s));
}

void ShimClient::Shutdown(const std::string& id) {
  tv2::ShutdownRequest request;
  request.set_id(id);
  client_->CallUnarySync<google::protobuf::Empty>(kTaskService, "Shutdown", request, Options(5s))
      .status()
      .IgnoreError();
}

Result<double> ShimClient::StateCallsPerSecond(const std::string& id, int calls, int in_flight) {
  tv2::StateRequest request;
  request.set_id(id);
  std::string payload;
  request.SerializeToString(&payload);
  int started = 0;
  int finished = 0;
  Status failure;
  // Each reply starts the next call, so `in_flight` stay outstanding.
  std::function<void()> start_one = [&] {
    if (started == calls || !failure.ok()) return;
    ++started;
    client_->Call(kTaskService, "State", payload, Options(30s), [&](Result<std::string> reply) {
      ++finished;
      if (!reply) {
        failure = reply.error();
        return;
      }
      start_one();
    });
  };
  auto t0 = Clock::now();
  for (int i = 0; i < in_flight; ++i) start_one();
  bool done = loop_->RunUntil(
      [&] { return finished == started && (started == calls || !failure.ok()); }, 120s);
  double seconds = MillisecondsSince(t0) / 1000.0;
  if (!failure.ok()) return failure.WithContext("State");
  if (!done) return DeadlineExceededError("State calls did not finish within 120 s");
  return calls / seconds;
}

Result<std::string> ReadShimAddress(const std::string& bundle) {
  std::string address = ReadWholeFile(bundle + "/address");
  while (!address.empty() && (address.back() == '\n' || address.back() == ' ')) address.pop_back();
  if (address.empty()) return NotFoundError("no shim address in " + bundle + "/address");
  return address;
}

}  // namespace hull::bench
