#include "ttrpc/server.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "ttrpc/server_connection_internal.h"
#include "ttrpc/service_table_internal.h"
#include "ttrpc/unix_socket_internal.h"

namespace hull::ttrpc {
namespace {

// After accept() runs out of descriptors, the listener stays readable; wait a
// little instead of spinning on it.
constexpr std::chrono::milliseconds kAcceptBackoff(100);
// Bound on accepts per readiness event, so a connection storm cannot starve
// the calls already being served.
constexpr int kMaxAcceptsPerEvent = 32;
// After the grace period, how long the Unavailable replies get to be written
// before the remaining connections are cut.
constexpr std::chrono::seconds kFinalFlushTimeout(1);
// Evictions come in floods; one report per this long says how many.
constexpr std::chrono::seconds kEvictionReportInterval(10);
// The connection cap never goes below this, however low RLIMIT_NOFILE is.
constexpr size_t kMinConnectionCap = 4;

size_t ConnectionCap(size_t configured) {
  size_t cap = configured == 0 ? std::numeric_limits<size_t>::max() : configured;
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    cap = std::min<size_t>(cap, std::max<size_t>(kMinConnectionCap, nofile.rlim_cur / 2));
  }
  return cap;
}

}  // namespace

Server::Server(EventLoop& loop, ServerOptions options)
    : loop_(loop),
      options_(std::move(options)),
      services_(std::make_unique<internal::ServiceTable>()) {}

size_t Server::connection_cap() const {
  return ConnectionCap(options_.max_connections);
}

Server::~Server() {
  listeners_.clear();
  for (auto& [raw, conn] : connections_) conn->Close();
  connections_.clear();
}

void Server::Register(std::string service, std::string method, Handler handler) {
  services_->Add(std::move(service), std::move(method), std::move(handler));
}

Status Server::Listen(std::string_view address) {
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, internal::ListenUnix(address, options_.listen_backlog));
  return Serve(std::move(fd));
}

Status Server::Serve(UniqueFd listener) {
  if (shutting_down_) return UnavailableError("ttrpc: server shutting down");
  HULL_RETURN_IF_ERROR(internal::PrepareListener(listener.get()));
  auto entry = std::make_unique<Listener>();
  entry->fd = std::move(listener);
  WatchListener(entry.get());
  listeners_.push_back(std::move(entry));
  return Status::Ok();
}

void Server::WatchListener(Listener* listener) {
  listener->watch = loop_.WatchFd(listener->fd.get(), kReadable,
                                  [this, listener](uint32_t) { OnAcceptable(listener); });
}

void Server::OnAcceptable(Listener* listener) {
  for (int i = 0; i < kMaxAcceptsPerEvent; ++i) {
    UniqueFd fd(::accept4(listener->fd.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd) {
      AddConnection(std::move(fd));
      continue;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    // Out of descriptors: an idle connection makes room for the new one
    // (containerd reconnecting must get in).
    if ((err == EMFILE || err == ENFILE) && EvictIdlest("out of descriptors", true)) continue;
    ReportError(ErrnoError(err, "ttrpc: accept"));
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
      listener->watch.Reset();
      listener->backoff = loop_.AddTimer(kAcceptBackoff, [this, listener] {
        listener->backoff.Reset();
        WatchListener(listener);
      });
    }
    return;
  }
}

Status Server::ServeConnection(UniqueFd connection, ConnectionOptions options) {
  if (shutting_down_) return UnavailableError("ttrpc: server shutting down");
  AddConnection(std::move(connection), std::move(options));
  return Status::Ok();
}

void Server::AddConnection(UniqueFd fd, ConnectionOptions options) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    ReportError(ErrnoError("ttrpc: fstat connection"));
    return;
  }
  if (options_.require_same_user && S_ISSOCK(st.st_mode)) {
    // Checked before any byte is read, and refused without a reply, like
    // Go's UnixSocketRequireSameUser.
    Result<internal::PeerCredentials> peer = internal::GetPeerCredentials(fd.get());
    if (!peer) {
      ReportError(peer.error().WithContext("ttrpc: invalid credentials"));
      return;
    }
    if (peer->uid != ::geteuid() || peer->gid != ::getegid()) {
      ReportError(PermissionDeniedError(
          "ttrpc: invalid credentials: peer pid " + std::to_string(peer->pid) + " uid " +
          std::to_string(peer->uid) + " gid " + std::to_string(peer->gid)));
      return;
    }
  }
  if (size_t cap = connection_cap(); connections_.size() >= cap) {
    EvictIdlest("connection cap " + std::to_string(cap) + " reached", false);
  }
  auto conn = internal::ServerConnection::Create(
      loop_, std::move(fd), *services_,
      {.max_calls = options_.max_calls_per_connection,
       .partial_frame_deadline = options_.partial_frame_deadline},
      activity_,
      [this](internal::ServerConnection* closed, const Status& why) {
        OnConnectionClosed(closed, why);
      },
      [this](const Status& limit) { ReportError(limit); });
  if (!conn) {
    ReportError(conn.error());
    return;
  }
  internal::ServerConnection* raw = conn->get();
  raw->set_restart_session_on_stream_one(options.restart_session_on_stream_one);
  connections_.emplace(raw, std::move(*conn));
  if (options.on_closed) closed_callbacks_.emplace(raw, std::move(options.on_closed));
}

void Server::OnConnectionClosed(internal::ServerConnection* conn, const Status& why) {
  if (why.code() == Code::kDeadlineExceeded) ReportError(why);  // the partial-frame deadline
  connections_.erase(conn);
  std::function<void()> on_closed;
  if (auto it = closed_callbacks_.find(conn); it != closed_callbacks_.end()) {
    on_closed = std::move(it->second);
    closed_callbacks_.erase(it);
  }
  MaybeFinishShutdown();
  if (on_closed) on_closed();
}

bool Server::EvictIdlest(std::string_view reason, bool only_without_calls) {
  // Idlest first: connections that never sent a frame (a flood's; never
  // containerd's, which has made calls) by age, then the least recently
  // active. Linear: the cap keeps the set small, and this runs only at it.
  auto idler = [](const internal::ServerConnection* a, const internal::ServerConnection* b) {
    if (a->spoke() != b->spoke()) return !a->spoke();
    return a->activity_seq() < b->activity_seq();
  };
  internal::ServerConnection* idle = nullptr;  // idlest without calls in flight
  internal::ServerConnection* any = nullptr;   // idlest
  for (const auto& [raw, conn] : connections_) {
    if (any == nullptr || idler(raw, any)) any = raw;
    if (raw->calls_in_flight() == 0 && (idle == nullptr || idler(raw, idle))) idle = raw;
  }
  internal::ServerConnection* victim = idle != nullptr || only_without_calls ? idle : any;
  if (victim == nullptr) return false;
  auto idle_for =
      std::chrono::duration_cast<std::chrono::milliseconds>(loop_.Now() - victim->last_active());
  size_t calls = victim->calls_in_flight();
  victim->Close();
  connections_.erase(victim);
  ++evictions_;
  ++evictions_unreported_;
  EventLoop::Clock::time_point now = loop_.Now();
  if (!last_eviction_report_ || now - *last_eviction_report_ >= kEvictionReportInterval) {
    last_eviction_report_ = now;
    ReportError(ResourceExhaustedError(
        "ttrpc: " + std::string(reason) + ": closed the idlest connection (idle " +
        std::to_string(idle_for.count()) + " ms, " + std::to_string(calls) + " calls in flight); " +
        std::to_string(evictions_unreported_) +
        " connections closed to make room since the last report"));
    evictions_unreported_ = 0;
  }
  return true;
}

void Server::Shutdown(std::function<void()> done) {
  if (done) shutdown_done_.push_back(std::move(done));
  if (!shutting_down_) {
    shutting_down_ = true;
    listeners_.clear();
    for (auto& [raw, conn] : connections_) conn->Drain();
    shutdown_timer_ = loop_.AddTimer(options_.shutdown_grace, [this] { OnShutdownGraceExpired(); });
  }
  MaybeFinishShutdown();
}

void Server::OnShutdownGraceExpired() {
  // Connections close themselves (on a later turn) once these replies are out.
  for (auto& [raw, conn] : connections_) {
    conn->FailAll(UnavailableError("ttrpc: server shutting down"));
  }
  shutdown_timer_ = loop_.AddTimer(kFinalFlushTimeout, [this] {
    // Peers that would not take their replies are cut off.
    for (auto& [raw, conn] : connections_) conn->Close();
    connections_.clear();
    MaybeFinishShutdown();
  });
}

void Server::MaybeFinishShutdown() {
  if (!shutting_down_ || !connections_.empty() || shutdown_done_.empty()) return;
  shutdown_timer_.Reset();
  for (auto& done : std::exchange(shutdown_done_, {})) loop_.Post(std::move(done));
}

void Server::ReportError(const Status& status) const {
  if (options_.on_error) options_.on_error(status);
}

}  // namespace hull::ttrpc
