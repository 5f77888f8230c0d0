// The pod's network for its VM (docs/vm.md, "Pod networking"): what the pod's
// spec says (a network namespace to join, none = host network), and the
// wiring inside that namespace: a tap device for QEMU with tc ingress
// redirection (u32 match-all + mirred egress redirect) both ways between the
// CNI interface (eth0) and the tap, and eth0's configuration for the guest.
// Netlink in-process; the calling thread enters the namespace only to open
// its sockets. Blocking (sub-millisecond netlink calls); loop thread or the
// `delete` action.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"
#include "hull/agent/v1/agent.pb.h"
#include "oci/spec.h"

namespace hull::shim::vm {

// The tap device hull creates in a pod's network namespace.
inline constexpr char kPodTapName[] = "hulltap0";
// The CNI interface it is wired to.
inline constexpr char kPodInterface[] = "eth0";

struct PodNetworkSpec {
  // The spec has no network namespace: the pod shares the host's network
  // (`hostNetwork: true`, `ctr run --net-host`).
  bool host_network = false;
  // The namespace to wire; empty: a new, empty one (ctr run): no NIC.
  std::string netns_path;
  // The source of the /etc/resolv.conf bind mount (CRI's), if any.
  std::string resolv_conf_path;
  // linux.sysctl's keys under "net." (the pod's network sysctls).
  std::map<std::string, std::string> net_sysctls;
};
PodNetworkSpec ReadPodNetworkSpec(const oci::Spec& spec);

// InvalidArgument, naming what was asked, when the pod's spec joins the
// host's PID or IPC namespace (hostPID, hostIPC: the spec has no pid or ipc
// namespace): the pod's processes run under the guest's own kernel, which
// shares no namespace with the host's (docs/vm.md, "What it cannot do").
Status RefuseHostNamespaces(const oci::Spec& spec);

struct PodNic {
  UniqueFd tap;  // for QEMU (`-netdev tap,fd=`)
  std::string mac;
  // The interface, its addresses and routes (no resolv_conf).
  ::hull::agent::v1::Network network;
};

// Reads eth0 in `netns_path`, creates the tap (eth0's MTU, up) and the
// redirection. NotFound when the namespace has no eth0 (nothing was made).
// On failure nothing is left (UnwirePodNetwork).
Result<PodNic> WirePodNetwork(const std::string& netns_path);
// Removes the tap and eth0's ingress qdisc (with its filter). Idempotent: a
// namespace, device or qdisc already gone is fine.
Status UnwirePodNetwork(const std::string& netns_path);

}  // namespace hull::shim::vm
