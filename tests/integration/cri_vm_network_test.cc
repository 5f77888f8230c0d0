// A VM pod's network through CRI (the fixture: cri_vm_pod_fixture.h): a
// client on the pod's CNI bridge reaches a server in the pod on the pod IP,
// through the tap and tc redirection hull wires in the pod's namespace, with
// an unconfined server and with a confined one (whose spawner wires it,
// mounts the share and starts QEMU: docs/security.md, "VM pods confined").
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <thread>

#include "base/unique_fd.h"
#include "tests/integration/cri_vm_pod_fixture.h"

namespace hull::itest {
namespace {

// A network namespace of the test's on the pod's CNI bridge, as a client
// outside the pod: a veth to the bridge, `address`/24, and the two changes a
// 127.x address needs (route_localnet; the local 127.0.0.0/8 route narrowed
// to 127.0.0.1/32). Removed with its veth pair by the destructor.
class ClientNamespace {
 public:
  ClientNamespace(const std::string& bridge, const std::string& address)
      : name_("hull-cli-" + std::to_string(::getpid())),
        veth_("hcli" + std::to_string(::getpid() % 100000)) {
    const std::string in = "ip netns exec " + name_ + " ";
    for (const std::string& step : std::vector<std::string>{
             "ip netns add " + name_,
             "ip link add " + veth_ + " type veth peer name eth0 netns " + name_,
             "ip link set " + veth_ + " master " + bridge + " up",
             "ip -n " + name_ + " addr add " + address + "/24 dev eth0",
             "ip -n " + name_ + " link set eth0 up",
             "ip -n " + name_ + " link set lo up",
             in + "sh -c 'echo 1 >/proc/sys/net/ipv4/conf/all/route_localnet'",
             in + "sh -c 'echo 1 >/proc/sys/net/ipv4/conf/eth0/route_localnet'",
             "ip -n " + name_ + " route replace local 127.0.0.1/32 dev lo table local",
             "ip -n " + name_ + " route del local 127.0.0.0/8 dev lo table local",
         }) {
      CommandResult r = RunCommand({"sh", "-c", step});
      if (!r.ok()) {
        error_ = step + ": " + r.err;
        return;
      }
    }
  }
  ~ClientNamespace() { RunCommand({"ip", "netns", "del", name_}); }
  const std::string& error() const { return error_; }
  std::string path() const { return "/run/netns/" + name_; }

  // Connects from inside the namespace to ip:port and reads until EOF (a
  // thread of its own enters the namespace). "" on failure, with *why.
  std::string ReadFrom(const std::string& ip, int port, std::string* why) const {
    std::string answer;
    std::thread([&] {
      UniqueFd ns(::open(path().c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns.valid() || ::setns(ns.get(), CLONE_NEWNET) != 0) {
        *why = std::string("setns: ") + std::strerror(errno);
        return;
      }
      UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      timeval tv{.tv_sec = 10, .tv_usec = 0};
      ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      ::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(static_cast<uint16_t>(port));
      ::inet_pton(AF_INET, ip.c_str(), &to.sin_addr);
      if (::connect(s.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
        *why = std::string("connect: ") + std::strerror(errno);
        return;
      }
      char buf[256];
      for (ssize_t n; (n = ::read(s.get(), buf, sizeof(buf))) > 0;) answer.append(buf, n);
    }).join();
    return answer;
  }

 private:
  std::string name_, veth_, error_;
};

// A container in `pod` that answers "pod-answer" on TCP port 8080; its id,
// "" on failure.
std::string StartAnswerServer(CriClient& cri, const std::string& pod, const json& pod_config) {
  json server = {{"metadata", {{"name", "server"}}},
                 {"image", {{"image", kBusybox}}},
                 {"command", {"sh", "-c", "while true; do nc -l -p 8080 -e echo pod-answer; done"}},
                 {"log_path", "server.log"},
                 {"linux", json::object()}};
  CriReply started = cri.RunContainer(pod, pod_config, server);
  EXPECT_TRUE(started.ok) << started.error;
  return started.ok ? started.body.value("container_id", "") : "";
}

// A client namespace on the pod's bridge reads the answer from `pod_ip`.
void ExpectAnswerFrom(const std::string& bridge, const std::string& pod_ip) {
  ClientNamespace client(bridge, "127.201.0.250");
  ASSERT_EQ(client.error(), "");
  std::string answer, why;
  EXPECT_TRUE(WaitUntil(
      [&] {
        answer = client.ReadFrom(pod_ip, 8080, &why);
        return answer == "pod-answer\n";
      },
      60s))
      << "answer \"" << answer << "\", last error: " << why;
}

// The pod's network in its VM: the guest's eth0 has the pod IP CNI gave the
// pod's namespace (wired there to a tap with tc mirred), and a client
// namespace of the test's on the same bridge opens a TCP connection to a
// server in the pod on that IP and reads its answer. Stop/Remove leave no
// tap or filter (nor anything else).
TEST_P(CriVmPodTest, ClientOnTheBridgeReachesServerInVmPodOnPodIp) {
  json pod_config = PodConfig("vmnet");
  // A pod network sysctl: the guest's network is the pod's, so it is set
  // there (CreateSandbox), not in a container.
  pod_config["linux"]["sysctls"] = {{"net.core.somaxconn", "1234"}};
  const std::string pod = RunPod(pod_config);
  ASSERT_FALSE(pod.empty());
  CriReply status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(status.ok) << status.error;
  const std::string pod_ip = status.body["status"]["network"].value("ip", "");
  ASSERT_EQ(pod_ip.rfind("127.201.0.", 0), 0u) << status.body.dump();

  // The wiring in the pod's namespace (the pause spec names it).
  std::string netns;
  json spec = json::parse(ReadText(Bundle(pod) + "/config.json"), nullptr, false);
  for (const json& ns : spec["linux"]["namespaces"]) {
    if (ns.value("type", "") == "network") netns = ns.value("path", "");
  }
  ASSERT_FALSE(netns.empty());
  const std::string in_netns = "--net=" + netns;
  CommandResult tap = RunCommand({"nsenter", in_netns, "ip", "link", "show", "hulltap0"});
  EXPECT_TRUE(tap.ok()) << tap.err;
  CommandResult filter =
      RunCommand({"nsenter", in_netns, "tc", "filter", "show", "dev", "eth0", "ingress"});
  EXPECT_NE(filter.out.find("Egress Redirect to device hulltap0"), std::string::npos)
      << filter.out << filter.err;
  std::vector<pid_t> qemus = Qemus(pod);
  ASSERT_EQ(qemus.size(), 1u);
  EXPECT_NE(Cmdline(qemus[0]).find("-netdev tap,id=net0,fd=3"), std::string::npos);

  const std::string c = StartAnswerServer(*cri_, pod, pod_config);
  ASSERT_FALSE(c.empty());

  // In the guest: eth0 has the pod IP.
  CriReply addr = Exec(c, {"ip", "-4", "addr", "show", "eth0"});
  ASSERT_TRUE(addr.ok) << addr.error;
  const std::string addr_out = DecodeBase64(addr.body.value("stdout", ""));
  EXPECT_NE(addr_out.find("inet " + pod_ip + "/24"), std::string::npos) << addr_out;
  CriReply somaxconn = Exec(c, {"cat", "/proc/sys/net/core/somaxconn"});
  ASSERT_TRUE(somaxconn.ok) << somaxconn.error;
  EXPECT_EQ(DecodeBase64(somaxconn.body.value("stdout", "")), "1234\n");
  if (GetParam().v2) {
    // containerd 2.x's pause spec: unprivileged processes may bind any port.
    CriReply ports = Exec(c, {"cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"});
    ASSERT_TRUE(ports.ok) << ports.error;
    EXPECT_EQ(DecodeBase64(ports.body.value("stdout", "")), "0\n");
  }

  // The agent's log line for the set-up (its cost in the guest).
  const std::string console = ReadText("/run/hull/vm/" + pod + "/vm-console.log");
  const size_t network_line = console.find("network: 1 interface(s), ");
  ASSERT_NE(network_line, std::string::npos) << console;
  std::cout << "[ measured ] guest "
            << console.substr(network_line, console.find('\n', network_line) - network_line)
            << "\n";

  ExpectAnswerFrom(containerd_->cni_network(), pod_ip);

  RemovePodAndCheckNothingLeft(pod, ShimSocket(pod));
  // The namespace is CNI's to remove; if it is still there, no tap or
  // ingress qdisc is in it.
  if (fs::exists(netns)) {
    EXPECT_FALSE(RunCommand({"nsenter", in_netns, "ip", "link", "show", "hulltap0"}).ok());
    EXPECT_EQ(
        RunCommand({"nsenter", in_netns, "tc", "qdisc", "show", "dev", "eth0"}).out.find("ingress"),
        std::string::npos);
  }
}

// [security] confine = true in the hull-vm handler's file (docs/security.md,
// "VM pods confined"): the server keeps its four capabilities (no
// CAP_SYS_ADMIN, no CAP_NET_ADMIN) under its seccomp allow-list; its spawner
// wires the pod's network, mounts the share and starts QEMU, jailed as
// usual. The pod is the first of its shape with templates on, so the
// spawner starts the template's QEMU and the clone's, and the server passes
// the template's state file to QEMU (QMP getfd). The pod works as an
// unconfined one: a client on the bridge reaches a server in it on the pod
// IP, exec runs, and removal leaves nothing (but the template cache).
TEST_P(CriVmPodTest, ConfinedServerRunsTheVmPodAndItsNetwork) {
  UseTemplates(true);
  std::ofstream(config_dir_ + "/hull-vm.toml", std::ios::app) << "[security]\nconfine = true\n";
  json pod_config = PodConfig("vmconfined");
  const std::string pod = RunPod(pod_config);
  ASSERT_FALSE(pod.empty());
  const std::string socket = ShimSocket(pod);
  CriReply status = cri_->Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
  ASSERT_TRUE(status.ok) << status.error;
  const std::string pod_ip = status.body["status"]["network"].value("ip", "");
  ASSERT_EQ(pod_ip.rfind("127.201.0.", 0), 0u) << status.body.dump();
  EXPECT_EQ(BootOf(pod), "template+clone");

  auto field = [](pid_t pid, const std::string& key) {
    std::istringstream lines(ReadText("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(key + ":"))
        return line.substr(line.find_first_not_of(" \t", key.size() + 1));
    }
    return std::string();
  };
  std::vector<pid_t> qemus = Qemus(pod);
  ASSERT_EQ(qemus.size(), 1u);
  const pid_t spawner = std::stoi(field(qemus[0], "PPid"));
  const pid_t server = std::stoi(field(spawner, "PPid"));
  EXPECT_EQ(field(spawner, "Name"), "hull-spawner");
  // CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL: no CAP_NET_ADMIN (12),
  // no CAP_SYS_ADMIN (21).
  EXPECT_EQ(field(server, "CapEff"), "000000000000002b");
  EXPECT_EQ(field(server, "Seccomp"), "2");
  EXPECT_EQ(field(server, "NoNewPrivs"), "1");
  // QEMU: a user of its own, no capability.
  EXPECT_EQ(field(qemus[0], "CapEff"), "0000000000000000");
  EXPECT_EQ(field(qemus[0], "Uid").substr(0, 10), std::to_string(2'100'000'000 + spawner));
  EXPECT_EQ(field(qemus[0], "Seccomp"), "2");
  EXPECT_NE(Cmdline(qemus[0]).find("-netdev tap,id=net0,fd=3"), std::string::npos);

  const std::string c = StartAnswerServer(*cri_, pod, pod_config);
  ASSERT_FALSE(c.empty()) << containerd_->LogTail();
  CriReply addr = Exec(c, {"ip", "-4", "addr", "show", "eth0"});
  ASSERT_TRUE(addr.ok) << addr.error;
  EXPECT_NE(DecodeBase64(addr.body.value("stdout", "")).find("inet " + pod_ip + "/24"),
            std::string::npos);
  ExpectAnswerFrom(containerd_->cni_network(), pod_ip);
  // The shim's log (containerd's): confined, and nothing it asked refused.
  const std::string log = ReadText(containerd_->log_path());
  EXPECT_NE(log.find("confined: spawner pid " + std::to_string(spawner)), std::string::npos);
  EXPECT_EQ(log.find("spawner refused"), std::string::npos) << containerd_->LogTail();

  RemovePodAndCheckNothingLeft(pod, socket);
}

INSTANTIATE_TEST_SUITE_P(Containerd, CriVmPodTest,
                         ::testing::Values(Containerd{"v1_6", false}, Containerd{"v2", true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hull::itest
