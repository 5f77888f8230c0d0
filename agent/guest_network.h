// The guest's network from CreateSandbox's Network (docs/vm.md, "Pod
// networking"): loopback up; each NIC, found by its MAC, gets its MTU, its
// addresses and IFF_UP; then the routes; then /etc/resolv.conf. A pod address
// in 127.0.0.0/8 also needs route_localnet and the local 127.0.0.0/8 route
// narrowed to 127.0.0.1/32 (the loopback route would swallow it otherwise).
// Last, the pod's net.* sysctls (a key "net.a.b" is /proc/sys/net/a/b; a key
// outside net., or with an empty part, is InvalidArgument before anything
// changes).
// Netlink in-process: the agent is PID 1 under TCG, where every fork+exec
// costs hundreds of milliseconds. Loop thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "hull/agent/v1/agent.pb.h"

namespace hull::agent {

// Where the guest writes what it is told (tests pass a temporary root).
struct GuestNetworkPaths {
  std::string proc_sys = "/proc/sys";
  std::string proc_sys_ipv4 = "/proc/sys/net/ipv4";
  std::string resolv_conf = "/etc/resolv.conf";
};

Status ConfigureGuestNetwork(const ::hull::agent::v1::Network& network,
                             const GuestNetworkPaths& paths = {});

// "a.b.c.d/n" (or "a.b.c.d", n = 32; empty = 0.0.0.0/0) into the address in
// network byte order and the prefix length; InvalidArgument otherwise.
struct Ipv4Prefix {
  uint32_t address = 0;  // network byte order
  uint32_t length = 0;
};
Result<Ipv4Prefix> ParseIpv4Prefix(std::string_view text);
// Whether the Network asks for any address in 127.0.0.0/8.
bool UsesLoopbackRange(const ::hull::agent::v1::Network& network);

}  // namespace hull::agent
