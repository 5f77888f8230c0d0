#include "agent/guest_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "base/file_util.h"
#include "base/netlink.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;
using netlink::Request;

// "net." then non-empty parts of letters, digits, '_' and '-' joined by '.'
// (so no path can leave /proc/sys/net).
bool ValidNetSysctl(std::string_view key) {
  if (!key.starts_with("net.")) return false;
  std::string_view rest = key.substr(4);
  size_t part = 0;
  for (char c : rest) {
    if (c == '.') {
      if (part == 0) return false;
      part = 0;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
      ++part;
    } else {
      return false;
    }
  }
  return part > 0;
}

Request AddressRequest(int ifindex, const Ipv4Prefix& prefix) {
  Request r(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
  ifaddrmsg msg{};
  msg.ifa_family = AF_INET;
  msg.ifa_prefixlen = static_cast<uint8_t>(prefix.length);
  msg.ifa_scope = RT_SCOPE_UNIVERSE;
  msg.ifa_index = static_cast<uint32_t>(ifindex);
  r.Header(msg);
  r.Attr(IFA_LOCAL, &prefix.address, 4);
  r.Attr(IFA_ADDRESS, &prefix.address, 4);
  return r;
}

Request RouteRequest(uint16_t type, uint8_t table, uint8_t route_type, uint8_t scope,
                     const Ipv4Prefix& dst, const uint32_t* gateway, int oif) {
  Request r(type, type == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_REPLACE : 0);
  rtmsg msg{};
  msg.rtm_family = AF_INET;
  msg.rtm_dst_len = static_cast<uint8_t>(dst.length);
  msg.rtm_table = table;
  msg.rtm_protocol = type == RTM_NEWROUTE ? RTPROT_BOOT : 0;
  msg.rtm_scope = scope;
  msg.rtm_type = route_type;
  r.Header(msg);
  if (dst.length > 0) r.Attr(RTA_DST, &dst.address, 4);
  if (gateway != nullptr) r.Attr(RTA_GATEWAY, gateway, 4);
  if (oif > 0) r.AttrU32(RTA_OIF, static_cast<uint32_t>(oif));
  return r;
}

// 127.0.0.0/8 local on lo becomes 127.0.0.1/32: the pod's 127.x address on
// its NIC is then routed like any other.
Status NarrowLoopbackRoute(netlink::Socket& nl, int lo) {
  Ipv4Prefix one{.address = htonl(INADDR_LOOPBACK), .length = 32};
  Request add =
      RouteRequest(RTM_NEWROUTE, RT_TABLE_LOCAL, RTN_LOCAL, RT_SCOPE_HOST, one, nullptr, lo);
  HULL_RETURN_IF_ERROR(nl.Call(add, "add local 127.0.0.1/32 dev lo"));
  Ipv4Prefix eight{.address = htonl(0x7f000000), .length = 8};
  Request del =
      RouteRequest(RTM_DELROUTE, RT_TABLE_LOCAL, RTN_LOCAL, RT_SCOPE_HOST, eight, nullptr, lo);
  Status s = nl.Call(del, "delete local 127.0.0.0/8 dev lo");
  if (!s.ok() && s.code() != Code::kNotFound) return s;  // ESRCH: gone already
  return Status::Ok();
}

}  // namespace

Result<Ipv4Prefix> ParseIpv4Prefix(std::string_view text) {
  if (text.empty()) return Ipv4Prefix{};
  std::string addr(text.substr(0, text.find('/')));
  Ipv4Prefix out{.address = 0, .length = 32};
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    std::string_view len = text.substr(slash + 1);
    if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != len.npos) {
      return InvalidArgumentError("bad prefix length in \"" + std::string(text) + "\"");
    }
    out.length = static_cast<uint32_t>(std::stoul(std::string(len)));
    if (out.length > 32) {
      return InvalidArgumentError("bad prefix length in \"" + std::string(text) + "\"");
    }
  }
  in_addr a;
  if (::inet_pton(AF_INET, addr.c_str(), &a) != 1) {
    return InvalidArgumentError("not an IPv4 address: \"" + std::string(text) + "\"");
  }
  out.address = a.s_addr;
  return out;
}

// "aa:bb:cc:dd:ee:ff" as bytes.
std::optional<std::array<uint8_t, 6>> ParseMac(const std::string& text) {
  std::array<uint8_t, 6> mac{};
  unsigned b[6];
  char tail;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
                  &b[5], &tail) != 6) {
    return std::nullopt;
  }
  for (size_t i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(b[i]);
  return mac;
}

bool UsesLoopbackRange(const pb::Network& network) {
  for (const pb::NetworkInterface& nic : network.interfaces()) {
    for (const pb::IpAddress& ip : nic.addresses()) {
      Result<Ipv4Prefix> p = ParseIpv4Prefix(ip.address());
      if (p && (ntohl(p->address) >> 24) == 127) return true;
    }
  }
  return false;
}

Status ConfigureGuestNetwork(const pb::Network& network, const GuestNetworkPaths& paths) {
  // Check everything before touching anything.
  for (const pb::NetworkInterface& nic : network.interfaces()) {
    if (!nic.guest_mac().empty() && !ParseMac(nic.mac())) {
      return InvalidArgumentError("interface " + nic.name() + ": bad MAC \"" + nic.mac() + "\"");
    }
    for (const pb::IpAddress& ip : nic.addresses()) {
      if (ip.prefix_length() > 32) return InvalidArgumentError("bad prefix length");
      if (auto p = ParseIpv4Prefix(ip.address()); !p) return p.error();
    }
  }
  for (const auto& [key, value] : network.sysctls()) {
    if (!ValidNetSysctl(key)) return InvalidArgumentError("not a network sysctl: \"" + key + "\"");
  }
  for (const pb::Route& route : network.routes()) {
    if (auto p = ParseIpv4Prefix(route.destination()); !p) return p.error();
    if (auto p = ParseIpv4Prefix(route.gateway()); !route.gateway().empty() && !p) {
      return p.error();
    }
  }

  HULL_ASSIGN_OR_RETURN(netlink::Socket nl, netlink::Socket::Open());
  std::vector<netlink::Link> links;
  Request dump(RTM_GETLINK, 0);
  ifinfomsg info{};
  dump.Header(info);
  HULL_RETURN_IF_ERROR(
      nl.Dump(dump, "dump links", [&](const nlmsghdr& h, std::span<const uint8_t> body) {
        if (h.nlmsg_type == RTM_NEWLINK) links.push_back(netlink::ParseLink(body));
      }));
  auto find = [&](auto pred) -> const netlink::Link* {
    for (const netlink::Link& l : links) {
      if (pred(l)) return &l;
    }
    return nullptr;
  };
  const netlink::Link* lo = find([](const netlink::Link& l) { return l.name == "lo"; });
  if (lo == nullptr) return NotFoundError("the guest has no lo");
  Request lo_up = netlink::LinkUpRequest(lo->index, 0);
  HULL_RETURN_IF_ERROR(nl.Call(lo_up, "set lo up"));

  const bool localnet = UsesLoopbackRange(network);
  if (localnet) {
    HULL_RETURN_IF_ERROR(WriteKernelFile(paths.proc_sys_ipv4 + "/conf/all/route_localnet", "1"));
    HULL_RETURN_IF_ERROR(NarrowLoopbackRoute(nl, lo->index));
  }

  std::map<std::string, int> index_by_name;  // host-side names, for routes
  for (const pb::NetworkInterface& nic : network.interfaces()) {
    const netlink::Link* link =
        find([&](const netlink::Link& l) { return !l.mac.empty() && l.mac == nic.mac(); });
    if (link == nullptr && !nic.guest_mac().empty()) {
      // A clone of a template VM: its NIC has the template's MAC.
      link = find([&](const netlink::Link& l) { return l.mac == nic.guest_mac(); });
      if (link != nullptr) {
        std::optional<std::array<uint8_t, 6>> mac = ParseMac(nic.mac());  // checked above
        Request set(RTM_NEWLINK, 0);
        ifinfomsg info{};
        info.ifi_family = AF_UNSPEC;
        info.ifi_index = link->index;
        set.Header(info);
        set.Attr(IFLA_ADDRESS, mac->data(), mac->size());
        HULL_RETURN_IF_ERROR(nl.Call(set, "set the MAC of " + link->name + " to " + nic.mac()));
      }
    }
    if (link == nullptr) {
      return NotFoundError("no guest NIC has the MAC " + nic.mac() + " (" + nic.name() + ")");
    }
    index_by_name[nic.name()] = link->index;
    const std::string what = link->name + " (" + nic.name() + ")";
    if (localnet) {
      HULL_RETURN_IF_ERROR(
          WriteKernelFile(paths.proc_sys_ipv4 + "/conf/" + link->name + "/route_localnet", "1"));
    }
    for (const pb::IpAddress& ip : nic.addresses()) {
      Ipv4Prefix p = *ParseIpv4Prefix(ip.address());
      p.length = ip.prefix_length();
      Request add = AddressRequest(link->index, p);
      HULL_RETURN_IF_ERROR(nl.Call(add, "add " + ip.address() + " to " + what));
    }
    Request up = netlink::LinkUpRequest(link->index, nic.mtu());
    HULL_RETURN_IF_ERROR(nl.Call(up, "set " + what + " up"));
  }

  for (const pb::Route& route : network.routes()) {
    auto it = index_by_name.find(route.interface());
    if (it == index_by_name.end()) {
      return InvalidArgumentError("route " + route.destination() + ": no interface \"" +
                                  route.interface() + "\"");
    }
    Ipv4Prefix dst = *ParseIpv4Prefix(route.destination());
    std::optional<uint32_t> gateway;
    if (!route.gateway().empty()) gateway = ParseIpv4Prefix(route.gateway())->address;
    Request add = RouteRequest(RTM_NEWROUTE, RT_TABLE_MAIN, RTN_UNICAST,
                               gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK, dst,
                               gateway ? &*gateway : nullptr, it->second);
    const std::string what = "add route " +
                             (route.destination().empty() ? "default" : route.destination()) +
                             (gateway ? " via " + route.gateway() : "");
    HULL_RETURN_IF_ERROR(nl.Call(add, what));
  }

  for (const auto& [key, value] : network.sysctls()) {
    std::string path = key;
    std::replace(path.begin(), path.end(), '.', '/');
    HULL_RETURN_IF_ERROR(
        WriteKernelFile(paths.proc_sys + "/" + path, value).WithContext("sysctl " + key));
  }
  if (!network.resolv_conf().empty()) {
    HULL_RETURN_IF_ERROR(WriteFileAtomic(paths.resolv_conf, network.resolv_conf(), 0644));
  }
  return Status::Ok();
}

}  // namespace hull::agent
