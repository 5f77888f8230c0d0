// QmpClient: a client of QEMU's monitor protocol (QMP, one JSON object a
// line) on a unix socket, for the template steps (vm_template.h): stop a
// template and save its device state, restore a clone. Commands go out in
// order, one answer each; events are skipped. Owned by the vm backend;
// callbacks run on the loop and never after the client is destroyed.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::shim::vm {

class QmpClient {
 public:
  using Done = std::function<void(Result<nlohmann::json>)>;

  // Connects to `path` (QEMU's `-qmp unix:<path>,server=on,wait=off`) and
  // queues the capabilities negotiation. Unavailable while QEMU has not
  // made the socket yet.
  static Result<std::unique_ptr<QmpClient>> Connect(EventLoop& loop, const std::string& path);
  ~QmpClient();
  QmpClient(const QmpClient&) = delete;
  QmpClient& operator=(const QmpClient&) = delete;

  // Sends {"execute": command, "arguments": arguments}; `done` gets its
  // "return" value, or an Internal error with QMP's "desc" (Unavailable if
  // the connection ends first). `pass_fd` (>= 0) goes along as SCM_RIGHTS,
  // for `getfd`.
  void Execute(const std::string& command, nlohmann::json arguments, Done done, int pass_fd = -1);

 private:
  QmpClient(EventLoop& loop, UniqueFd fd);
  void OnReadable();
  void Fail(const Status& status);

  EventLoop& loop_;
  UniqueFd fd_;
  EventHandle watch_;
  std::string in_;
  std::vector<Done> waiting_;  // in the order the commands went out
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hull::shim::vm
