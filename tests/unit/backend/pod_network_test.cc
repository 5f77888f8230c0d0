// The vm backend's pod network (shim/backend/vm/pod_network.h): the netlink
// requests byte by byte (the tc ingress qdisc, the u32 + mirred redirect),
// reply parsing, what a spec says, and, as root, the wiring in a real
// network namespace with a veth standing in for CNI's eth0 (what `tc` and
// `ip` then show, and that nothing is left after the unwiring).
#include "shim/backend/vm/pod_network.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "shim/backend/vm/pod_network_internal.h"
#include "tests/unit/shell.h"

namespace hull::shim::vm {
namespace {

using namespace internal;

// Attributes of one level: type -> payload.
std::map<uint16_t, std::vector<uint8_t>> Attrs(std::span<const uint8_t> data) {
  std::map<uint16_t, std::vector<uint8_t>> out;
  netlink::ForEachAttr(data, [&](uint16_t type, std::span<const uint8_t> p) {
    out[type] = std::vector<uint8_t>(p.begin(), p.end());
  });
  return out;
}

std::string Str(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

TEST(PodNetworkRequestTest, RedirectFilterIsU32MatchAllWithMirredEgressRedirect) {
  netlink::Request r = RedirectFilterRequest(7, 9);
  std::span<const uint8_t> bytes = r.Finish(42);
  nlmsghdr h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_len, bytes.size());
  EXPECT_EQ(h.nlmsg_type, RTM_NEWTFILTER);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(h.nlmsg_seq, 42u);
  std::span<const uint8_t> body = bytes.subspan(NLMSG_HDRLEN);
  tcmsg tc;
  ASSERT_TRUE(netlink::ReadHeader(body, &tc));
  EXPECT_EQ(tc.tcm_ifindex, 7);
  EXPECT_EQ(tc.tcm_parent, 0xffff0000u);
  EXPECT_EQ(tc.tcm_info, (1u << 16) | htons(ETH_P_ALL));
  auto top = Attrs(netlink::AttrsAfter(body, sizeof(tc)));
  EXPECT_EQ(Str(top[TCA_KIND]), std::string("u32\0", 4));
  auto options = Attrs(top[TCA_OPTIONS]);
  ASSERT_EQ(options[TCA_U32_SEL].size(), sizeof(tc_u32_sel) + sizeof(tc_u32_key));
  tc_u32_sel sel;
  std::memcpy(&sel, options[TCA_U32_SEL].data(), sizeof(sel));
  EXPECT_EQ(sel.nkeys, 1);
  EXPECT_EQ(sel.flags, TC_U32_TERMINAL);
  tc_u32_key key;
  std::memcpy(&key, options[TCA_U32_SEL].data() + sizeof(sel), sizeof(key));
  EXPECT_EQ(key.mask, 0u);  // matches every packet
  auto actions = Attrs(options[TCA_U32_ACT]);
  ASSERT_EQ(actions.size(), 1u);
  auto first = Attrs(actions[1]);
  EXPECT_EQ(Str(first[TCA_ACT_KIND]), std::string("mirred\0", 7));
  auto mirred_options = Attrs(first[TCA_ACT_OPTIONS]);
  ASSERT_EQ(mirred_options[TCA_MIRRED_PARMS].size(), sizeof(tc_mirred));
  tc_mirred mirred;
  std::memcpy(&mirred, mirred_options[TCA_MIRRED_PARMS].data(), sizeof(mirred));
  EXPECT_EQ(mirred.eaction, TCA_EGRESS_REDIR);
  EXPECT_EQ(mirred.action, TC_ACT_STOLEN);
  EXPECT_EQ(mirred.ifindex, 9u);
}

TEST(PodNetworkRequestTest, IngressQdisc) {
  for (bool add : {true, false}) {
    netlink::Request r = IngressQdiscRequest(3, add);
    std::span<const uint8_t> bytes = r.Finish(1);
    nlmsghdr h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    EXPECT_EQ(h.nlmsg_type, add ? RTM_NEWQDISC : RTM_DELQDISC);
    std::span<const uint8_t> body = bytes.subspan(NLMSG_HDRLEN);
    tcmsg tc;
    ASSERT_TRUE(netlink::ReadHeader(body, &tc));
    EXPECT_EQ(tc.tcm_ifindex, 3);
    EXPECT_EQ(tc.tcm_handle, 0xffff0000u);
    EXPECT_EQ(tc.tcm_parent, TC_H_INGRESS);
    EXPECT_EQ(Str(Attrs(netlink::AttrsAfter(body, sizeof(tc)))[TCA_KIND]),
              std::string("ingress\0", 8));
  }
}

TEST(PodNetworkParseTest, LinkAddressAndRoute) {
  netlink::Request link(RTM_NEWLINK, 0);
  ifinfomsg info{};
  info.ifi_index = 4;
  link.Header(info);
  link.AttrString(IFLA_IFNAME, "eth0");
  const uint8_t mac[6] = {0x0a, 0x58, 0x7f, 0xc9, 0x00, 0x02};
  link.Attr(IFLA_ADDRESS, mac, sizeof(mac));
  link.AttrU32(IFLA_MTU, 1450);
  netlink::Link l = netlink::ParseLink(link.Finish(1).subspan(NLMSG_HDRLEN));
  EXPECT_EQ(l.index, 4);
  EXPECT_EQ(l.name, "eth0");
  EXPECT_EQ(l.mac, "0a:58:7f:c9:00:02");
  EXPECT_EQ(l.mtu, 1450u);

  netlink::Request addr(RTM_NEWADDR, 0);
  ifaddrmsg amsg{};
  amsg.ifa_family = AF_INET;
  amsg.ifa_prefixlen = 24;
  amsg.ifa_index = 4;
  addr.Header(amsg);
  const uint8_t ip[4] = {127, 201, 0, 2};
  addr.Attr(IFA_LOCAL, ip, 4);
  Address a = ParseAddress(addr.Finish(1).subspan(NLMSG_HDRLEN));
  EXPECT_EQ(a.index, 4);
  EXPECT_EQ(a.address, "127.201.0.2");
  EXPECT_EQ(a.prefix_length, 24u);

  netlink::Request route(RTM_NEWROUTE, 0);
  rtmsg rmsg{};
  rmsg.rtm_family = AF_INET;
  rmsg.rtm_table = RT_TABLE_MAIN;
  rmsg.rtm_type = RTN_UNICAST;
  rmsg.rtm_protocol = RTPROT_BOOT;
  route.Header(rmsg);
  const uint8_t gw[4] = {127, 201, 0, 1};
  route.Attr(RTA_GATEWAY, gw, 4);
  route.AttrU32(RTA_OIF, 4);
  RouteEntry e = ParseRoute(route.Finish(1).subspan(NLMSG_HDRLEN));
  EXPECT_EQ(e.destination, "");  // default
  EXPECT_EQ(e.gateway, "127.201.0.1");
  EXPECT_EQ(e.oif, 4);
  EXPECT_EQ(e.table, static_cast<uint32_t>(RT_TABLE_MAIN));
}

oci::Spec SpecOf(const char* json) {
  Result<oci::Spec> spec = oci::Spec::Parse(json);
  EXPECT_TRUE(spec.has_value());
  return *spec;
}

TEST(PodNetworkSpecTest, NamespacePathHostNetworkAndResolvConf) {
  PodNetworkSpec cri = ReadPodNetworkSpec(SpecOf(R"({"linux":{"namespaces":[
      {"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1"}]},
      "mounts":[{"destination":"/etc/resolv.conf","type":"bind","source":"/s/resolv.conf"}]})"));
  EXPECT_FALSE(cri.host_network);
  EXPECT_EQ(cri.netns_path, "/var/run/netns/cni-1");
  EXPECT_EQ(cri.resolv_conf_path, "/s/resolv.conf");

  PodNetworkSpec ctr =
      ReadPodNetworkSpec(SpecOf(R"({"linux":{"namespaces":[{"type":"network"}]}})"));
  EXPECT_FALSE(ctr.host_network);
  EXPECT_EQ(ctr.netns_path, "");

  PodNetworkSpec host = ReadPodNetworkSpec(SpecOf(R"({"linux":{"namespaces":[{"type":"pid"}]}})"));
  EXPECT_TRUE(host.host_network);
}

TEST(PodNetworkSpecTest, OnlyTheNetworkSysctlsGoToTheGuest) {
  PodNetworkSpec spec = ReadPodNetworkSpec(SpecOf(R"({"linux":{"namespaces":[{"type":"network"}],
      "sysctl":{"net.ipv4.ip_unprivileged_port_start":"0","kernel.shm_rmid_forced":"1",
                "net.core.somaxconn":"1234"}}})"));
  EXPECT_EQ(spec.net_sysctls,
            (std::map<std::string, std::string>{{"net.core.somaxconn", "1234"},
                                                {"net.ipv4.ip_unprivileged_port_start", "0"}}));
}

// ---- as root, in a real namespace ----

using hull::test_util::Shell;

class PodNetworkNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
    name_ = "hull-ut-" + std::to_string(::getpid());
    ASSERT_EQ(std::system(("ip netns add " + name_).c_str()), 0);
    path_ = "/run/netns/" + name_;
  }
  void TearDown() override {
    if (!name_.empty()) {
      EXPECT_EQ(std::system(("ip netns del " + name_).c_str()), 0);
    }
  }
  std::string In(const std::string& command) {
    return Shell("ip netns exec " + name_ + " " + command);
  }
  std::string name_, path_;
};

TEST_F(PodNetworkNetnsTest, WiresEth0ToATapBothWaysAndUnwiresToNothing) {
  // eth0 as CNI's bridge plugin leaves it: a veth with an address, MTU and a
  // default route.
  ASSERT_EQ(
      std::system(("ip -n " + name_ + " link add eth0 mtu 1400 type veth peer name peer0 && " +
                   "ip -n " + name_ + " link set eth0 address 0a:58:7f:c9:00:07 && " + "ip -n " +
                   name_ + " link set eth0 up && ip -n " + name_ + " link set peer0 up && ip -n " +
                   name_ + " addr add 10.99.0.7/24 dev eth0 && ip -n " + name_ +
                   " route add default via 10.99.0.1")
                      .c_str()),
      0);
  auto start = std::chrono::steady_clock::now();
  Result<PodNic> nic = WirePodNetwork(path_);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(nic.has_value()) << nic.error().ToString();
  std::cout << "[ measured ] WirePodNetwork: "
            << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us\n";
  EXPECT_TRUE(nic->tap.valid());
  EXPECT_EQ(nic->mac, "0a:58:7f:c9:00:07");
  ASSERT_EQ(nic->network.interfaces_size(), 1);
  const auto& eth0 = nic->network.interfaces(0);
  EXPECT_EQ(eth0.name(), "eth0");
  EXPECT_EQ(eth0.mtu(), 1400u);
  ASSERT_EQ(eth0.addresses_size(), 1);
  EXPECT_EQ(eth0.addresses(0).address(), "10.99.0.7");
  EXPECT_EQ(eth0.addresses(0).prefix_length(), 24u);
  ASSERT_EQ(nic->network.routes_size(), 1);  // the subnet route is the kernel's
  EXPECT_EQ(nic->network.routes(0).destination(), "");
  EXPECT_EQ(nic->network.routes(0).gateway(), "10.99.0.1");
  EXPECT_EQ(nic->network.routes(0).interface(), "eth0");

  std::string tap = In("ip link show hulltap0");
  EXPECT_NE(tap.find("mtu 1400"), std::string::npos) << tap;
  EXPECT_NE(tap.find(",UP"), std::string::npos) << tap;
  EXPECT_NE(In("tc filter show dev eth0 ingress").find("Egress Redirect to device hulltap0"),
            std::string::npos);
  EXPECT_NE(In("tc filter show dev hulltap0 ingress").find("Egress Redirect to device eth0"),
            std::string::npos);

  // Wiring again while wired fails cleanly (the tap exists) and leaves the
  // first wiring's tap to its owner.
  Result<PodNic> again = WirePodNetwork(path_);
  EXPECT_FALSE(again.has_value());

  nic->tap.reset();  // QEMU's copy gone: the tap goes
  ASSERT_TRUE(UnwirePodNetwork(path_).ok());
  EXPECT_EQ(In("ip link show hulltap0").find("hulltap0:"), std::string::npos);
  EXPECT_EQ(In("tc qdisc show dev eth0").find("ingress"), std::string::npos);
  EXPECT_TRUE(UnwirePodNetwork(path_).ok());  // idempotent
}

TEST_F(PodNetworkNetnsTest, WiringThatFailsHalfwayLeavesNoTap) {
  // An ingress qdisc already on eth0: adding hull's fails (EEXIST) after the
  // tap was made.
  ASSERT_EQ(std::system(("ip -n " + name_ + " link add eth0 type veth peer name peer0 && " +
                         "ip -n " + name_ + " link set eth0 up && ip netns exec " + name_ +
                         " tc qdisc add dev eth0 ingress")
                            .c_str()),
            0);
  Result<PodNic> nic = WirePodNetwork(path_);
  ASSERT_FALSE(nic.has_value());
  EXPECT_EQ(nic.error().code(), Code::kAlreadyExists) << nic.error().ToString();
  EXPECT_EQ(In("ip link show hulltap0").find("hulltap0:"), std::string::npos);
}

TEST_F(PodNetworkNetnsTest, NoEth0IsNotFoundAndLeavesNothing) {
  Result<PodNic> nic = WirePodNetwork(path_);
  ASSERT_FALSE(nic.has_value());
  EXPECT_EQ(nic.error().code(), Code::kNotFound);
  EXPECT_EQ(In("ip link show hulltap0").find("hulltap0:"), std::string::npos);
  EXPECT_FALSE(WirePodNetwork("/run/netns/hull-no-such-netns").has_value());
  EXPECT_TRUE(UnwirePodNetwork("/run/netns/hull-no-such-netns").ok());
}

}  // namespace
}  // namespace hull::shim::vm
