// ShimClient: hull's own ttrpc client, connected straight to one shim's task
// socket (`unix://...` from the bundle's `address` file, or from `start`), as
// containerd's side would be. Used the same way for hull and for the Go shim,
// so throughput figures compare the servers, not the clients. Owns its loop;
// single thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/status.h"
#include "containerd/task/v2/shim.pb.h"
#include "ttrpc/client.h"

namespace hull::bench {

class ShimClient {
 public:
  // Connects (never blocks: a full backlog is Unavailable). `ns` goes into
  // every call's metadata as containerd sends it.
  static Result<std::unique_ptr<ShimClient>> Dial(const std::string& address,
                                                  const std::string& ns = "default");

  Result<containerd::task::v2::ConnectResponse> Connect(const std::string& id,
                                                        std::chrono::milliseconds timeout);
  Result<containerd::task::v2::StateResponse> State(const std::string& id);
  // Asks the shim to exit (it does once it holds no container); the shim may
  // close the connection before answering, which is not an error here.
  void Shutdown(const std::string& id);

  // `calls` State calls for `id`, `in_flight` outstanding at a time (1 is
  // one after another). Returns calls per second; fails on the first error.
  Result<double> StateCallsPerSecond(const std::string& id, int calls, int in_flight);

 private:
  ShimClient() = default;
  ttrpc::CallOptions Options(std::chrono::milliseconds timeout) const;

  std::string ns_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ttrpc::Client> client_;
};

// Reads `<bundle>/address` (no trailing newline expected, tolerated).
Result<std::string> ReadShimAddress(const std::string& bundle);

}  // namespace hull::bench
