#include "base/spawner_wire.h"

#include <sys/socket.h>

#include <cstring>

#include "base/fd_passing.h"

namespace hull::spawner_wire {

bool Reader::U8(uint8_t& v) {
  if (in_.size() < 1) return false;
  v = static_cast<uint8_t>(in_[0]);
  in_.remove_prefix(1);
  return true;
}

bool Reader::U32(uint32_t& v) {
  if (in_.size() < sizeof v) return false;
  std::memcpy(&v, in_.data(), sizeof v);
  in_.remove_prefix(sizeof v);
  return true;
}

bool Reader::I32(int32_t& v) {
  if (in_.size() < sizeof v) return false;
  std::memcpy(&v, in_.data(), sizeof v);
  in_.remove_prefix(sizeof v);
  return true;
}

bool Reader::Str(std::string& v) {
  uint32_t n = 0;
  if (!U32(n) || in_.size() < n) return false;
  v.assign(in_.data(), n);
  in_.remove_prefix(n);
  return true;
}

namespace {

void Strings(Writer& w, const std::vector<std::string>& list) {
  w.U32(static_cast<uint32_t>(list.size()));
  for (const auto& s : list) w.Str(s);
}

bool Strings(Reader& r, std::vector<std::string>& list) {
  uint32_t n = 0;
  if (!r.U32(n) || n > kMaxMessage) return false;
  list.resize(n);
  for (auto& s : list) {
    if (!r.Str(s)) return false;
  }
  return true;
}

}  // namespace

std::string EncodeSpawn(const SpawnOptions& options) {
  Writer w;
  w.U8(kSpawn);
  Strings(w, options.argv);
  w.U8(options.env.has_value());
  if (options.env) Strings(w, *options.env);
  w.Str(options.cwd);
  w.U32(static_cast<uint32_t>(options.fds.size()));
  for (const auto& [child_fd, parent_fd] : options.fds) w.I32(child_fd);
  w.U8(options.new_process_group);
  w.U8(options.new_session);
  w.I32(options.parent_death_signal);
  w.U8(options.jail.has_value());
  if (options.jail) {
    Strings(w, options.jail->hide);
    w.U32(static_cast<uint32_t>(options.jail->capabilities));
    w.U32(static_cast<uint32_t>(options.jail->capabilities >> 32));
    w.U32(options.jail->uid);
    w.U32(options.jail->gid);
    w.U32(static_cast<uint32_t>(options.jail->groups.size()));
    for (gid_t group : options.jail->groups) w.U32(group);
    w.Str(std::string(reinterpret_cast<const char*>(options.jail->seccomp.data()),
                      options.jail->seccomp.size() * sizeof(sock_filter)));
    w.Str(options.jail->root);
    w.U32(static_cast<uint32_t>(options.jail->binds.size()));
    for (const SpawnJail::Bind& bind : options.jail->binds) {
      w.Str(bind.path);
      w.U8(bind.writable);
    }
    w.U32(static_cast<uint32_t>(options.jail->links.size()));
    for (const auto& [path, target] : options.jail->links) {
      w.Str(path);
      w.Str(target);
    }
  }
  return w.Take();
}

Result<SpawnOptions> DecodeSpawn(Reader& r, const std::vector<UniqueFd>& fds) {
  SpawnOptions options;
  uint8_t has_env = 0, group = 0, session = 0;
  uint32_t nfds = 0;
  const auto bad = [] { return InvalidArgumentError("spawner: malformed spawn request"); };
  if (!Strings(r, options.argv) || !r.U8(has_env)) return bad();
  if (has_env) {
    options.env.emplace();
    if (!Strings(r, *options.env)) return bad();
  }
  if (!r.Str(options.cwd) || !r.U32(nfds) || nfds != fds.size()) return bad();
  for (uint32_t i = 0; i < nfds; ++i) {
    int32_t child_fd = 0;
    if (!r.I32(child_fd) || child_fd < 0 || child_fd > 1024) return bad();
    options.fds.emplace_back(child_fd, fds[i].get());
  }
  int32_t death = 0;
  uint8_t has_jail = 0;
  if (!r.U8(group) || !r.U8(session) || !r.I32(death) || !r.U8(has_jail)) return bad();
  if (has_jail) {
    SpawnJail jail;
    uint32_t low = 0, high = 0, uid = 0, gid = 0, ngroups = 0;
    if (!Strings(r, jail.hide) || !r.U32(low) || !r.U32(high) || !r.U32(uid) || !r.U32(gid) ||
        !r.U32(ngroups) || ngroups > 16) {
      return bad();
    }
    for (uint32_t i = 0; i < ngroups; ++i) {
      uint32_t group = 0;
      if (!r.U32(group)) return bad();
      jail.groups.push_back(group);
    }
    std::string filter;
    if (!r.Str(filter) || filter.size() % sizeof(sock_filter) != 0 ||
        filter.size() / sizeof(sock_filter) > BPF_MAXINSNS) {
      return bad();
    }
    jail.seccomp.resize(filter.size() / sizeof(sock_filter));
    if (!filter.empty()) std::memcpy(jail.seccomp.data(), filter.data(), filter.size());
    uint32_t nbinds = 0, nlinks = 0;
    if (!r.Str(jail.root) || !r.U32(nbinds) || nbinds > 64) return bad();
    for (uint32_t i = 0; i < nbinds; ++i) {
      SpawnJail::Bind bind;
      uint8_t writable = 0;
      if (!r.Str(bind.path) || !r.U8(writable) || bind.path.empty() || bind.path[0] != '/') {
        return bad();
      }
      bind.writable = writable != 0;
      jail.binds.push_back(std::move(bind));
    }
    if (!r.U32(nlinks) || nlinks > 16) return bad();
    for (uint32_t i = 0; i < nlinks; ++i) {
      std::string path, target;
      if (!r.Str(path) || !r.Str(target) || path.empty() || path[0] != '/') return bad();
      jail.links.emplace_back(std::move(path), std::move(target));
    }
    if (!jail.root.empty() && jail.root[0] != '/') return bad();
    jail.uid = uid;
    jail.gid = gid;
    for (const std::string& dir : jail.hide) {
      if (dir.empty() || dir[0] != '/') return bad();
    }
    jail.capabilities = (uint64_t{high} << 32) | low;
    options.jail = std::move(jail);
  }
  if (!r.done()) return bad();
  if (death < 0 || death >= 65) return bad();
  options.new_process_group = group != 0;
  options.new_session = session != 0;
  options.parent_death_signal = death;
  return options;
}

namespace {

void Error(Writer& w, const Status& error) {
  w.U32(static_cast<uint32_t>(error.code()));
  w.Str(error.message());
}

Status ReadError(Reader& r) {
  uint32_t code = 0;
  std::string text;
  if (!r.U32(code) || !r.Str(text) || !r.done() ||
      code > static_cast<uint32_t>(Code::kUnauthenticated)) {
    return InternalError("spawner: malformed reply");
  }
  return Status(static_cast<Code>(code), std::move(text));
}

}  // namespace

std::string EncodeReply(const Result<int32_t>& result) {
  Writer w;
  w.U8(result.has_value());
  if (result) {
    w.I32(*result);
  } else {
    Error(w, result.error());
  }
  return w.Take();
}

Result<int32_t> DecodeReply(std::string_view message) {
  Reader r(message);
  uint8_t ok = 0;
  if (!r.U8(ok)) return InternalError("spawner: empty reply");
  if (!ok) return ReadError(r);
  int32_t pid = 0;
  if (!r.I32(pid)) return InternalError("spawner: malformed reply");
  return pid;
}

std::string EncodeCallReply(const Result<std::string>& result) {
  Writer w;
  w.U8(result.has_value());
  if (result) {
    w.Str(*result);
  } else {
    Error(w, result.error());
  }
  return w.Take();
}

Result<std::string> DecodeCallReply(std::string_view message) {
  Reader r(message);
  uint8_t ok = 0;
  if (!r.U8(ok)) return InternalError("spawner: empty reply");
  if (!ok) return ReadError(r);
  std::string data;
  if (!r.Str(data) || !r.done()) return InternalError("spawner: malformed reply");
  return data;
}

Status SendMessage(int sock, std::string_view message, const std::vector<int>& fds) {
  if (message.size() > kMaxMessage) return InvalidArgumentError("spawner: message too large");
  return SendWithFds(sock, message, fds, "spawner");
}

Result<Received> ReceiveMessage(int sock) {
  Received got;
  got.message.resize(kMaxMessage);
  iovec iov{got.message.data(), got.message.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) {
    got.would_block = true;
    got.message.clear();
    return got;
  }
  if (n < 0) return ErrnoError("recvmsg", "spawner channel");
  got.fds = TakeReceivedFds(msg);
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    return InvalidArgumentError("spawner: truncated message");
  }
  got.message.resize(static_cast<size_t>(n));
  got.eof = n == 0 && got.fds.empty();
  return got;
}

}  // namespace hull::spawner_wire
