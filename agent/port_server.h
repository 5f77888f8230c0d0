// PortServer: serves a ttrpc::Server on one character device that a single
// host-side client connects to and disconnects from (a virtio-serial port;
// a pty master in tests). The device stays open for the agent's life. While
// no host is attached the port reports POLLHUP (and read() returns 0 at
// once), so it cannot be watched for readiness: PortServer polls it on a
// short timer until the hangup clears, then hands the server a fresh
// connection (fresh framing) over a dup of the device. When that connection
// ends (the host closed its socket: EOF), it goes back to polling.
// Loop thread only; owns the device fd, not the Server.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "ttrpc/server.h"

namespace hull::agent {

class PortServer {
 public:
  // How often an unattached port is checked for a host.
  static constexpr std::chrono::milliseconds kAttachPoll{10};

  PortServer(EventLoop& loop, ttrpc::Server& server, UniqueFd port);
  PortServer(const PortServer&) = delete;
  PortServer& operator=(const PortServer&) = delete;

  // Starts waiting for a host (serving at once if one is attached).
  void Start();

  bool attached() const { return attached_; }
  // How many host connections have been served (the current one included).
  uint64_t connections() const { return connections_; }
  // Told each time a host attaches or detaches (for the log).
  void set_on_change(std::function<void(bool attached)> cb) { on_change_ = std::move(cb); }

 private:
  void CheckForHost();
  void Attach();
  void OnDetached();

  EventLoop& loop_;
  ttrpc::Server& server_;
  UniqueFd port_;
  bool attached_ = false;
  uint64_t connections_ = 0;
  EventHandle poll_timer_;
  std::function<void(bool)> on_change_;
};

}  // namespace hull::agent
