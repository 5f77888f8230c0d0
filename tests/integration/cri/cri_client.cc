#include "tests/integration/cri/cri_client.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/harness/command.h"

#ifndef HULL_CRI_PYTHONPATH
#error "HULL_CRI_PYTHONPATH must be defined by the build"
#endif

namespace hull::itest {

namespace {

// Debian's interpreter, whatever python3 comes first on PATH: grpcio and
// protobuf are Debian packages installed for it.
constexpr const char* kPython = "/usr/bin/python3";

std::vector<std::string> ClientArgv() {
  return {kPython, std::string(HULL_SOURCE_DIR) + "/tests/integration/cri/cri_client.py"};
}

std::vector<std::string> ClientEnv() {
  return {std::string("PYTHONPATH=") + HULL_CRI_PYTHONPATH};
}

}  // namespace

CriReply CriClient::Call(std::string_view method, const nlohmann::json& request,
                         std::chrono::milliseconds timeout) const {
  return Run(method, request, timeout, /*timed=*/false);
}

CriReply CriClient::TimedCall(std::string_view method, const nlohmann::json& request,
                              std::chrono::milliseconds timeout) const {
  return Run(method, request, timeout, /*timed=*/true);
}

CriReply CriClient::Run(std::string_view method, const nlohmann::json& request,
                        std::chrono::milliseconds timeout, bool timed) const {
  std::vector<std::string> argv = ClientArgv();
  const auto seconds = std::chrono::duration<double>(timeout).count();
  argv.insert(argv.end(),
              {"--endpoint", "unix://" + socket_, "--timeout", std::to_string(seconds)});
  if (timed) argv.push_back("--time");
  argv.insert(argv.end(), {std::string(method), "-"});
  // The child gets a little longer than its own call deadline.
  CommandResult r =
      RunCommand(argv, timeout + std::chrono::seconds(15), request.dump(), ClientEnv());
  CriReply reply = JsonReplyOf(r, "cri_client.py");
  if (size_t at = r.err.rfind("call_ms="); reply.ok && timed && at != std::string::npos) {
    reply.call_ms = std::strtod(r.err.c_str() + at + 8, nullptr);
  }
  return reply;
}

std::string EncodeCriMessage(std::string_view message, const nlohmann::json& value,
                             std::string* error) {
  std::vector<std::string> argv = ClientArgv();
  argv.insert(argv.end(), {"--encode", std::string(message), "-"});
  CommandResult r = RunCommand(argv, std::chrono::seconds(60), value.dump(), ClientEnv());
  if (!r.ok()) {
    *error = r.Describe();
    return {};
  }
  return DecodeBase64(r.out);
}

std::string DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    int v = value(c);
    if (v < 0) break;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

JsonReply JsonReplyOf(const CommandResult& r, std::string_view program) {
  JsonReply reply;
  if (!r.ok()) {
    reply.error = r.err.empty() ? r.Describe() : r.err;
    while (!reply.error.empty() && reply.error.back() == '\n') reply.error.pop_back();
    return reply;
  }
  reply.body = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) {
    reply.error = std::string(program) + " printed no JSON: " + r.out;
    return reply;
  }
  reply.ok = true;
  return reply;
}

nlohmann::json BusyboxContainerConfig(const std::string& name, std::string_view image) {
  return {{"metadata", {{"name", name}}},
          {"image", {{"image", image}}},
          {"command",
           {"sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; exec sleep 3600"}},
          {"log_path", name + ".log"},
          {"linux", nlohmann::json::object()}};
}

CriReply CriClient::RunContainer(const std::string& pod, const nlohmann::json& pod_config,
                                 const nlohmann::json& config) const {
  CriReply created =
      Call("CreateContainer",
           {{"pod_sandbox_id", pod}, {"config", config}, {"sandbox_config", pod_config}});
  if (!created.ok) return created;
  CriReply started =
      Call("StartContainer", {{"container_id", created.body.value("container_id", "")}});
  return started.ok ? created : started;
}

}  // namespace hull::itest
