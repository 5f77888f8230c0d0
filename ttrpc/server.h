// ttrpc::Server: serves unary ttrpc methods on unix sockets, on the loop.
// Many connections, many calls in flight per connection; a handler may answer
// later through its Responder, and replies go out in completion order.
// The Server owns its listeners and connections; it must outlive the loop
// callbacks it registered, so destroy it outside its own handlers (use
// Shutdown, whose `done` runs on a loop turn of its own). Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "ttrpc/call.h"

namespace hull::ttrpc {

namespace internal {
class ServerConnection;
class ServiceTable;
}  // namespace internal

// For Server::ServeConnection.
struct ConnectionOptions {
  // Runs once when this connection has ended (peer EOF, error, shutdown), on
  // a loop turn of its own; it must not destroy the Server. It does not run
  // when the Server is destroyed.
  std::function<void()> on_closed;
  // For a device that one peer after another attaches to (a virtio-serial
  // port): a Request on stream 1 after other streams means a new peer has
  // taken over without the old one's hangup being seen (it attached again
  // before the server read the hangup). The old session's calls are dropped
  // without replies, their late answers discarded, and stream ids count
  // afresh. Off: such a Request is InvalidArgument "StreamID cannot be
  // re-used", as Go answers.
  bool restart_session_on_stream_one = false;
};

struct ServerOptions {
  // Close, with no reply, connections whose peer's effective uid or gid (by
  // SO_PEERCRED) differ from this process's, as containerd's shims do.
  bool require_same_user = true;
  // How long Shutdown waits for calls in flight before failing them with
  // Unavailable.
  std::chrono::nanoseconds shutdown_grace = std::chrono::seconds(5);
  int listen_backlog = 64;
  // Connections served at once; 0: no cap. The cap in force is the lower of
  // this and half the process's RLIMIT_NOFILE (read at each accept), so a
  // connection flood cannot take the descriptors the shim needs for its
  // work. At the cap a new connection is accepted and the idlest connection
  // with no call in flight goes (else the idlest): first those that never
  // sent a frame, oldest first, then the least recently active. Containerd
  // is never refused, and its connection, which has made calls, outlasts
  // any number of silent ones.
  size_t max_connections = 256;
  // Calls in flight on one connection; past it a Request is answered
  // ResourceExhausted at once. 0: no cap.
  size_t max_calls_per_connection = 4096;
  // A frame whose first byte has arrived must arrive whole within this, or
  // its connection is closed (half frames, bodies that never come). 0: none.
  std::chrono::nanoseconds partial_frame_deadline = std::chrono::seconds(10);
  // Told about what the server handles by itself but the owner may want to
  // log: refused peers, failing accept(), a limit hit (rate-limited: at
  // most one eviction report per 10 s, counting those left out). Optional.
  std::function<void(const Status&)> on_error;
};

class Server {
 public:
  explicit Server(EventLoop& loop, ServerOptions options = {});
  // Closes every listener and connection now; no callback follows.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // `service` is the full proto name ("containerd.task.v2.Task"), `method`
  // the bare rpc name ("Create"). Registering again replaces the handler.
  void Register(std::string service, std::string method, Handler handler);

  // Typed form: the payload is parsed into Req (InvalidArgument if it does not
  // parse) and the reply serialized from Resp. Template arguments are given
  // explicitly: RegisterUnary<CreateTaskRequest, CreateTaskResponse>(...).
  template <LiteMessage Req, LiteMessage Resp>
  void RegisterUnary(std::string service, std::string method,
                     std::function<void(const CallContext&, Req, TypedResponder<Resp>)> handler);

  // Binds and listens on a unix socket (a path, `unix://path`, or `@abstract`).
  // The socket file is left in place when the server stops; its owner removes it.
  Status Listen(std::string_view address);
  // Accepts on an inherited listening socket (the shim's fd 3); made
  // nonblocking and close-on-exec.
  Status Serve(UniqueFd listener);
  // Serves one already connected socket (a socketpair end, an accepted fd),
  // or a character device or pipe read and written with read()/write() (a
  // virtio-serial port, a pty). The peer-credential check applies to sockets
  // as to accepted connections; a device has no peer, its file permissions
  // are the check.
  Status ServeConnection(UniqueFd connection, ConnectionOptions options = {});

  // Stops accepting; lets calls in flight finish (and keeps serving their
  // connections meanwhile, as Go does); closes each connection once it has
  // no call in flight and its replies are written. After `shutdown_grace`
  // the calls still in flight are failed with Unavailable. `done` runs on a
  // later loop turn once every connection is closed. May be called again;
  // each `done` runs once.
  void Shutdown(std::function<void()> done);

  size_t connection_count() const { return connections_.size(); }
  // max_connections as in force now (see ServerOptions).
  size_t connection_cap() const;
  // Connections closed to make room, since construction.
  uint64_t evictions() const { return evictions_; }

 private:
  struct Listener {
    UniqueFd fd;
    EventHandle watch;
    EventHandle backoff;  // re-arms `watch` after running out of descriptors
  };

  void WatchListener(Listener* listener);
  void OnAcceptable(Listener* listener);
  void AddConnection(UniqueFd fd, ConnectionOptions options = {});
  void OnConnectionClosed(internal::ServerConnection* conn, const Status& why);
  // Closes the idlest connection (see ServerOptions::max_connections); false
  // if there is none (or, with `only_without_calls`, none without calls).
  bool EvictIdlest(std::string_view reason, bool only_without_calls);
  void OnShutdownGraceExpired();
  void MaybeFinishShutdown();
  void ReportError(const Status& status) const;

  EventLoop& loop_;
  ServerOptions options_;
  std::unique_ptr<internal::ServiceTable> services_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unordered_map<internal::ServerConnection*, std::shared_ptr<internal::ServerConnection>>
      connections_;
  // ServeConnection's on_closed, by connection.
  std::unordered_map<internal::ServerConnection*, std::function<void()>> closed_callbacks_;
  bool shutting_down_ = false;
  std::vector<std::function<void()>> shutdown_done_;
  EventHandle shutdown_timer_;
  std::shared_ptr<uint64_t> activity_ = std::make_shared<uint64_t>(0);
  uint64_t evictions_ = 0;
  uint64_t evictions_unreported_ = 0;
  std::optional<EventLoop::Clock::time_point> last_eviction_report_;
};

template <LiteMessage Req, LiteMessage Resp>
void Server::RegisterUnary(
    std::string service, std::string method,
    std::function<void(const CallContext&, Req, TypedResponder<Resp>)> handler) {
  Register(std::move(service), std::move(method),
           [handler = std::move(handler)](const CallContext& context, std::string payload,
                                          Responder responder) {
             Req request;
             if (!request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
               responder.Fail(InvalidArgumentError("ttrpc: error unmarshalling payload for " +
                                                   std::string(context.method)));
               return;
             }
             handler(context, std::move(request), TypedResponder<Resp>(std::move(responder)));
           });
}

}  // namespace hull::ttrpc
