#include "shim/backend/vm/qmp_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/fd_passing.h"

namespace hull::shim::vm {

Result<std::unique_ptr<QmpClient>> QmpClient::Connect(EventLoop& loop, const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return InvalidArgumentError("QMP socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ErrnoError("socket", path);
  // A local socket connects at once or not at all (no EINPROGRESS).
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Status s = ErrnoError("connect", path);
    return UnavailableError(s.message());
  }
  std::unique_ptr<QmpClient> client(new QmpClient(loop, std::move(fd)));
  client->Execute("qmp_capabilities", nlohmann::json::object(), [](Result<nlohmann::json>) {});
  return client;
}

QmpClient::QmpClient(EventLoop& loop, UniqueFd fd) : loop_(loop), fd_(std::move(fd)) {
  watch_ = loop_.WatchFd(fd_.get(), kReadable, [this](uint32_t) { OnReadable(); });
}

QmpClient::~QmpClient() {
  *alive_ = false;
}

void QmpClient::Execute(const std::string& command, nlohmann::json arguments, Done done,
                        int pass_fd) {
  if (!fd_) {
    std::weak_ptr<bool> alive = alive_;
    loop_.Post([alive, done = std::move(done)] {
      if (!alive.expired()) done(UnavailableError("QMP: the connection is closed"));
    });
    return;
  }
  nlohmann::json request = {{"execute", command}};
  if (!arguments.empty()) request["arguments"] = std::move(arguments);
  std::string line = request.dump() + "\n";
  // A command is a few hundred bytes: the socket buffer takes it whole.
  Status sent = SendWithFds(fd_.get(), line,
                            pass_fd >= 0 ? std::vector<int>{pass_fd} : std::vector<int>{}, "QMP");
  if (!sent.ok()) {
    waiting_.push_back(std::move(done));
    return Fail(sent.WithContext("QMP send " + command));
  }
  waiting_.push_back(std::move(done));
}

void QmpClient::OnReadable() {
  char buf[4096];
  ssize_t n = ::read(fd_.get(), buf, sizeof(buf));
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return Fail(UnavailableError("QMP: QEMU closed the monitor"));
  in_.append(buf, static_cast<size_t>(n));
  std::weak_ptr<bool> alive = alive_;
  for (size_t nl; (nl = in_.find('\n')) != std::string::npos;) {
    std::string line = in_.substr(0, nl);
    in_.erase(0, nl + 1);
    auto reply = nlohmann::json::parse(line, nullptr, false);
    if (!reply.is_object()) continue;
    bool is_return = reply.contains("return");
    if (!is_return && !reply.contains("error")) continue;  // greeting, events
    if (waiting_.empty()) continue;
    Done done = std::move(waiting_.front());
    waiting_.erase(waiting_.begin());
    if (is_return) {
      done(std::move(reply["return"]));
    } else {
      std::string desc = reply["error"].is_object() ? reply["error"].value("desc", "") : "";
      done(InternalError("QMP: " + desc));
    }
    if (alive.expired()) return;
  }
}

void QmpClient::Fail(const Status& status) {
  watch_.Reset();
  fd_.reset();
  std::vector<Done> waiting;
  waiting.swap(waiting_);
  std::weak_ptr<bool> alive = alive_;
  for (Done& done : waiting) {
    done(status);
    if (alive.expired()) return;
  }
}

}  // namespace hull::shim::vm
