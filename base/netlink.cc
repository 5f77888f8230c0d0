#include "base/netlink.h"

#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_ether.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hull::netlink {
namespace {

constexpr size_t Align(size_t n) {
  return (n + NLMSG_ALIGNTO - 1) & ~size_t{NLMSG_ALIGNTO - 1};
}

}  // namespace

Request::Request(uint16_t type, uint16_t flags) {
  nlmsghdr header{};
  header.nlmsg_type = type;
  header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  Append(&header, sizeof(header));
}

void Request::Append(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + len);
  Pad();
}

void Request::Pad() {
  bytes_.resize(Align(bytes_.size()), 0);
}

void Request::Attr(uint16_t type, const void* data, size_t len) {
  nlattr attr{};
  attr.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  attr.nla_type = type;
  const auto* a = reinterpret_cast<const uint8_t*>(&attr);
  bytes_.insert(bytes_.end(), a, a + sizeof(attr));
  if (len > 0) Append(data, len);
}

void Request::AttrString(uint16_t type, std::string_view value) {
  std::string s(value);
  Attr(type, s.c_str(), s.size() + 1);
}

size_t Request::BeginNested(uint16_t type) {
  size_t offset = bytes_.size();
  Attr(type, nullptr, 0);
  return offset;
}

void Request::EndNested(size_t offset) {
  uint16_t len = static_cast<uint16_t>(bytes_.size() - offset);
  std::memcpy(bytes_.data() + offset + offsetof(nlattr, nla_len), &len, sizeof(len));
}

void Request::AddFlags(uint16_t flags) {
  nlmsghdr header;
  std::memcpy(&header, bytes_.data(), sizeof(header));
  header.nlmsg_flags |= flags;
  std::memcpy(bytes_.data(), &header, sizeof(header));
}

uint16_t Request::type() const {
  nlmsghdr header;
  std::memcpy(&header, bytes_.data(), sizeof(header));
  return header.nlmsg_type;
}

std::span<const uint8_t> Request::Finish(uint32_t seq) {
  nlmsghdr header;
  std::memcpy(&header, bytes_.data(), sizeof(header));
  header.nlmsg_len = static_cast<uint32_t>(bytes_.size());
  header.nlmsg_seq = seq;
  std::memcpy(bytes_.data(), &header, sizeof(header));
  return bytes_;
}

void ForEachAttr(std::span<const uint8_t> data,
                 const std::function<void(uint16_t, std::span<const uint8_t>)>& each) {
  size_t pos = 0;
  while (pos + NLA_HDRLEN <= data.size()) {
    nlattr attr;
    std::memcpy(&attr, data.data() + pos, sizeof(attr));
    if (attr.nla_len < NLA_HDRLEN || pos + attr.nla_len > data.size()) return;
    each(static_cast<uint16_t>(attr.nla_type & NLA_TYPE_MASK),
         data.subspan(pos + NLA_HDRLEN, attr.nla_len - NLA_HDRLEN));
    pos += Align(attr.nla_len);
  }
}

uint32_t AttrU32(std::span<const uint8_t> payload) {
  uint32_t v = 0;
  if (payload.size() >= sizeof(v)) std::memcpy(&v, payload.data(), sizeof(v));
  return v;
}

std::span<const uint8_t> AttrsAfter(std::span<const uint8_t> body, size_t header_size) {
  return body.subspan(std::min(body.size(), NLMSG_ALIGN(header_size)));
}

Request LinkUpRequest(int ifindex, uint32_t mtu) {
  Request r(RTM_NEWLINK, 0);
  ifinfomsg info{};
  info.ifi_family = AF_UNSPEC;
  info.ifi_index = ifindex;
  info.ifi_flags = IFF_UP;
  info.ifi_change = IFF_UP;
  r.Header(info);
  if (mtu > 0) r.AttrU32(IFLA_MTU, mtu);
  return r;
}

std::string MacString(std::span<const uint8_t> bytes) {
  std::string s;
  char part[4];
  for (uint8_t b : bytes) {
    std::snprintf(part, sizeof(part), "%02x", b);
    if (!s.empty()) s += ':';
    s += part;
  }
  return s;
}

std::string Ipv4String(std::span<const uint8_t> bytes) {
  if (bytes.size() != 4) return "";
  char text[INET_ADDRSTRLEN];
  return ::inet_ntop(AF_INET, bytes.data(), text, sizeof(text)) != nullptr ? text : "";
}

Link ParseLink(std::span<const uint8_t> body) {
  Link link;
  ifinfomsg info;
  if (!ReadHeader(body, &info)) return link;
  link.index = info.ifi_index;
  ForEachAttr(AttrsAfter(body, sizeof(info)), [&](uint16_t type, std::span<const uint8_t> p) {
    if (type == IFLA_IFNAME) {
      link.name.assign(reinterpret_cast<const char*>(p.data()),
                       ::strnlen(reinterpret_cast<const char*>(p.data()), p.size()));
    } else if (type == IFLA_ADDRESS && p.size() == ETH_ALEN) {
      link.mac = MacString(p);
    } else if (type == IFLA_MTU) {
      link.mtu = AttrU32(p);
    }
  });
  return link;
}

Result<Socket> Socket::Open() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return ErrnoError("socket", "NETLINK_ROUTE");
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    return ErrnoError("bind", "NETLINK_ROUTE");
  }
  int on = 1;
  // Errors carry only the request's header, not the whole request back.
  ::setsockopt(fd.get(), SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  return Socket(std::move(fd));
}

Status Socket::Send(Request& request, std::string_view what) {
  std::span<const uint8_t> bytes = request.Finish(++seq_);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t n;
  do {
    n = ::sendto(fd_.get(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof(kernel));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("netlink send", what);
  return Status::Ok();
}

Status Socket::Receive(std::string_view what,
                       const std::function<Result<bool>(const nlmsghdr&)>& each) {
  std::vector<uint8_t> buffer(64 * 1024);
  while (true) {
    ssize_t n;
    do {
      n = ::recv(fd_.get(), buffer.data(), buffer.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoError("netlink receive", what);
    size_t pos = 0;
    while (pos + sizeof(nlmsghdr) <= static_cast<size_t>(n)) {
      nlmsghdr header;
      std::memcpy(&header, buffer.data() + pos, sizeof(header));
      if (header.nlmsg_len < sizeof(nlmsghdr) || pos + header.nlmsg_len > static_cast<size_t>(n)) {
        return InternalError("netlink receive " + std::string(what) + ": a truncated message");
      }
      if (header.nlmsg_seq == seq_) {
        const auto* at = reinterpret_cast<const nlmsghdr*>(buffer.data() + pos);
        Result<bool> finished = each(*at);
        if (!finished) return finished.error();
        if (*finished) return Status::Ok();
      }
      pos += Align(header.nlmsg_len);
    }
  }
}

namespace {

// NLMSG_ERROR: 0 is the acknowledgement, else -errno.
Result<bool> ErrorMessage(const nlmsghdr& header, std::string_view what) {
  nlmsgerr err;
  if (header.nlmsg_len < NLMSG_LENGTH(sizeof(err))) {
    return InternalError(std::string(what) + ": a short netlink error");
  }
  std::memcpy(&err, NLMSG_DATA(&header), sizeof(err));
  if (err.error == 0) return true;
  return ErrnoError(-err.error, what);
}

}  // namespace

Status Socket::Call(Request& request, std::string_view what) {
  request.AddFlags(NLM_F_ACK);
  HULL_RETURN_IF_ERROR(Send(request, what));
  return Receive(what, [&](const nlmsghdr& h) -> Result<bool> {
    if (h.nlmsg_type == NLMSG_ERROR) return ErrorMessage(h, what);
    return false;
  });
}

Status Socket::Dump(Request& request, std::string_view what,
                    const std::function<void(const nlmsghdr&, std::span<const uint8_t>)>& each) {
  request.AddFlags(NLM_F_DUMP);
  HULL_RETURN_IF_ERROR(Send(request, what));
  return Receive(what, [&](const nlmsghdr& h) -> Result<bool> {
    if (h.nlmsg_type == NLMSG_DONE) return true;
    if (h.nlmsg_type == NLMSG_ERROR) return ErrorMessage(h, what);
    const auto* body = static_cast<const uint8_t*>(NLMSG_DATA(&h));
    each(h, std::span<const uint8_t>(body, h.nlmsg_len - NLMSG_HDRLEN));
    return false;
  });
}

}  // namespace hull::netlink
