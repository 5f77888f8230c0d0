// The netlink requests and reply parsing behind pod_network.h, pure, for
// tests/unit/backend/pod_network_test.cc.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/netlink.h"

namespace hull::shim::vm::internal {

// RTM_NEWQDISC (or RTM_DELQDISC) of an ingress qdisc on `ifindex`.
netlink::Request IngressQdiscRequest(int ifindex, bool add);
// RTM_NEWTFILTER on `from`'s ingress: u32 matching every packet, action
// mirred egress redirect to `to`.
netlink::Request RedirectFilterRequest(int from, int to);
struct Address {
  int index = 0;
  std::string address;
  uint32_t prefix_length = 0;
};
struct RouteEntry {
  int oif = 0;
  std::string destination;  // "a.b.c.d/n", empty for the default route
  std::string gateway;
  uint32_t table = 0;
  uint8_t protocol = 0;
  uint8_t type = 0;
};
// From an RTM_NEWADDR / RTM_NEWROUTE message body (after the nlmsghdr),
// AF_INET.
Address ParseAddress(std::span<const uint8_t> body);
RouteEntry ParseRoute(std::span<const uint8_t> body);

}  // namespace hull::shim::vm::internal
