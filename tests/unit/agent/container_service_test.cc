// ContainerService over a socketpair with hull's ttrpc client, without a VM:
// the answers that come before any runtime runs (unknown containers, bad
// ids, specs, bundles and root filesystems), and a runtime that cannot be
// started, which must leave nothing in the state directory. The calls that
// run crun are tested in a guest (tests/integration/agent_containers_vm_test).
#include "agent/container_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>

#include "hull/agent/v1/agent.pb.h"
#include "tests/support/fake_backend.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::agent {
namespace {

namespace fs = std::filesystem;
namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;
constexpr char kService[] = "hull.agent.v1.Agent";

class ContainerServiceTest : public ::testing::Test {
 protected:
  ContainerServiceTest() {
    char tmpl[] = "/tmp/hull-agent-cs.XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/bundle/rootfs");
    auto loop = EventLoop::Create();
    EXPECT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    auto reaper = Reaper::Create(*loop_);
    EXPECT_TRUE(reaper.has_value());
    reaper_ = std::move(*reaper);
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    MakeService(dir_ + "/no-such-crun");
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    EXPECT_TRUE(server_->ServeConnection(UniqueFd(fds[0])).ok());
    auto client = ttrpc::Client::FromFd(*loop_, UniqueFd(fds[1]));
    EXPECT_TRUE(client.has_value());
    client_ = std::move(*client);
  }
  ~ContainerServiceTest() override {
    client_.reset();
    service_.reset();
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A service running `runtime`; registering replaces the earlier one's
  // handlers.
  void MakeService(const std::string& runtime, std::unique_ptr<shim::Backend> backend = nullptr) {
    service_ =
        std::make_unique<ContainerService>(*loop_, *reaper_,
                                           ContainerOptions{.runtime = runtime,
                                                            .runtime_root = dir_ + "/crun",
                                                            .state_dir = dir_ + "/state",
                                                            .set_pod_memory_max = pod_memory_hook_,
                                                            .cgroup_root = ""},
                                           std::move(backend));
    service_->Register(*server_);
  }

  Code CallCode(const char* method, const google::protobuf::MessageLite& req,
                std::chrono::milliseconds within = 5000ms) {
    auto reply = client_->CallSync(kService, method, req.SerializeAsString(),
                                   ttrpc::CallOptions{.deadline = loop_->Now() + within});
    return reply.has_value() ? Code::kOk : reply.error().code();
  }

  pb::CreateContainerRequest CreateRequest(const std::string& id) {
    pb::CreateContainerRequest req;
    req.set_container_id(id);
    req.set_bundle(dir_ + "/bundle");
    req.set_spec_json(R"({"ociVersion": "1.0.2", "process": {"args": ["true"]},
                          "root": {"path": "rootfs"}})");
    req.mutable_stdio()->set_stdout(true);
    return req;
  }

  bool StateDirEmpty() {
    std::error_code ec;
    return !fs::exists(dir_ + "/state") || fs::is_empty(dir_ + "/state", ec);
  }

  std::string dir_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<ttrpc::Server> server_;
  std::unique_ptr<ContainerService> service_;
  std::unique_ptr<ttrpc::Client> client_;
  std::function<Status(uint64_t)> pod_memory_hook_;  // MakeService's set_pod_memory_max
};

TEST_F(ContainerServiceTest, EveryCallOnAnUnknownContainerIsNotFound) {
  pb::StartContainerRequest id_only;  // field 1 is the container id in each
  id_only.set_container_id("nobody");
  for (const char* method :
       {"StartContainer", "SignalProcess", "WaitProcess", "RemoveContainer", "WriteStdin",
        "CloseStdin", "ReadStdout", "ReadStderr", "TtyWinResize", "ListProcesses", "PauseContainer",
        "ResumeContainer", "UpdateContainer", "StatsContainer"}) {
    EXPECT_EQ(CallCode(method, id_only), Code::kNotFound) << method;
  }
  pb::ExecProcessRequest exec;
  exec.set_container_id("nobody");
  exec.set_exec_id("e");
  exec.set_process_json(R"({"args": ["true"]})");
  EXPECT_EQ(CallCode("ExecProcess", exec), Code::kNotFound);
}

TEST_F(ContainerServiceTest, OomEventsLongPollUntilTheDeadline) {
  // Nothing to report: answered DeadlineExceeded before the caller's
  // deadline (the agent's margin), not left hanging.
  auto start = loop_->Now();
  EXPECT_EQ(CallCode("GetOOMEvent", pb::GetOOMEventRequest(), 400ms), Code::kDeadlineExceeded);
  EXPECT_LT(loop_->Now() - start, 2s);
}

TEST_F(ContainerServiceTest, MalformedCreatesAreInvalidArgumentAndLeaveNothing) {
  auto req = CreateRequest("../escape");
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  req = CreateRequest("c");
  req.set_bundle("relative/bundle");
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  req = CreateRequest("c");
  req.set_spec_json("{broken");
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  req = CreateRequest("c");
  req.clear_spec_json();  // and the bundle has no config.json
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  req = CreateRequest("c");
  req.set_spec_json(R"({"process": {"args": ["true"]}, "root": {"path": "missing"}})");
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  req = CreateRequest("c");
  req.mutable_stdio()->set_terminal(true);  // the spec has no terminal
  EXPECT_EQ(CallCode("CreateContainer", req), Code::kInvalidArgument);
  EXPECT_EQ(service_->container_count(), 0u);
  EXPECT_TRUE(StateDirEmpty());
}

TEST_F(ContainerServiceTest, ARuntimeThatCannotRunFailsTheCreateAndLeavesNothing) {
  auto req = CreateRequest("c");
  auto reply = client_->CallUnarySync<pb::CreateContainerResponse>(
      kService, "CreateContainer", req, ttrpc::CallOptions{.deadline = loop_->Now() + 10s});
  ASSERT_FALSE(reply.has_value());
  EXPECT_NE(reply.error().message().find("no-such-crun"), std::string::npos)
      << reply.error().ToString();
  EXPECT_EQ(service_->container_count(), 0u);
  EXPECT_TRUE(StateDirEmpty());
  // The id is free again.
  pb::StartContainerRequest start;
  start.set_container_id("c");
  EXPECT_EQ(CallCode("StartContainer", start), Code::kNotFound);
}

TEST_F(ContainerServiceTest, DestroyedWithACreateInFlightAnswersIt) {
  // A "runtime" that never finishes.
  const std::string hang = dir_ + "/hang-runtime";
  {
    std::ofstream script(hang);
    script << "#!/bin/sh\nexec sleep 60\n";
  }
  ASSERT_EQ(::chmod(hang.c_str(), 0755), 0);
  MakeService(hang);
  std::optional<Result<pb::CreateContainerResponse>> reply;
  client_->CallUnary<pb::CreateContainerResponse>(
      kService, "CreateContainer", CreateRequest("c"),
      ttrpc::CallOptions{.deadline = loop_->Now() + 10s},
      [&](Result<pb::CreateContainerResponse> r) { reply = std::move(r); });
  ASSERT_TRUE(loop_->RunUntil([&] { return service_->container_count() == 1; }, 5s));
  loop_->RunUntil([] { return false; }, 100ms);  // the runtime is running
  service_.reset();                              // kills it and answers the call
  ASSERT_TRUE(loop_->RunUntil([&] { return reply.has_value(); }, 5s));
  ASSERT_FALSE(reply->has_value());
  EXPECT_EQ(reply->error().code(), Code::kNotFound) << reply->error().ToString();
}

// The backend is a constructor parameter (what the fuzzer uses to run
// nothing): the given one runs the container, not crun.
TEST_F(ContainerServiceTest, AGivenBackendRunsTheContainers) {
  auto owned =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  shim::testing::FakeBackend& backend = *owned;
  backend.SetInitPid("c", 4242);
  MakeService(dir_ + "/no-such-crun", std::move(owned));
  auto created = client_->CallUnarySync<pb::CreateContainerResponse>(
      kService, "CreateContainer", CreateRequest("c"),
      ttrpc::CallOptions{.deadline = loop_->Now() + 5s});
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  EXPECT_EQ(created->pid(), 4242u);
  pb::StartContainerRequest start;
  start.set_container_id("c");
  EXPECT_EQ(CallCode("StartContainer", start), Code::kOk);
  EXPECT_EQ(backend.count("Create"), 1u);
  EXPECT_EQ(backend.count("Start"), 1u);
  ASSERT_TRUE(backend.FireInitExit("c", 7));
  pb::WaitProcessRequest wait;
  wait.set_container_id("c");
  auto waited = client_->CallUnarySync<pb::WaitProcessResponse>(
      kService, "WaitProcess", wait, ttrpc::CallOptions{.deadline = loop_->Now() + 5s});
  ASSERT_TRUE(waited.has_value()) << waited.error().ToString();
  EXPECT_EQ(waited->exit_status(), 7u);
  pb::RemoveContainerRequest remove;
  remove.set_container_id("c");
  EXPECT_EQ(CallCode("RemoveContainer", remove), Code::kOk);
  EXPECT_TRUE(StateDirEmpty());
}

// With headroom the host sends the pod's containers' limit with an update
// (docs/vm.md, "Resize"): set before the container's own when it goes up,
// after it when it goes down; not at all without one; and refused by an
// agent that cannot set it, before the container changes.
TEST_F(ContainerServiceTest, UpdateRaisesThePodsMemoryBeforeAndLowersItAfter) {
  std::vector<std::pair<uint64_t, size_t>> set;  // bytes, backend Updates before it
  shim::testing::FakeBackend* backend = nullptr;
  pod_memory_hook_ = [&](uint64_t bytes) {
    set.emplace_back(bytes, backend->count("Update"));
    return Status::Ok();
  };
  auto owned =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  backend = owned.get();
  backend->SetInitPid("c", 4242);
  MakeService(dir_ + "/no-such-crun", std::move(owned));
  auto created = client_->CallUnarySync<pb::CreateContainerResponse>(
      kService, "CreateContainer", CreateRequest("c"),
      ttrpc::CallOptions{.deadline = loop_->Now() + 5s});
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  pb::StartContainerRequest start;
  start.set_container_id("c");
  ASSERT_EQ(CallCode("StartContainer", start), Code::kOk);

  pb::UpdateContainerRequest update;
  update.set_container_id("c");
  update.set_resources_json(R"({"memory":{"limit":469762048}})");
  update.set_pod_memory_max_bytes(448u << 20);
  EXPECT_EQ(CallCode("UpdateContainer", update), Code::kOk);
  update.set_resources_json(R"({"memory":{"limit":268435456}})");
  update.set_pod_memory_max_bytes(256u << 20);
  EXPECT_EQ(CallCode("UpdateContainer", update), Code::kOk);
  update.clear_pod_memory_max_bytes();
  EXPECT_EQ(CallCode("UpdateContainer", update), Code::kOk);
  EXPECT_EQ(backend->count("Update"), 3u);
  const std::vector<std::pair<uint64_t, size_t>> want = {{448u << 20, 0}, {256u << 20, 2}};
  EXPECT_EQ(set, want);

  // The same agent without the hook (a fuzzer's): refused, nothing updated.
  pod_memory_hook_ = nullptr;
  auto plain =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  backend = plain.get();
  backend->SetInitPid("d", 4243);
  MakeService(dir_ + "/no-such-crun", std::move(plain));
  created = client_->CallUnarySync<pb::CreateContainerResponse>(
      kService, "CreateContainer", CreateRequest("d"),
      ttrpc::CallOptions{.deadline = loop_->Now() + 5s});
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  update.set_container_id("d");
  update.set_pod_memory_max_bytes(512u << 20);
  EXPECT_EQ(CallCode("UpdateContainer", update), Code::kFailedPrecondition);
  EXPECT_EQ(backend->count("Update"), 0u);
}

// A container made after a resize (the kubelet's RestartContainer resize
// policy) counts at its new limit: the host sends the pod's new sum with the
// create, which raises the pod's memory before the container is made; a
// create that fails puts the earlier value back; a sum that is not above
// the current one leaves it; an agent without the hook refuses a raise.
TEST_F(ContainerServiceTest, CreateRaisesThePodsMemoryAndPutsItBackWhenItFails) {
  std::vector<std::pair<uint64_t, size_t>> set;  // bytes, backend Creates before it
  shim::testing::FakeBackend* backend = nullptr;
  pod_memory_hook_ = [&](uint64_t bytes) {
    set.emplace_back(bytes, backend->count("Create"));
    return Status::Ok();
  };
  auto owned =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  backend = owned.get();
  backend->SetInitPid("a", 4242);
  backend->SetInitPid("b", 0);  // its runtime writes no pid: the create fails
  backend->SetInitPid("c", 4244);
  MakeService(dir_ + "/no-such-crun", std::move(owned));
  auto create = [&](const std::string& id, uint64_t pod_max) {
    pb::CreateContainerRequest req = CreateRequest(id);
    req.set_pod_memory_max_bytes(pod_max);
    return CallCode("CreateContainer", req);
  };
  EXPECT_EQ(create("a", 448u << 20), Code::kOk);
  EXPECT_NE(create("b", 512u << 20), Code::kOk);
  EXPECT_EQ(create("c", 256u << 20), Code::kOk);  // not above 448 MiB: unchanged
  EXPECT_EQ(backend->count("Create"), 3u);
  const std::vector<std::pair<uint64_t, size_t>> want = {
      {448u << 20, 0}, {512u << 20, 1}, {448u << 20, 2}};
  EXPECT_EQ(set, want);

  pod_memory_hook_ = nullptr;
  auto plain =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  backend = plain.get();
  MakeService(dir_ + "/no-such-crun", std::move(plain));
  EXPECT_EQ(create("d", 512u << 20), Code::kFailedPrecondition);
  EXPECT_EQ(backend->count("Create"), 0u);
  EXPECT_EQ(service_->container_count(), 0u);
  EXPECT_FALSE(fs::exists(dir_ + "/state/d"));
}

// Two creates in flight: the one that fails after the other raised the pod
// further leaves the pod at the other's value.
TEST_F(ContainerServiceTest, AFailedCreateLeavesALaterRaise) {
  std::vector<uint64_t> set;
  pod_memory_hook_ = [&](uint64_t bytes) {
    set.push_back(bytes);
    return Status::Ok();
  };
  auto owned =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  shim::testing::FakeBackend& backend = *owned;
  MakeService(dir_ + "/no-such-crun", std::move(owned));
  pb::CreateContainerRequest first = CreateRequest("a");
  first.set_pod_memory_max_bytes(256u << 20);
  ASSERT_EQ(CallCode("CreateContainer", first), Code::kOk);

  backend.Hold("Create");
  std::optional<Result<pb::CreateContainerResponse>> b_reply, c_reply;
  for (auto [id, bytes, reply] :
       {std::tuple{"b", 448u << 20, &b_reply}, std::tuple{"c", 512u << 20, &c_reply}}) {
    pb::CreateContainerRequest req = CreateRequest(id);
    req.set_pod_memory_max_bytes(bytes);
    client_->CallUnary<pb::CreateContainerResponse>(
        kService, "CreateContainer", req, ttrpc::CallOptions{.deadline = loop_->Now() + 5s},
        [reply](Result<pb::CreateContainerResponse> r) { *reply = std::move(r); });
  }
  ASSERT_TRUE(loop_->RunUntil([&] { return backend.pending("Create") == 2; }, 5s));
  ASSERT_TRUE(backend.Complete("Create", InternalError("b failed")));
  ASSERT_TRUE(backend.Complete("Create"));
  ASSERT_TRUE(loop_->RunUntil([&] { return b_reply && c_reply; }, 5s));
  EXPECT_FALSE(b_reply->has_value());
  EXPECT_TRUE(c_reply->has_value());
  const std::vector<uint64_t> want = {256u << 20, 448u << 20, 512u << 20};
  EXPECT_EQ(set, want);
}

// The pod's value set at CreateSandbox (through SetPodMemoryMax, as the
// agent wires it) is known to the first create: a create not above it
// leaves it, and a first create that raises and fails puts it back.
TEST_F(ContainerServiceTest, TheFirstCreateKnowsTheSandboxsPodMemory) {
  std::vector<uint64_t> set;
  pod_memory_hook_ = [&](uint64_t bytes) {
    set.push_back(bytes);
    return Status::Ok();
  };
  auto owned =
      std::make_unique<shim::testing::FakeBackend>(*loop_, *reaper_, shim::RuntimeOptions{});
  shim::testing::FakeBackend& backend = *owned;
  backend.SetInitPid("b", 0);  // its runtime writes no pid: the create fails
  MakeService(dir_ + "/no-such-crun", std::move(owned));
  ASSERT_TRUE(service_->SetPodMemoryMax(384u << 20).ok());  // CreateSandbox's
  auto create = [&](const std::string& id, uint64_t pod_max) {
    pb::CreateContainerRequest req = CreateRequest(id);
    req.set_pod_memory_max_bytes(pod_max);
    return CallCode("CreateContainer", req);
  };
  EXPECT_NE(create("b", 512u << 20), Code::kOk);
  EXPECT_EQ(create("a", 256u << 20), Code::kOk);  // not above 384 MiB: unchanged
  EXPECT_EQ(backend.count("Create"), 2u);
  const std::vector<uint64_t> want = {384u << 20, 512u << 20, 384u << 20};
  EXPECT_EQ(set, want);
}

}  // namespace
}  // namespace hull::agent
