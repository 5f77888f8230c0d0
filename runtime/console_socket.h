// ConsoleSocket: the unix socket a terminal process's runtime connects to
// (`--console-socket`) to hand over the pty master with SCM_RIGHTS. It owns
// the listening socket and its file; the file is removed as soon as the
// master has arrived (or receiving failed), and at the latest on destruction.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/unique_fd.h"

namespace hull::runtime {

class ConsoleSocket {
 public:
  // Listens on a new socket in `dir`. sun_path holds 107 characters and a
  // bundle path can be longer; then the socket goes into a private (0700)
  // directory made under $TMPDIR or /tmp, which is removed with it.
  static Result<std::unique_ptr<ConsoleSocket>> Create(const std::string& dir);
  ~ConsoleSocket();
  ConsoleSocket(const ConsoleSocket&) = delete;
  ConsoleSocket& operator=(const ConsoleSocket&) = delete;

  const std::string& path() const { return path_; }

  // Accepts one connection on the loop and receives the one descriptor sent
  // with it, which must be a terminal. `on_master` runs once, from a loop
  // callback; the socket file is gone by then. The owner may destroy the
  // ConsoleSocket inside `on_master`.
  void Receive(EventLoop& loop, std::function<void(Result<UniqueFd>)> on_master);

 private:
  ConsoleSocket() = default;
  void OnAcceptable();
  void OnMessage();
  void RemoveFile();
  void Finish(Result<UniqueFd> result);

  std::string path_;
  std::string temp_dir_;  // set when the socket lives in a directory of its own
  bool file_present_ = false;
  UniqueFd listener_;
  UniqueFd conn_;
  EventLoop* loop_ = nullptr;
  EventHandle watch_;
  std::function<void(Result<UniqueFd>)> on_master_;
};

}  // namespace hull::runtime
