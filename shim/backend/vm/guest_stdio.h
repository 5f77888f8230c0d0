// GuestStdio: the standard streams of one guest process, pumped between the
// host descriptors the shim core gives (ProcessStdio: pipes, files, a
// binary logger's pipes, or a host pty for a terminal) and the agent's
// long-polls: host stdin -> WriteStdin (CloseStdin at its end), ReadStdout /
// ReadStderr -> host stdout / stderr (each closed at the guest stream's
// eof, which is what ends the core's copy). Owns its descriptors; dropping
// it stops the pumps. Loop thread only.
#pragma once

#include <deque>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "shim/backend/make_backend.h"
#include "shim/backend/vm/agent_client.h"

namespace hull::shim::vm {

class GuestStdio {
 public:
  // `in`, `out`, `err` may be invalid (the stream is not pumped). For a
  // terminal, `in` and `out` are the same pty (one descriptor each, dup'd).
  GuestStdio(EventLoop& loop, std::shared_ptr<AgentClient> agent, std::string id,
             std::string exec_id, bool terminal, UniqueFd in, UniqueFd out, UniqueFd err);
  ~GuestStdio();
  GuestStdio(const GuestStdio&) = delete;
  GuestStdio& operator=(const GuestStdio&) = delete;

  // Starts the pumps (after the agent created the process).
  void Start();

 private:
  struct Output;
  void ReadStdin();
  void SendStdin(std::string data, size_t offset);
  void CloseStdin();
  void Poll(Output* out);
  void Flush(Output* out);

  EventLoop& loop_;
  std::shared_ptr<AgentClient> agent_;
  std::string id_;
  std::string exec_id_;
  bool terminal_;
  UniqueFd in_;
  EventHandle in_watch_;
  std::unique_ptr<Output> out_;
  std::unique_ptr<Output> err_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Makes a host pty for a terminal process, sends its master over the
// core's console socket (as runc would) and returns the slave, in raw mode
// (the guest's own pty does the terminal's work).
Result<UniqueFd> HostPtyForConsoleSocket(const std::string& console_socket);

}  // namespace hull::shim::vm
