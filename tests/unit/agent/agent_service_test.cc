// AgentService over a socketpair with hull's ttrpc client, the hooks that
// touch the machine (hostname, 9p mount, power off) replaced by recorders.
#include "agent/agent_service.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hull/agent/v1/agent.pb.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;

class AgentServiceTest : public ::testing::Test {
 protected:
  AgentServiceTest() {
    auto loop = EventLoop::Create();
    EXPECT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    service_ = std::make_unique<AgentService>(
        *loop_, AgentHooks{
                    .power_off = [this] { ++power_offs_; },
                    .mount_share =
                        [this](const std::string& tag, const std::string& path) {
                          mounts_.push_back(tag + " " + path);
                          return mount_result_;
                        },
                    .set_hostname =
                        [this](const std::string& name) {
                          hostnames_.push_back(name);
                          return Status::Ok();
                        },
                    .configure_network =
                        [this](const pb::Network& network) {
                          networks_.push_back(network.SerializeAsString());
                          return network_result_;
                        },
                    .refresh_from_host =
                        [this](int64_t unix_nano, const std::string& entropy) {
                          refreshes_.push_back({unix_nano, entropy});
                          return refresh_result_;
                        },
                    .set_pod_memory_max =
                        [this](uint64_t bytes) {
                          pod_memory_.push_back(bytes);
                          return pod_memory_result_;
                        },
                });
    service_->Register(*server_);
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    EXPECT_TRUE(server_->ServeConnection(UniqueFd(fds[0])).ok());
    auto client = ttrpc::Client::FromFd(*loop_, UniqueFd(fds[1]));
    EXPECT_TRUE(client.has_value());
    client_ = std::move(*client);
  }

  template <typename Resp, typename Req>
  Result<Resp> Call(const std::string& method, const Req& req) {
    return client_->CallUnarySync<Resp>(kAgentService, method, req);
  }

  Result<pb::CreateSandboxResponse> Create(const std::string& id, const std::string& hostname = "",
                                           const std::string& tag = "",
                                           const std::string& path = "") {
    pb::CreateSandboxRequest req;
    req.set_sandbox_id(id);
    req.set_hostname(hostname);
    req.set_share_tag(tag);
    req.set_share_path(path);
    return Call<pb::CreateSandboxResponse>("CreateSandbox", req);
  }

  Result<pb::DestroySandboxResponse> Destroy(const std::string& id) {
    pb::DestroySandboxRequest req;
    req.set_sandbox_id(id);
    return Call<pb::DestroySandboxResponse>("DestroySandbox", req);
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ttrpc::Server> server_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<ttrpc::Client> client_;
  int power_offs_ = 0;
  std::vector<std::string> mounts_;
  std::vector<std::string> hostnames_;
  Status mount_result_ = Status::Ok();
  std::vector<std::string> networks_;  // serialized
  Status network_result_ = Status::Ok();
  std::vector<std::pair<int64_t, std::string>> refreshes_;
  Status refresh_result_ = Status::Ok();
  std::vector<uint64_t> pod_memory_;
  Status pod_memory_result_ = Status::Ok();
};

TEST_F(AgentServiceTest, HelloDescribesThisMachine) {
  auto hello = Call<pb::HelloResponse>("Hello", pb::HelloRequest());
  ASSERT_TRUE(hello.has_value()) << hello.error().ToString();
  EXPECT_EQ(hello->version(), kAgentVersion);
  EXPECT_GT(hello->vcpus(), 0u);
  EXPECT_GT(hello->memory_bytes(), 0u);
  EXPECT_FALSE(hello->kernel_release().empty());
  EXPECT_EQ(hello->pid(), static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(hello->sandbox_id(), "");
}

// A clone of a template VM must not keep the template's clock or random
// state: Hello hands the host's to the guest (docs/vm.md, "Template clones").
TEST_F(AgentServiceTest, HelloRefreshesTheClockAndEntropyFromTheHost) {
  ASSERT_TRUE(Call<pb::HelloResponse>("Hello", pb::HelloRequest()).has_value());
  EXPECT_TRUE(refreshes_.empty());  // nothing given: nothing touched
  pb::HelloRequest req;
  req.set_host_time_unix_nano(1'800'000'000'123'456'789);
  req.set_entropy(std::string(64, 'e'));
  ASSERT_TRUE(Call<pb::HelloResponse>("Hello", req).has_value());
  ASSERT_EQ(refreshes_.size(), 1u);
  EXPECT_EQ(refreshes_[0].first, 1'800'000'000'123'456'789);
  EXPECT_EQ(refreshes_[0].second, std::string(64, 'e'));
  refresh_result_ = PermissionDeniedError("clock_settime: Operation not permitted");
  auto failed = Call<pb::HelloResponse>("Hello", req);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), Code::kPermissionDenied);
}

TEST_F(AgentServiceTest, CreateSandboxSetsTheHostnameMountsTheShareAndIsIdempotent) {
  ASSERT_TRUE(Create("pod", "pod-host", "hullpod", "/run/hull/pod").has_value());
  EXPECT_EQ(hostnames_, std::vector<std::string>{"pod-host"});
  EXPECT_EQ(mounts_, std::vector<std::string>{"hullpod /run/hull/pod"});
  auto hello = Call<pb::HelloResponse>("Hello", pb::HelloRequest());
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->sandbox_id(), "pod");
  EXPECT_EQ(hello->hostname(), "pod-host");

  // Again for the same pod (a host that reconnected): OK, nothing redone.
  ASSERT_TRUE(Create("pod", "pod-host", "hullpod", "/run/hull/pod").has_value());
  EXPECT_EQ(mounts_.size(), 1u);
  auto other = Create("other");
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code(), Code::kAlreadyExists);
}

TEST_F(AgentServiceTest, CreateSandboxRefusesBadRequestsAndReportsMountFailures) {
  EXPECT_EQ(Create("").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(Create("p", "", "tag", "").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(Create("p", "", "", "/x").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(Create("p", "", "tag", "relative").error().code(), Code::kInvalidArgument);
  mount_result_ = NotFoundError("mount 9p tag: No such device");
  auto failed = Create("p", "", "tag", "/x");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), Code::kNotFound);
  // Nothing was recorded: a later, good CreateSandbox goes ahead.
  mount_result_ = Status::Ok();
  EXPECT_TRUE(Create("p2").has_value());
}

TEST_F(AgentServiceTest, CreateSandboxTouchesTheNetworkOnlyWhenGivenOne) {
  ASSERT_TRUE(Create("p0").has_value());
  EXPECT_TRUE(networks_.empty());    // no `network`: not touched
  EXPECT_TRUE(pod_memory_.empty());  // nor the pod's memory

  pb::CreateSandboxRequest req;
  req.set_sandbox_id("p1");
  pb::NetworkInterface* nic = req.mutable_network()->add_interfaces();
  nic->set_name("eth0");
  nic->set_mac("0a:58:7f:c9:00:02");
  network_result_ = NotFoundError("no guest NIC has the MAC 0a:58:7f:c9:00:02");
  // Another sandbox id is AlreadyExists before the network is looked at.
  EXPECT_EQ(Call<pb::CreateSandboxResponse>("CreateSandbox", req).error().code(),
            Code::kAlreadyExists);
  EXPECT_TRUE(networks_.empty());
}

TEST_F(AgentServiceTest, CreateSandboxFailsWithTheNetworkAndRecordsNothing) {
  pb::CreateSandboxRequest req;
  req.set_sandbox_id("p1");
  pb::NetworkInterface* nic = req.mutable_network()->add_interfaces();
  nic->set_name("eth0");
  nic->set_mac("0a:58:7f:c9:00:02");
  network_result_ = NotFoundError("no guest NIC has the MAC 0a:58:7f:c9:00:02");
  auto failed = Call<pb::CreateSandboxResponse>("CreateSandbox", req);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), Code::kNotFound);
  ASSERT_EQ(networks_.size(), 1u);
  EXPECT_EQ(networks_[0], req.network().SerializeAsString());
  network_result_ = Status::Ok();
  ASSERT_TRUE(Call<pb::CreateSandboxResponse>("CreateSandbox", req).has_value());
  EXPECT_EQ(networks_.size(), 2u);
}

TEST_F(AgentServiceTest, DestroySandboxAnswersThenPowersOffOnce) {
  ASSERT_TRUE(Create("pod").has_value());
  auto wrong = Destroy("other");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Code::kNotFound);
  EXPECT_EQ(power_offs_, 0);

  ASSERT_TRUE(Destroy("pod").has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return power_offs_ == 1; }, std::chrono::seconds(5)));
  ASSERT_TRUE(Destroy("pod").has_value());  // a retry is answered, not repeated
  loop_->RunUntil([] { return false; }, std::chrono::milliseconds(20));
  EXPECT_EQ(power_offs_, 1);
}

TEST_F(AgentServiceTest, DestroySandboxWithoutASandboxStillPowersOff) {
  ASSERT_TRUE(Destroy("whatever").has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return power_offs_ == 1; }, std::chrono::seconds(5)));
}

TEST_F(AgentServiceTest, UnknownMethodsAreUnimplemented) {
  // An unknown method is Unimplemented by the ttrpc server itself.
  Result<std::string> unknown = client_->CallSync(kAgentService, "Nope", "");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), Code::kUnimplemented);
}

// With [vm] memory_headroom_mib the host sends the pod's size for the
// containers' parent cgroup: set once, before anything else of the sandbox;
// a failure to set it fails CreateSandbox and records nothing.
TEST_F(AgentServiceTest, CreateSandboxSetsThePodsMemoryWhenGivenIt) {
  pb::CreateSandboxRequest req;
  req.set_sandbox_id("p1");
  req.set_hostname("h1");
  req.set_pod_memory_max_bytes(256u << 20);
  pod_memory_result_ = InternalError("write memory.max: EBUSY");
  auto failed = Call<pb::CreateSandboxResponse>("CreateSandbox", req);
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.error().message().find("pod memory"), std::string::npos)
      << failed.error().ToString();
  EXPECT_TRUE(hostnames_.empty());  // it came first
  pod_memory_result_ = Status::Ok();
  ASSERT_TRUE(Call<pb::CreateSandboxResponse>("CreateSandbox", req).has_value());
  const std::vector<uint64_t> want = {256u << 20, 256u << 20};
  EXPECT_EQ(pod_memory_, want);
  EXPECT_EQ(hostnames_, std::vector<std::string>{"h1"});
}

// An agent without the hook (a fuzzer's) refuses a pod memory limit.
TEST(AgentServiceHooksTest, WithoutTheHookAPodMemoryLimitIsRefused) {
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  ttrpc::Server server(**loop);
  AgentService service(
      **loop,
      AgentHooks{.power_off = [] {},
                 .mount_share = [](const std::string&, const std::string&) { return Status::Ok(); },
                 .set_hostname = [](const std::string&) { return Status::Ok(); }});
  service.Register(server);
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ASSERT_TRUE(server.ServeConnection(UniqueFd(fds[0])).ok());
  auto client = ttrpc::Client::FromFd(**loop, UniqueFd(fds[1]));
  ASSERT_TRUE(client.has_value());
  pb::CreateSandboxRequest req;
  req.set_sandbox_id("p1");
  req.set_pod_memory_max_bytes(256u << 20);
  auto r = (*client)->CallUnarySync<pb::CreateSandboxResponse>(kAgentService, "CreateSandbox", req);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace hull::agent
