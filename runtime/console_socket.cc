// ConsoleSocket: see console_socket.h. The runtime side (runc's
// utils.SendFd) connects, sends the pty's name as data and the master as one
// SCM_RIGHTS descriptor in a single message, and closes.
#include "runtime/console_socket.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/fd_passing.h"

namespace hull::runtime {
namespace {

constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path) - 1;
constexpr std::string_view kNamePrefix = "/pty-";
constexpr std::string_view kNameSuffix = ".sock";
constexpr size_t kNameLength = kNamePrefix.size() + 8 + kNameSuffix.size();
constexpr int kBindAttempts = 8;
// runc refuses names this long, so one read always takes the whole message.
constexpr size_t kMaxMessage = 4096;

std::string RandomHex() {
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    // No entropy yet (early boot): uniqueness is all we need, and bind()
    // retries on a clash.
    r = static_cast<uint32_t>(::getpid()) * 2654435761u ^ static_cast<uint32_t>(::clock());
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", r);
  return buf;
}

// Where to make a private directory when `dir` is too long for sun_path.
std::string TempBase() {
  const char* tmp = std::getenv("TMPDIR");
  constexpr size_t kTempDirName = sizeof("/hull-pty-XXXXXX") - 1;
  if (tmp != nullptr && tmp[0] == '/' &&
      std::strlen(tmp) + kTempDirName + kNameLength <= kMaxSocketPath) {
    return tmp;
  }
  return "/tmp";
}

}  // namespace

Result<std::unique_ptr<ConsoleSocket>> ConsoleSocket::Create(const std::string& dir) {
  std::unique_ptr<ConsoleSocket> sock(new ConsoleSocket());
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base.empty() || base.size() + kNameLength > kMaxSocketPath) {
    std::string templ = TempBase() + "/hull-pty-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) return ErrnoError("mkdtemp", templ);
    sock->temp_dir_ = templ;
    base = templ;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ErrnoError("socket", "console socket");
  for (int attempt = 1;; ++attempt) {
    std::string path = base + std::string(kNamePrefix) + RandomHex() + std::string(kNameSuffix);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      sock->path_ = std::move(path);
      sock->file_present_ = true;
      break;
    }
    if (errno != EADDRINUSE || attempt == kBindAttempts) {
      return ErrnoError("bind console socket", path);
    }
  }
  // One runtime connects, once.
  if (::listen(fd.get(), 1) != 0) return ErrnoError("listen", sock->path_);
  sock->listener_ = std::move(fd);
  return sock;
}

ConsoleSocket::~ConsoleSocket() {
  RemoveFile();
}

void ConsoleSocket::RemoveFile() {
  if (file_present_) {
    ::unlink(path_.c_str());
    file_present_ = false;
  }
  if (!temp_dir_.empty()) {
    ::rmdir(temp_dir_.c_str());
    temp_dir_.clear();
  }
}

void ConsoleSocket::Receive(EventLoop& loop, std::function<void(Result<UniqueFd>)> on_master) {
  loop_ = &loop;
  on_master_ = std::move(on_master);
  watch_ = loop.WatchFd(listener_.get(), kReadable, [this](uint32_t) { OnAcceptable(); });
}

void ConsoleSocket::OnAcceptable() {
  UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!conn) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
      return;
    }
    Finish(ErrnoError("accept on console socket", path_));
    return;
  }
  // The runtime is connected: nobody else needs to find the socket now.
  watch_.Reset();
  listener_.reset();
  RemoveFile();
  conn_ = std::move(conn);
  watch_ = loop_->WatchFd(conn_.get(), kReadable, [this](uint32_t) { OnMessage(); });
}

void ConsoleSocket::OnMessage() {
  char data[kMaxMessage];
  iovec iov{data, sizeof data};
  // Room for more descriptors than expected, so extras are received (and
  // closed) rather than silently dropped by the kernel.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(conn_.get(), &msg, MSG_CMSG_CLOEXEC);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n < 0) {
    Finish(ErrnoError("receive on console socket", path_));
    return;
  }
  std::vector<UniqueFd> fds = TakeReceivedFds(msg);
  if (fds.empty()) {
    Finish(UnknownError(n == 0 ? "runtime closed the console socket without sending a terminal"
                               : "console socket: message without a descriptor"));
    return;
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() != 1) {
    Finish(UnknownError("console socket: expected one descriptor, got " +
                        std::to_string(fds.size()) + " or more"));
    return;
  }
  if (!::isatty(fds[0].get())) {
    Finish(UnknownError("console socket: the descriptor received is not a terminal"));
    return;
  }
  Finish(std::move(fds[0]));
}

void ConsoleSocket::Finish(Result<UniqueFd> result) {
  watch_.Reset();
  conn_.reset();
  listener_.reset();
  RemoveFile();
  std::function<void(Result<UniqueFd>)> on_master = std::exchange(on_master_, nullptr);
  on_master(std::move(result));  // may destroy us: nothing after this
}

}  // namespace hull::runtime
