// CriClient: CRI calls from integration tests, through the project's Python
// client (tests/integration/cri/cri_client.py, on Debian's python3-grpcio)
// against a containerd CRI endpoint. Requests and responses are JSON in
// protobuf's mapping with the .proto field names; bytes fields (ExecSync
// output) arrive base64-encoded, see DecodeBase64. Any thread; each call runs
// one short-lived python3 process.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tests/integration/harness/command.h"

namespace hull::itest {

// The answer of a Python client that prints the response as JSON (CRI's
// here, containerd's API in containerd_api/).
struct JsonReply {
  bool ok = false;
  nlohmann::json body;  // the response, when ok
  std::string error;    // "NOT_FOUND: ...", or what went wrong running the client
  double call_ms = -1;  // CriClient::TimedCall: the gRPC call alone (no Python start)
};
using CriReply = JsonReply;

// `r`, the run of client `program`, as a reply.
JsonReply JsonReplyOf(const CommandResult& r, std::string_view program);

// The busybox container the CRI tests run: some CPU work first, so that
// every runtime's CPU accounting (gVisor's counts whole ticks) shows usage,
// then a long sleep.
nlohmann::json BusyboxContainerConfig(const std::string& name, std::string_view image);

class CriClient {
 public:
  // `socket` is containerd's gRPC socket path.
  explicit CriClient(std::string socket) : socket_(std::move(socket)) {}

  CriReply Call(std::string_view method, const nlohmann::json& request = nlohmann::json::object(),
                std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;
  // The same, also measuring the call itself (reply.call_ms, when ok): the
  // client times it from its connected channel, without Python's start-up.
  CriReply TimedCall(std::string_view method, const nlohmann::json& request,
                     std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;
  // CreateContainer with `config` in `pod`, then StartContainer: the reply
  // of the step that failed, else CreateContainer's (body.container_id).
  CriReply RunContainer(const std::string& pod, const nlohmann::json& pod_config,
                        const nlohmann::json& config) const;

 private:
  CriReply Run(std::string_view method, const nlohmann::json& request,
               std::chrono::milliseconds timeout, bool timed) const;

  std::string socket_;
};

// `message` (a runtime.v1 message name, e.g. "PodSandboxConfig") given as
// JSON, serialized to protobuf binary by the same Python code. Empty on error,
// with the reason in *error.
std::string EncodeCriMessage(std::string_view message, const nlohmann::json& value,
                             std::string* error);

// Standard base64 with padding; invalid input yields what decoded before it.
std::string DecodeBase64(std::string_view text);

}  // namespace hull::itest
