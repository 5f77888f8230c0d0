#include "base/spawner.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <deque>

#include "base/spawner_wire.h"

namespace hull {
namespace {

using spawner_wire::Reader;
using spawner_wire::Writer;

// The spawner's side: one request at a time, exits queued in memory and
// written as the server reads them, so a server busy in a call never makes
// the spawner block on a full exits channel (and the spawner never blocks
// the server's call on one).
class SpawnerMain {
 public:
  SpawnerMain(int requests, int exits, std::vector<SpawnerEntry>& entries, SpawnCheck& check)
      : requests_(requests), exits_(exits), entries_(entries), check_(check) {}

  [[noreturn]] void Run() {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, nullptr);
    UniqueFd sigfd(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd || !SetNonBlocking(exits_).ok()) _exit(2);
    Reap();  // anything that exited before SIGCHLD was blocked
    for (;;) {
      pollfd fds[3] = {{requests_, POLLIN, 0},
                       {sigfd.get(), POLLIN, 0},
                       {exits_, static_cast<short>(pending_.empty() ? 0 : POLLOUT), 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        _exit(2);
      }
      if (fds[1].revents) {
        signalfd_siginfo info;
        while (::read(sigfd.get(), &info, sizeof info) > 0) {
        }
        Reap();
      }
      if (!pending_.empty()) Flush();
      if (fds[0].revents) Serve();
    }
  }

 private:
  void Reap() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      pending_.push_back({pid, status});
    }
    Flush();
  }

  void Flush() {
    while (!pending_.empty()) {
      Writer w;
      w.I32(pending_.front().pid);
      w.I32(pending_.front().wait_status);
      Status sent = spawner_wire::SendMessage(exits_, w.Take(), {});
      if (!sent.ok()) {
        if (sent.code() == Code::kUnavailable) return;  // full: on POLLOUT
        _exit(0);                                       // the server is gone
      }
      pending_.pop_front();
    }
  }

  void Serve() {
    Result<spawner_wire::Received> got = spawner_wire::ReceiveMessage(requests_);
    // EOF: the server closed its end (it is exiting or died). The children
    // live on, reparented, exactly as when an unconfined server exits.
    if (!got || got->eof) _exit(0);
    Reader r(got->message);
    uint8_t kind = 0;
    Status sent;
    if (r.U8(kind) && kind == spawner_wire::kCall) {
      Result<SpawnerReply> reply = HandleCall(r, got->fds);
      std::vector<int> fds;
      if (reply) {
        for (const UniqueFd& fd : reply->fds) fds.push_back(fd.get());
      }
      sent = spawner_wire::SendMessage(
          requests_,
          spawner_wire::EncodeCallReply(reply ? Result<std::string>(std::move(reply->data))
                                              : Result<std::string>(reply.error())),
          fds);
    } else {
      sent = spawner_wire::SendMessage(requests_,
                                       spawner_wire::EncodeReply(Handle(kind, r, got->fds)), {});
    }
    if (!sent.ok()) _exit(0);
  }

  Result<SpawnerReply> HandleCall(Reader& r, std::vector<UniqueFd>& fds) {
    uint32_t index = 0;
    std::string payload;
    if (!r.U32(index) || !r.Str(payload) || !r.done()) {
      return InvalidArgumentError("spawner: malformed request");
    }
    if (index >= entries_.size() || !entries_[index].call) {
      return InvalidArgumentError("spawner: no such entry");
    }
    return entries_[index].call(payload, fds);
  }

  Result<int32_t> Handle(uint8_t kind, Reader& r, std::vector<UniqueFd>& fds) {
    if (kind == 0) return InvalidArgumentError("spawner: empty request");
    if (kind == spawner_wire::kSpawn) {
      HULL_ASSIGN_OR_RETURN(SpawnOptions options, spawner_wire::DecodeSpawn(r, fds));
      if (check_) HULL_RETURN_IF_ERROR(check_(options));
      return Spawn(options);
    }
    uint32_t index = 0;
    std::string payload;
    if (kind != spawner_wire::kEntry || !r.U32(index) || !r.Str(payload) || !r.done()) {
      return InvalidArgumentError("spawner: malformed request");
    }
    if (index >= entries_.size() || !entries_[index].run) {
      return InvalidArgumentError("spawner: no such entry");
    }
    return entries_[index].run(payload, fds);
  }

  int requests_;
  int exits_;
  std::vector<SpawnerEntry>& entries_;
  SpawnCheck& check_;
  std::deque<SpawnerExit> pending_;
};

}  // namespace

Result<std::unique_ptr<SpawnerClient>> SpawnerClient::Start(std::vector<SpawnerEntry> entries,
                                                            std::vector<int> keep_fds,
                                                            SpawnCheck check) {
  int req[2], ex[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, req) != 0) {
    return ErrnoError("socketpair", "spawner requests");
  }
  UniqueFd req0(req[0]), req1(req[1]);
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ex) != 0) {
    return ErrnoError("socketpair", "spawner exits");
  }
  UniqueFd ex0(ex[0]), ex1(ex[1]);

  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork", "spawner");
  if (pid == 0) {
    ::prctl(PR_SET_NAME, "hull-spawner");
    // The parent of everything it starts, and of the container processes
    // runc daemonizes.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    // Keep stdio, the two channel ends and the caller's few; close the
    // server's listening socket and everything else inherited.
    std::vector<int> keep = {0, 1, 2, req1.get(), ex1.get()};
    keep.insert(keep.end(), keep_fds.begin(), keep_fds.end());
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    unsigned int next = 0;
    for (int k : keep) {
      if (k < 0) continue;
      if (static_cast<unsigned int>(k) > next) ::close_range(next, k - 1, 0);
      next = static_cast<unsigned int>(k) + 1;
    }
    ::close_range(next, ~0U, 0);
    (void)req0.release();
    (void)ex0.release();
    SpawnerMain(req1.get(), ex1.get(), entries, check).Run();
  }
  std::unique_ptr<SpawnerClient> client(new SpawnerClient());
  client->pid_ = pid;
  client->requests_ = std::move(req0);
  client->exits_ = std::move(ex0);
  HULL_RETURN_IF_ERROR(SetNonBlocking(client->exits_.get()));
  return client;
}

SpawnerClient::~SpawnerClient() = default;  // EOF on requests ends the spawner

Result<spawner_wire::Received> SpawnerClient::Request(std::string request,
                                                      const std::vector<int>& fds) {
  HULL_RETURN_IF_ERROR(spawner_wire::SendMessage(requests_.get(), request, fds));
  HULL_ASSIGN_OR_RETURN(spawner_wire::Received got, spawner_wire::ReceiveMessage(requests_.get()));
  if (got.eof) return UnavailableError("spawner: exited");
  return got;
}

Result<pid_t> SpawnerClient::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgumentError("spawn: empty argv");
  std::vector<int> fds;
  for (const auto& [child_fd, parent_fd] : options.fds) fds.push_back(parent_fd);
  HULL_ASSIGN_OR_RETURN(spawner_wire::Received got,
                        Request(spawner_wire::EncodeSpawn(options), fds));
  return spawner_wire::DecodeReply(got.message);
}

namespace {

std::string EntryRequest(spawner_wire::RequestKind kind, uint32_t index, std::string_view payload) {
  Writer w;
  w.U8(kind);
  w.U32(index);
  w.Str(payload);
  return w.Take();
}

}  // namespace

Result<pid_t> SpawnerClient::Run(uint32_t index, std::string_view payload,
                                 const std::vector<int>& fds) {
  HULL_ASSIGN_OR_RETURN(spawner_wire::Received got,
                        Request(EntryRequest(spawner_wire::kEntry, index, payload), fds));
  return spawner_wire::DecodeReply(got.message);
}

Result<SpawnerReply> SpawnerClient::Call(uint32_t index, std::string_view payload,
                                         const std::vector<int>& fds) {
  HULL_ASSIGN_OR_RETURN(spawner_wire::Received got,
                        Request(EntryRequest(spawner_wire::kCall, index, payload), fds));
  HULL_ASSIGN_OR_RETURN(std::string data, spawner_wire::DecodeCallReply(got.message));
  return SpawnerReply{.data = std::move(data), .fds = std::move(got.fds)};
}

Status SpawnerClient::ReadExits(std::vector<SpawnerExit>& exits) {
  for (;;) {
    HULL_ASSIGN_OR_RETURN(spawner_wire::Received got, spawner_wire::ReceiveMessage(exits_.get()));
    if (got.would_block) return Status::Ok();
    if (got.eof) return UnavailableError("spawner: exited");
    Reader r(got.message);
    SpawnerExit exit;
    if (!r.I32(exit.pid) || !r.I32(exit.wait_status) || !r.done()) {
      return InternalError("spawner: malformed exit");
    }
    exits.push_back(exit);
  }
}

}  // namespace hull
