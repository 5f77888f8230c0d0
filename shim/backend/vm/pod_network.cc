#include "shim/backend/vm/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_ether.h>
#include <linux/if_tun.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "base/file_util.h"
#include "shim/backend/vm/pod_network_internal.h"

namespace hull::shim::vm {

namespace pb = ::hull::agent::v1;
using netlink::Request;

namespace internal {

Request IngressQdiscRequest(int ifindex, bool add) {
  Request r(add ? RTM_NEWQDISC : RTM_DELQDISC, add ? NLM_F_CREATE | NLM_F_EXCL : 0);
  tcmsg tc{};
  tc.tcm_family = AF_UNSPEC;
  tc.tcm_ifindex = ifindex;
  tc.tcm_handle = TC_H_MAKE(TC_H_INGRESS, 0);  // ffff:
  tc.tcm_parent = TC_H_INGRESS;
  r.Header(tc);
  r.AttrString(TCA_KIND, "ingress");
  return r;
}

Request RedirectFilterRequest(int from, int to) {
  Request r(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL);
  tcmsg tc{};
  tc.tcm_family = AF_UNSPEC;
  tc.tcm_ifindex = from;
  tc.tcm_parent = TC_H_MAKE(TC_H_INGRESS, 0);
  // Priority 1, every protocol.
  tc.tcm_info = TC_H_MAKE(1u << 16, htons(ETH_P_ALL));
  r.Header(tc);
  r.AttrString(TCA_KIND, "u32");
  size_t options = r.BeginNested(TCA_OPTIONS);
  // One key with a zero mask: matches every packet; terminal.
  tc_u32_sel sel{};
  sel.flags = TC_U32_TERMINAL;
  sel.nkeys = 1;
  uint8_t match[sizeof(tc_u32_sel) + sizeof(tc_u32_key)] = {};  // the key: all zero
  std::memcpy(match, &sel, sizeof(sel));
  r.Attr(TCA_U32_SEL, match, sizeof(match));
  size_t actions = r.BeginNested(TCA_U32_ACT);
  size_t first = r.BeginNested(1);  // action order 1
  r.AttrString(TCA_ACT_KIND, "mirred");
  size_t act_options = r.BeginNested(TCA_ACT_OPTIONS);
  tc_mirred mirred{};
  mirred.action = TC_ACT_STOLEN;
  mirred.eaction = TCA_EGRESS_REDIR;
  mirred.ifindex = static_cast<uint32_t>(to);
  r.Attr(TCA_MIRRED_PARMS, &mirred, sizeof(mirred));
  r.EndNested(act_options);
  r.EndNested(first);
  r.EndNested(actions);
  r.EndNested(options);
  return r;
}

Address ParseAddress(std::span<const uint8_t> body) {
  Address address;
  ifaddrmsg msg;
  if (!netlink::ReadHeader(body, &msg) || msg.ifa_family != AF_INET) return address;
  address.index = static_cast<int>(msg.ifa_index);
  address.prefix_length = msg.ifa_prefixlen;
  std::string local, peer;
  netlink::ForEachAttr(netlink::AttrsAfter(body, sizeof(msg)),
                       [&](uint16_t type, std::span<const uint8_t> p) {
                         if (type == IFA_LOCAL) local = netlink::Ipv4String(p);
                         if (type == IFA_ADDRESS) peer = netlink::Ipv4String(p);
                       });
  address.address = local.empty() ? peer : local;
  return address;
}

RouteEntry ParseRoute(std::span<const uint8_t> body) {
  RouteEntry route;
  rtmsg msg;
  if (!netlink::ReadHeader(body, &msg) || msg.rtm_family != AF_INET) return route;
  route.table = msg.rtm_table;
  route.protocol = msg.rtm_protocol;
  route.type = msg.rtm_type;
  netlink::ForEachAttr(
      netlink::AttrsAfter(body, sizeof(msg)), [&](uint16_t type, std::span<const uint8_t> p) {
        if (type == RTA_DST) {
          route.destination = netlink::Ipv4String(p) + "/" + std::to_string(msg.rtm_dst_len);
        } else if (type == RTA_GATEWAY) {
          route.gateway = netlink::Ipv4String(p);
        } else if (type == RTA_OIF) {
          route.oif = static_cast<int>(netlink::AttrU32(p));
        } else if (type == RTA_TABLE) {
          route.table = netlink::AttrU32(p);
        }
      });
  return route;
}

}  // namespace internal

namespace {

using namespace internal;

// The calling thread in `netns_path` while `inside` runs, then back.
Status InNetns(const std::string& netns_path, const std::function<Status()>& inside) {
  UniqueFd own(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) return ErrnoError("open", "/proc/thread-self/ns/net");
  UniqueFd target(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target.valid()) return ErrnoError("open network namespace", netns_path);
  if (::setns(target.get(), CLONE_NEWNET) != 0) return ErrnoError("setns", netns_path);
  Status status = inside();
  if (::setns(own.get(), CLONE_NEWNET) != 0) {
    // The thread would stay in the pod's namespace: nothing sane follows.
    std::abort();
  }
  return status;
}

Result<std::vector<netlink::Link>> Links(netlink::Socket& nl) {
  std::vector<netlink::Link> links;
  Request r(RTM_GETLINK, 0);
  ifinfomsg info{};
  r.Header(info);
  HULL_RETURN_IF_ERROR(nl.Dump(r, "dump links", [&](const nlmsghdr& h, std::span<const uint8_t> b) {
    if (h.nlmsg_type == RTM_NEWLINK) links.push_back(netlink::ParseLink(b));
  }));
  return links;
}

const netlink::Link* FindLink(const std::vector<netlink::Link>& links, std::string_view name) {
  for (const netlink::Link& link : links) {
    if (link.name == name) return &link;
  }
  return nullptr;
}

// eth0's addresses and its routes (those the kernel did not make itself for
// an address) into `network`.
Status ReadInterface(netlink::Socket& nl, const netlink::Link& eth0, pb::Network* network) {
  pb::NetworkInterface* nic = network->add_interfaces();
  nic->set_name(eth0.name);
  nic->set_mac(eth0.mac);
  nic->set_mtu(eth0.mtu);
  Request addrs(RTM_GETADDR, 0);
  ifaddrmsg amsg{};
  amsg.ifa_family = AF_INET;
  addrs.Header(amsg);
  HULL_RETURN_IF_ERROR(
      nl.Dump(addrs, "dump addresses", [&](const nlmsghdr& h, std::span<const uint8_t> b) {
        if (h.nlmsg_type != RTM_NEWADDR) return;
        Address a = ParseAddress(b);
        if (a.index != eth0.index || a.address.empty()) return;
        pb::IpAddress* ip = nic->add_addresses();
        ip->set_address(a.address);
        ip->set_prefix_length(a.prefix_length);
      }));
  Request routes(RTM_GETROUTE, 0);
  rtmsg rmsg{};
  rmsg.rtm_family = AF_INET;
  routes.Header(rmsg);
  std::vector<RouteEntry> link_routes, gateway_routes;
  HULL_RETURN_IF_ERROR(
      nl.Dump(routes, "dump routes", [&](const nlmsghdr& h, std::span<const uint8_t> b) {
        if (h.nlmsg_type != RTM_NEWROUTE) return;
        RouteEntry e = ParseRoute(b);
        if (e.oif != eth0.index || e.table != RT_TABLE_MAIN || e.type != RTN_UNICAST ||
            e.protocol == RTPROT_KERNEL) {
          return;
        }
        (e.gateway.empty() ? link_routes : gateway_routes).push_back(e);
      }));
  // On-link routes first: a gateway must be reachable when its route is added.
  for (const auto* list : {&link_routes, &gateway_routes}) {
    for (const RouteEntry& e : *list) {
      pb::Route* route = network->add_routes();
      route->set_destination(e.destination);
      route->set_gateway(e.gateway);
      route->set_interface(eth0.name);
    }
  }
  return Status::Ok();
}

Result<UniqueFd> CreateTap() {
  UniqueFd tun(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!tun.valid()) return ErrnoError("open", "/dev/net/tun");
  ifreq req{};
  std::strncpy(req.ifr_name, kPodTapName, IFNAMSIZ - 1);
  req.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (::ioctl(tun.get(), TUNSETIFF, &req) != 0) return ErrnoError("create tap", kPodTapName);
  return tun;
}

Status WireInside(netlink::Socket& nl, const netlink::Link& eth0, int tap_index) {
  Request tap_up = netlink::LinkUpRequest(tap_index, eth0.mtu);
  HULL_RETURN_IF_ERROR(nl.Call(tap_up, std::string("set ") + kPodTapName + " up"));
  Request q1 = IngressQdiscRequest(eth0.index, true);
  HULL_RETURN_IF_ERROR(nl.Call(q1, "add the ingress qdisc of " + eth0.name));
  Request q2 = IngressQdiscRequest(tap_index, true);
  HULL_RETURN_IF_ERROR(nl.Call(q2, std::string("add the ingress qdisc of ") + kPodTapName));
  Request f1 = RedirectFilterRequest(eth0.index, tap_index);
  HULL_RETURN_IF_ERROR(nl.Call(f1, "redirect " + eth0.name + " to " + kPodTapName));
  Request f2 = RedirectFilterRequest(tap_index, eth0.index);
  return nl.Call(f2, std::string("redirect ") + kPodTapName + " to " + eth0.name);
}

}  // namespace

PodNetworkSpec ReadPodNetworkSpec(const oci::Spec& spec) {
  PodNetworkSpec out;
  out.host_network = true;
  for (const oci::Namespace& ns : spec.Namespaces()) {
    if (ns.type != "network") continue;
    out.host_network = false;
    out.netns_path = ns.path;
  }
  for (const oci::Mount& m : spec.Mounts()) {
    if (m.destination == "/etc/resolv.conf" && !m.source.empty()) out.resolv_conf_path = m.source;
  }
  for (const auto& [key, value] : spec.Sysctls()) {
    if (key.starts_with("net.")) out.net_sysctls[key] = value;
  }
  return out;
}

Status RefuseHostNamespaces(const oci::Spec& spec) {
  const std::string asked = oci::HostNamespacesAsked(spec);
  if (asked.empty()) return Status::Ok();
  return InvalidArgumentError("the vm backend cannot run a pod in " + asked +
                              ": the pod's processes run under the guest's own kernel, which "
                              "shares no namespace with the host");
}

Result<PodNic> WirePodNetwork(const std::string& netns_path) {
  PodNic nic;
  std::optional<netlink::Socket> nl;
  Status opened = InNetns(netns_path, [&]() -> Status {
    Result<netlink::Socket> s = netlink::Socket::Open();
    if (!s) return s.error();
    nl.emplace(std::move(*s));
    Result<std::vector<netlink::Link>> links = Links(*nl);
    if (!links) return links.error();
    if (FindLink(*links, kPodInterface) == nullptr) return Status::Ok();  // no tap made
    Result<UniqueFd> tap = CreateTap();
    if (!tap) return tap.error();
    nic.tap = std::move(*tap);
    return Status::Ok();
  });
  if (!opened.ok()) return opened.WithContext("pod network " + netns_path);
  if (!nic.tap.valid()) {
    return NotFoundError("pod network " + netns_path + ": no " + kPodInterface);
  }
  Status wired = [&]() -> Status {
    HULL_ASSIGN_OR_RETURN(std::vector<netlink::Link> links, Links(*nl));
    const netlink::Link* eth0 = FindLink(links, kPodInterface);
    const netlink::Link* tap = FindLink(links, kPodTapName);
    if (eth0 == nullptr || tap == nullptr || eth0->mac.empty()) {
      return FailedPreconditionError(std::string(kPodInterface) + " or " + kPodTapName +
                                     " has no link or MAC");
    }
    nic.mac = eth0->mac;
    HULL_RETURN_IF_ERROR(ReadInterface(*nl, *eth0, &nic.network));
    return WireInside(*nl, *eth0, tap->index);
  }();
  if (!wired.ok()) {
    nic.tap.reset();
    UnwirePodNetwork(netns_path).IgnoreError();
    return wired.WithContext("pod network " + netns_path);
  }
  return nic;
}

Status UnwirePodNetwork(const std::string& netns_path) {
  if (netns_path.empty() || ::access(netns_path.c_str(), F_OK) != 0) return Status::Ok();
  std::optional<netlink::Socket> nl;
  HULL_RETURN_IF_ERROR(InNetns(netns_path, [&]() -> Status {
    Result<netlink::Socket> s = netlink::Socket::Open();
    if (!s) return s.error();
    nl.emplace(std::move(*s));
    return Status::Ok();
  }));
  HULL_ASSIGN_OR_RETURN(std::vector<netlink::Link> links, Links(*nl));
  if (const netlink::Link* eth0 = FindLink(links, kPodInterface)) {
    // Its filter goes with it. ENOENT/EINVAL: no ingress qdisc there.
    Request q = IngressQdiscRequest(eth0->index, false);
    nl->Call(q, "delete the ingress qdisc").IgnoreError();
  }
  if (const netlink::Link* tap = FindLink(links, kPodTapName)) {
    Request del(RTM_DELLINK, 0);
    ifinfomsg info{};
    info.ifi_index = tap->index;
    del.Header(info);
    Status s = nl->Call(del, std::string("delete ") + kPodTapName);
    if (!s.ok() && s.code() != Code::kNotFound) return s;
  }
  return Status::Ok();
}

}  // namespace hull::shim::vm
