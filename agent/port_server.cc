#include "agent/port_server.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace hull::agent {

PortServer::PortServer(EventLoop& loop, ttrpc::Server& server, UniqueFd port)
    : loop_(loop), server_(server), port_(std::move(port)) {}

void PortServer::Start() {
  CheckForHost();
}

void PortServer::CheckForHost() {
  poll_timer_.Reset();
  pollfd p{.fd = port_.get(), .events = POLLIN, .revents = 0};
  int n = ::poll(&p, 1, 0);
  if (n >= 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) == 0) {
    Attach();
    return;
  }
  poll_timer_ = loop_.AddTimer(kAttachPoll, [this] { CheckForHost(); });
}

void PortServer::Attach() {
  UniqueFd conn(::fcntl(port_.get(), F_DUPFD_CLOEXEC, 0));
  // A host may detach and attach again before the hangup is read (the port
  // then never reads EOF): its first call, on stream 1, starts a new session.
  Status served =
      conn ? server_.ServeConnection(std::move(conn), {.on_closed = [this] { OnDetached(); },
                                                       .restart_session_on_stream_one = true})
           : ErrnoError("dup", "agent port");
  if (!served.ok()) {
    // The server is shutting down or out of descriptors: try again later.
    poll_timer_ = loop_.AddTimer(kAttachPoll, [this] { CheckForHost(); });
    return;
  }
  attached_ = true;
  ++connections_;
  if (on_change_) on_change_(true);
}

void PortServer::OnDetached() {
  attached_ = false;
  if (on_change_) on_change_(false);
  // A connection that ended with the host still attached (a framing error,
  // say) is replaced at once; otherwise this polls until the host is back.
  CheckForHost();
}

}  // namespace hull::agent
