#include "shim/backend/vm/guest_stdio.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"

namespace hull::shim::vm {

namespace pb = ::hull::agent::v1;

// One output stream: what the agent sent and the host has not taken yet.
struct GuestStdio::Output {
  bool is_stderr = false;
  UniqueFd fd;
  std::string pending;  // written on writability
  EventHandle watch;
  bool eof = false;
};

namespace {
constexpr size_t kChunk = 64 * 1024;
}  // namespace

GuestStdio::GuestStdio(EventLoop& loop, std::shared_ptr<AgentClient> agent, std::string id,
                       std::string exec_id, bool terminal, UniqueFd in, UniqueFd out, UniqueFd err)
    : loop_(loop),
      agent_(std::move(agent)),
      id_(std::move(id)),
      exec_id_(std::move(exec_id)),
      terminal_(terminal),
      in_(std::move(in)) {
  if (out.valid()) {
    out_ = std::make_unique<Output>();
    out_->fd = std::move(out);
  }
  if (err.valid()) {
    err_ = std::make_unique<Output>();
    err_->is_stderr = true;
    err_->fd = std::move(err);
  }
}

GuestStdio::~GuestStdio() {
  *alive_ = false;
}

void GuestStdio::Start() {
  for (Output* out : {out_.get(), err_.get()}) {
    if (out == nullptr) continue;
    SetNonBlocking(out->fd.get()).IgnoreError();
    Poll(out);
  }
  if (in_.valid()) {
    SetNonBlocking(in_.get()).IgnoreError();
    ReadStdin();
  }
}

// ---- host -> guest ----

void GuestStdio::ReadStdin() {
  char buf[kChunk];
  ssize_t n = ::read(in_.get(), buf, sizeof(buf));
  if (n > 0) {
    in_watch_.Reset();
    return SendStdin(std::string(buf, static_cast<size_t>(n)), 0);
  }
  if (n < 0 && errno == EINTR) return ReadStdin();
  if (n < 0 && errno == EAGAIN) {
    if (!in_watch_.active()) {
      in_watch_ = loop_.WatchFd(in_.get(), EPOLLIN, [this](uint32_t) { ReadStdin(); });
    }
    return;
  }
  // End of input (or a pty whose other side closed: EIO).
  in_watch_.Reset();
  CloseStdin();
}

void GuestStdio::SendStdin(std::string data, size_t offset) {
  pb::WriteStdinRequest req;
  req.set_container_id(id_);
  req.set_exec_id(exec_id_);
  req.set_data(data.substr(offset));
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::WriteStdinResponse>(
      "WriteStdin", req,
      [this, alive, data = std::move(data), offset](Result<pb::WriteStdinResponse> r) mutable {
        if (alive.expired()) return;
        if (!r) {
          in_.reset();  // the process is gone: its input goes nowhere
          return;
        }
        size_t done = offset + r->written();
        if (done < data.size()) return SendStdin(std::move(data), done);
        ReadStdin();
      });
}

void GuestStdio::CloseStdin() {
  in_.reset();
  pb::CloseStdinRequest req;
  req.set_container_id(id_);
  req.set_exec_id(exec_id_);
  agent_->Call<pb::CloseStdinResponse>("CloseStdin", req, [](Result<pb::CloseStdinResponse>) {});
}

// ---- guest -> host ----

void GuestStdio::Poll(Output* out) {
  pb::ReadStreamRequest req;
  req.set_container_id(id_);
  req.set_exec_id(exec_id_);
  req.set_max_bytes(kChunk);
  std::weak_ptr<bool> alive = alive_;
  agent_->Call<pb::ReadStreamResponse>(
      out->is_stderr ? "ReadStderr" : "ReadStdout", req,
      [this, alive, out](Result<pb::ReadStreamResponse> r) {
        if (alive.expired()) return;
        if (!r) {
          if (r.error().code() == Code::kDeadlineExceeded) return Poll(out);
          out->eof = true;  // the process or the VM is gone: end the stream
        } else {
          out->pending += r->data();
          out->eof = r->eof();
        }
        Flush(out);
      },
      kLongPoll);
}

void GuestStdio::Flush(Output* out) {
  while (!out->pending.empty()) {
    ssize_t n = ::write(out->fd.get(), out->pending.data(), out->pending.size());
    if (n > 0) {
      out->pending.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!out->watch.active()) {
        out->watch = loop_.WatchFd(out->fd.get(), EPOLLOUT, [this, out](uint32_t) { Flush(out); });
      }
      return;
    }
    out->pending.clear();  // the reader is gone: drop the output
    break;
  }
  out->watch.Reset();
  if (out->eof) {
    out->fd.reset();  // the core's copy ends here
    if (terminal_) {  // ... once no descriptor of the pty's slave is left
      in_watch_.Reset();
      in_.reset();
    }
    return;
  }
  Poll(out);
}

// ---- terminals ----

Result<UniqueFd> HostPtyForConsoleSocket(const std::string& console_socket) {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master.valid()) return ErrnoError("posix_openpt");
  if (::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0) {
    return ErrnoError("unlockpt");
  }
  char name[64];
  if (::ptsname_r(master.get(), name, sizeof(name)) != 0) return ErrnoError("ptsname");
  UniqueFd slave(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave.valid()) return ErrnoError("open", name);
  struct termios tio;
  if (::tcgetattr(slave.get(), &tio) == 0) {
    ::cfmakeraw(&tio);
    ::tcsetattr(slave.get(), TCSANOW, &tio);
  }

  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return ErrnoError("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (console_socket.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("console socket path too long: " + console_socket);
  }
  std::memcpy(addr.sun_path, console_socket.c_str(), console_socket.size());
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoError("connect", console_socket);
  }
  HULL_RETURN_IF_ERROR(SendWithFds(sock.get(), "p", {master.get()}, console_socket));
  return slave;
}

}  // namespace hull::shim::vm
