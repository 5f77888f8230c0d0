// The agent's network set-up (agent/guest_network.h): address parsing, the
// 127.0.0.0/8 rule, a bad request refused before anything changes, and, as
// root, the whole set-up in a fresh network namespace with a veth standing in
// for the guest's virtio NIC (found by its MAC).
#include "agent/guest_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "base/unique_fd.h"
#include "tests/unit/shell.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;

TEST(GuestNetworkTest, ParsesPrefixes) {
  Result<Ipv4Prefix> p = ParseIpv4Prefix("127.201.0.0/24");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(ntohl(p->address), 0x7fc90000u);
  EXPECT_EQ(p->length, 24u);
  EXPECT_EQ(ParseIpv4Prefix("10.0.0.1")->length, 32u);
  EXPECT_EQ(ParseIpv4Prefix("")->length, 0u);  // default route
  for (const char* bad : {"10.0.0.1/33", "10.0.0/8", "x", "10.0.0.1/", "10.0.0.1/a", "::1/128"}) {
    Result<Ipv4Prefix> r = ParseIpv4Prefix(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << bad;
  }
}

pb::Network PodNetwork(const std::string& address, const std::string& mac) {
  pb::Network n;
  pb::NetworkInterface* nic = n.add_interfaces();
  nic->set_name("eth0");
  nic->set_mac(mac);
  nic->set_mtu(1400);
  pb::IpAddress* ip = nic->add_addresses();
  ip->set_address(address);
  ip->set_prefix_length(24);
  pb::Route* def = n.add_routes();
  def->set_gateway(address.substr(0, address.rfind('.')) + ".1");
  def->set_interface("eth0");
  n.set_resolv_conf("nameserver 127.201.0.53\n");
  return n;
}

TEST(GuestNetworkTest, LoopbackRangeOnlyFor127Addresses) {
  EXPECT_TRUE(UsesLoopbackRange(PodNetwork("127.201.0.2", "x")));
  EXPECT_FALSE(UsesLoopbackRange(PodNetwork("10.1.0.2", "x")));
  EXPECT_FALSE(UsesLoopbackRange(pb::Network()));
}

TEST(GuestNetworkTest, BadAddressIsRefusedBeforeAnyChange) {
  pb::Network n = PodNetwork("127.201.0.2", "x");
  n.mutable_interfaces(0)->mutable_addresses(0)->set_address("127.201.0");
  GuestNetworkPaths paths{.proc_sys_ipv4 = "/nonexistent", .resolv_conf = "/nonexistent/r"};
  Status s = ConfigureGuestNetwork(n, paths);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
}

TEST(GuestNetworkTest, BadMacForACloneIsRefusedBeforeAnyChange) {
  pb::Network n = PodNetwork("127.201.0.2", "0a:58:zz:c9:00:02");
  n.mutable_interfaces(0)->set_guest_mac("02:68:75:6c:6c:01");
  GuestNetworkPaths paths{.proc_sys_ipv4 = "/nonexistent", .resolv_conf = "/nonexistent/r"};
  EXPECT_EQ(ConfigureGuestNetwork(n, paths).code(), Code::kInvalidArgument);
}

TEST(GuestNetworkTest, SysctlsOutsideNetAreRefusedBeforeAnyChange) {
  for (const char* key : {"kernel.hostname", "net.", "net.ipv4..x", "net.ipv4./x", "net.core/../x",
                          "net.core.somaxconn ", "netx.core"}) {
    pb::Network n = PodNetwork("127.201.0.2", "x");
    (*n.mutable_sysctls())[key] = "1";
    GuestNetworkPaths paths{.proc_sys = "/nonexistent",
                            .proc_sys_ipv4 = "/nonexistent",
                            .resolv_conf = "/nonexistent/r"};
    Status s = ConfigureGuestNetwork(n, paths);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << key << ": " << s.ToString();
  }
}

using hull::test_util::Shell;

// A network namespace `ns` with a NIC eth7 of MAC `mac` (its veth peer up),
// as a guest's would be: lo down, nothing configured.
void AddNetnsWithNic(const std::string& ns, const std::string& mac) {
  ASSERT_EQ(std::system(("ip netns add " + ns + " && ip -n " + ns +
                         " link add eth7 type veth peer name peer7 && ip -n " + ns +
                         " link set eth7 address " + mac + " && ip -n " + ns + " link set peer7 up")
                            .c_str()),
            0);
}

// `configure` on a thread that entered `ns` (/proc/sys/net follows the
// thread's namespace); a failed setns is the answer.
Status InNetns(const std::string& ns, const std::function<Status()>& configure) {
  Status status;
  std::thread([&] {
    UniqueFd target(::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
    if (::setns(target.get(), CLONE_NEWNET) != 0) {
      status = ErrnoError("setns", ns);
      return;
    }
    status = configure();
  }).join();
  return status;
}

TEST(GuestNetworkNetnsTest, ConfiguresNicRoutesLocalnetAndResolvConf) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string ns = "hull-ut-agent-" + std::to_string(::getpid());
  AddNetnsWithNic(ns, "0a:58:7f:c9:00:09");
  const std::string resolv =
      std::filesystem::temp_directory_path() / ("hull-ut-resolv-" + std::to_string(::getpid()));
  Status status = InNetns(ns, [&] {
    pb::Network n = PodNetwork("127.201.0.9", "0a:58:7f:c9:00:09");
    (*n.mutable_sysctls())["net.ipv4.ip_unprivileged_port_start"] = "0";
    (*n.mutable_sysctls())["net.core.somaxconn"] = "1234";
    return ConfigureGuestNetwork(n, {.resolv_conf = resolv});
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  const std::string in = "ip netns exec " + ns + " ";
  std::string addr = Shell(in + "ip addr show eth7");
  EXPECT_NE(addr.find("inet 127.201.0.9/24"), std::string::npos) << addr;
  EXPECT_NE(addr.find("mtu 1400"), std::string::npos) << addr;
  EXPECT_NE(Shell(in + "ip link show lo").find(",UP"), std::string::npos);
  std::string main = Shell(in + "ip route show");
  EXPECT_NE(main.find("default via 127.201.0.1 dev eth7"), std::string::npos) << main;
  std::string local = Shell(in + "ip route show table local");
  EXPECT_NE(local.find("local 127.0.0.1 dev lo"), std::string::npos) << local;
  EXPECT_EQ(local.find("local 127.0.0.0/8"), std::string::npos) << local;
  EXPECT_EQ(Shell(in + "cat /proc/sys/net/ipv4/conf/all/route_localnet"), "1\n");
  EXPECT_EQ(Shell(in + "cat /proc/sys/net/ipv4/conf/eth7/route_localnet"), "1\n");
  EXPECT_EQ(Shell(in + "cat /proc/sys/net/ipv4/ip_unprivileged_port_start"), "0\n");
  EXPECT_EQ(Shell(in + "cat /proc/sys/net/core/somaxconn"), "1234\n");
  std::ifstream r(resolv);
  std::stringstream content;
  content << r.rdbuf();
  EXPECT_EQ(content.str(), "nameserver 127.201.0.53\n");
  std::filesystem::remove(resolv);

  // A MAC no NIC has: NotFound.
  status = InNetns(ns, [&] {
    return ConfigureGuestNetwork(PodNetwork("10.5.0.2", "0a:00:00:00:00:01"),
                                 {.resolv_conf = resolv});
  });
  EXPECT_EQ(status.code(), Code::kNotFound) << status.ToString();
  EXPECT_EQ(std::system(("ip netns del " + ns).c_str()), 0);
}

// A clone of a template VM: its NIC has the template's MAC (guest_mac) and
// gets the pod's before anything else is set on it.
TEST(GuestNetworkNetnsTest, ACloneNicGetsThePodsMac) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string ns = "hull-ut-clone-" + std::to_string(::getpid());
  AddNetnsWithNic(ns, "02:68:75:6c:6c:01");
  const std::string resolv =
      std::filesystem::temp_directory_path() / ("hull-ut-resolv-c-" + std::to_string(::getpid()));
  Status status = InNetns(ns, [&] {
    pb::Network n = PodNetwork("127.201.0.10", "0a:58:7f:c9:00:0a");
    n.mutable_interfaces(0)->set_guest_mac("02:68:75:6c:6c:01");
    return ConfigureGuestNetwork(n, {.resolv_conf = resolv});
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  std::string addr = Shell("ip netns exec " + ns + " ip addr show eth7");
  EXPECT_NE(addr.find("link/ether 0a:58:7f:c9:00:0a"), std::string::npos) << addr;
  EXPECT_NE(addr.find("inet 127.201.0.10/24"), std::string::npos) << addr;
  std::filesystem::remove(resolv);
  EXPECT_EQ(std::system(("ip netns del " + ns).c_str()), 0);
}

}  // namespace
}  // namespace hull::agent
