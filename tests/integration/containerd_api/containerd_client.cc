#include "tests/integration/containerd_api/containerd_client.h"

#include <string>
#include <vector>

#ifndef HULL_CONTAINERD_API_PYTHONPATH
#error "HULL_CONTAINERD_API_PYTHONPATH must be defined by the build"
#endif

namespace hull::itest {

namespace {

// Debian's interpreter, whatever python3 comes first on PATH: grpcio and
// protobuf are Debian packages installed for it.
constexpr const char* kPython = "/usr/bin/python3";

std::vector<std::string> ClientEnv() {
  return {std::string("PYTHONPATH=") + HULL_CONTAINERD_API_PYTHONPATH};
}

}  // namespace

std::vector<std::string> ContainerdClient::Argv(std::string_view service, std::string_view method,
                                                std::chrono::milliseconds timeout,
                                                const nlohmann::json& request) const {
  const auto seconds = std::chrono::duration<double>(timeout).count();
  return {kPython,
          std::string(HULL_SOURCE_DIR) + "/tests/integration/containerd_api/containerd_client.py",
          "--endpoint",
          "unix://" + socket_,
          "--namespace",
          ns_,
          "--timeout",
          std::to_string(seconds),
          std::string(service),
          std::string(method),
          request.dump()};
}

ApiReply ContainerdClient::Call(std::string_view service, std::string_view method,
                                const nlohmann::json& request,
                                std::chrono::milliseconds timeout) const {
  // The child gets a little longer than its own call deadline.
  CommandResult r = RunCommand(Argv(service, method, timeout, request),
                               timeout + std::chrono::seconds(15), "", ClientEnv());
  return JsonReplyOf(r, "containerd_client.py");
}

std::unique_ptr<BackgroundCommand> ContainerdClient::CallInBackground(
    std::string_view service, std::string_view method, const nlohmann::json& request) const {
  return BackgroundCommand::Start(Argv(service, method, std::chrono::minutes(5), request),
                                  ClientEnv());
}

nlohmann::json SnapshotMounts(const ContainerdClient& client, const nlohmann::json& container_info,
                              std::string* error) {
  if (!container_info.is_object() || !container_info.contains("Snapshotter") ||
      !container_info.contains("SnapshotKey")) {
    *error = "container info has no Snapshotter/SnapshotKey: " + container_info.dump();
    return nlohmann::json::array();
  }
  ApiReply r = client.Call(
      "snapshots", "Mounts",
      {{"snapshotter", container_info["Snapshotter"]}, {"key", container_info["SnapshotKey"]}});
  if (!r.ok) {
    *error = "Snapshots.Mounts: " + r.error;
    return nlohmann::json::array();
  }
  return r.body.value("mounts", nlohmann::json::array());
}

}  // namespace hull::itest
