// ContainerdClient: calls of containerd's own gRPC API (Tasks, Snapshots)
// from integration tests, through the project's Python client
// (tests/integration/containerd_api/containerd_client.py, Debian's
// python3-grpcio): what containerd's Go client does, for the steps `ctr`
// cannot take (a task created and never started, Update before Start, the
// runctypes CreateOptions). Requests and responses are JSON in protobuf's
// mapping with the .proto field names. Any thread; each call runs one
// short-lived python3 process.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tests/integration/cri/cri_client.h"
#include "tests/integration/harness/command.h"

namespace hull::itest {

// "FAILED_PRECONDITION: ..." in error, or what went wrong running the client.
using ApiReply = JsonReply;

class ContainerdClient {
 public:
  // `socket` is containerd's gRPC socket path; `ns` the containerd namespace.
  ContainerdClient(std::string socket, std::string ns)
      : socket_(std::move(socket)), ns_(std::move(ns)) {}

  // `service` is "tasks" or "snapshots".
  ApiReply Call(std::string_view service, std::string_view method,
                const nlohmann::json& request = nlohmann::json::object(),
                std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;

  // The same call left running (Tasks.Wait): its JSON response is the
  // command's stdout once it exits with 0. nullptr if it cannot start.
  std::unique_ptr<BackgroundCommand> CallInBackground(std::string_view service,
                                                      std::string_view method,
                                                      const nlohmann::json& request) const;

 private:
  std::vector<std::string> Argv(std::string_view service, std::string_view method,
                                std::chrono::milliseconds timeout,
                                const nlohmann::json& request) const;

  std::string socket_;
  std::string ns_;
};

// Tasks.Create's rootfs for container `id`: the Mounts of its snapshot, as
// containerd's Go client passes them (read from `ctr containers info`).
// Empty JSON array and *error set on failure.
nlohmann::json SnapshotMounts(const ContainerdClient& client, const nlohmann::json& container_info,
                              std::string* error);

}  // namespace hull::itest
