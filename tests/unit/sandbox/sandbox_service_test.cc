// SandboxService: every Sandbox API call, in the right and the wrong states,
// answered with the codes containerd expects. The Pod is real, with a fake
// backend from its BackendFactory; the pause process is a fake PauseRunner;
// the bundle is a temporary directory. No root needed.
#include "shim/sandbox/sandbox_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cri/runtime/v1/api.pb.h"
#include "shim/container.h"
#include "shim/pod/pod_size.h"
#include "shim/process.h"
#include "tests/support/fake_backend.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace sb = containerd::runtime::sandbox::v1;
using std::chrono::seconds;

class NullSink : public EventSink {
 public:
  void Send(const std::string&, const google::protobuf::Any&,
            std::function<void(Status)> done) override {
    done(Status::Ok());
  }
};

class FakePause : public PauseRunner {
 public:
  explicit FakePause(EventLoop& loop) : loop_(loop) {}
  Result<pid_t> Start(const oci::Spec& spec, std::function<void(int)> on_exit) override {
    if (fail_next) return UnimplementedError("pause: cannot");
    spec_json = spec.Dump();
    on_exit_ = std::move(on_exit);
    ++starts;
    return pid_t{4242};
  }
  void Kill(pid_t pid) override {
    EXPECT_EQ(pid, 4242);
    ++kills;
    Exit(137);
  }
  // The pause process ends (killed, or on its own).
  void Exit(int status) {
    auto on_exit = std::move(on_exit_);
    on_exit_ = nullptr;
    if (on_exit) loop_.Post([on_exit, status] { on_exit(status); });
  }

  bool fail_next = false;
  int starts = 0;
  int kills = 0;
  std::string spec_json;

 private:
  EventLoop& loop_;
  std::function<void(int)> on_exit_;
};

class SandboxServiceTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-sandbox-test"};  // bundle_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    bundle_ = tmp_.path();
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(*Reaper::Create(*loop_));
    publisher_ = std::make_unique<EventPublisher>(*loop_, log_, std::make_unique<NullSink>());
    ctx_.emplace(ShimContext{
        .loop = *loop_, .reaper = *reaper_, .log = log_, .publisher = *publisher_, .ns = "k8s.io"});
    pod_ = std::make_unique<Pod>(
        *ctx_,
        [this](const RuntimeOptions&) -> Result<std::unique_ptr<Backend>> {
          auto backend = std::make_unique<testing::FakeBackend>(*loop_, *reaper_, RuntimeOptions());
          backend->runs_sandbox = backend_runs_sandbox_;
          backend_ = backend.get();
          return std::unique_ptr<Backend>(std::move(backend));
        },
        std::nullopt);
    auto pause = std::make_unique<FakePause>(*loop_);
    pause_ = pause.get();
    lifetime_ = std::make_unique<ServerLifetime>(
        *loop_, [this] { return pod_->AllDeleted(); }, [this] { ++shutdowns_; },
        ServerLifetime::Timing{.linger = std::chrono::milliseconds(0)});
    service_ = std::make_unique<SandboxService>(
        *ctx_, *pod_, [](const std::string&) -> Result<ShimConfig> { return ShimConfig(); },
        std::move(pause), *lifetime_);
  }

  void TearDown() override {
    service_.reset();
    pod_.reset();
    std::filesystem::remove_all(bundle_);
  }

  // Calls `method` and runs the loop until it answers.
  template <typename Req, typename Resp>
  Result<Resp> Call(void (SandboxService::*method)(const Req&, std::function<void(Result<Resp>)>),
                    const Req& request) {
    std::optional<Result<Resp>> answer;
    (service_.get()->*method)(request, [&](Result<Resp> r) { answer = std::move(r); });
    EXPECT_TRUE(loop_->RunUntil([&] { return answer.has_value(); }, seconds(5)));
    if (!answer) return InternalError("no answer");
    return std::move(*answer);
  }

  static ::runtime::v1::PodSandboxConfig PodConfig() {
    ::runtime::v1::PodSandboxConfig config;
    config.mutable_metadata()->set_name("web");
    config.mutable_metadata()->set_namespace_("default");
    config.mutable_metadata()->set_uid("uid-1");
    config.set_hostname("web-host");
    auto* res = config.mutable_linux()->mutable_resources();
    res->set_cpu_period(100000);
    res->set_cpu_quota(150000);
    res->set_memory_limit_in_bytes(256ll << 20);
    return config;
  }

  sb::CreateSandboxRequest CreateRequest(const std::string& id = "pod1") {
    sb::CreateSandboxRequest r;
    r.set_sandbox_id(id);
    r.set_bundle_path(bundle_);
    r.mutable_options()->set_type_url("runtime.v1.PodSandboxConfig");
    PodConfig().SerializeToString(r.mutable_options()->mutable_value());
    r.set_netns_path("");
    return r;
  }

  template <typename Req>
  static Req For(const std::string& id) {
    Req r;
    r.set_sandbox_id(id);
    return r;
  }

  Result<sb::CreateSandboxResponse> Create(const std::string& id = "pod1") {
    return Call(&SandboxService::Create, CreateRequest(id));
  }
  Result<sb::StartSandboxResponse> Start(const std::string& id = "pod1") {
    return Call(&SandboxService::Start, For<sb::StartSandboxRequest>(id));
  }
  Result<sb::StopSandboxResponse> Stop(const std::string& id = "pod1") {
    return Call(&SandboxService::Stop, For<sb::StopSandboxRequest>(id));
  }
  Result<sb::SandboxStatusResponse> StatusOf(const std::string& id = "pod1") {
    return Call(&SandboxService::Status, For<sb::SandboxStatusRequest>(id));
  }
  Result<sb::ShutdownSandboxResponse> Shutdown(const std::string& id = "pod1") {
    return Call(&SandboxService::Shutdown, For<sb::ShutdownSandboxRequest>(id));
  }

  // How many calls of `method` the pod's backend had (0 before it exists).
  size_t Calls(const std::string& method) const {
    return backend_ == nullptr ? 0 : backend_->count(method);
  }

  Logger log_ = Logger::Null();
  std::string bundle_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<EventPublisher> publisher_;
  std::optional<ShimContext> ctx_;
  testing::FakeBackend* backend_ = nullptr;
  bool backend_runs_sandbox_ = false;  // read when the pod makes its backend
  std::unique_ptr<Pod> pod_;
  FakePause* pause_ = nullptr;
  std::unique_ptr<ServerLifetime> lifetime_;
  std::unique_ptr<SandboxService> service_;
  int shutdowns_ = 0;
};

template <typename T>
Code CodeOf(const Result<T>& r) {
  return r ? Code::kOk : r.error().code();
}

TEST_F(SandboxServiceTest, EveryCallBeforeCreateIsNotFound) {
  EXPECT_EQ(CodeOf(Start()), Code::kNotFound);
  EXPECT_EQ(CodeOf(Call(&SandboxService::Platform, For<sb::PlatformRequest>("pod1"))),
            Code::kNotFound);
  EXPECT_EQ(CodeOf(Stop()), Code::kNotFound);
  EXPECT_EQ(CodeOf(Call(&SandboxService::Wait, For<sb::WaitSandboxRequest>("pod1"))),
            Code::kNotFound);
  EXPECT_EQ(CodeOf(StatusOf()), Code::kNotFound);
  EXPECT_EQ(CodeOf(Call(&SandboxService::Ping, For<sb::PingRequest>("pod1"))), Code::kNotFound);
  EXPECT_EQ(CodeOf(Shutdown()), Code::kNotFound);
  EXPECT_EQ(CodeOf(Call(&SandboxService::Metrics, For<sb::SandboxMetricsRequest>("pod1"))),
            Code::kNotFound);
  EXPECT_TRUE(lifetime_->TaskShutdown()) << "no sandbox holds the server";
  EXPECT_EQ(shutdowns_, 0);
}

TEST_F(SandboxServiceTest, CreateRejectsBadRequests) {
  auto no_id = CreateRequest("");
  EXPECT_EQ(CodeOf(Call(&SandboxService::Create, no_id)), Code::kInvalidArgument);
  auto no_bundle = CreateRequest();
  no_bundle.clear_bundle_path();
  EXPECT_EQ(CodeOf(Call(&SandboxService::Create, no_bundle)), Code::kInvalidArgument);
  auto no_options = CreateRequest();
  no_options.clear_options();
  EXPECT_EQ(CodeOf(Call(&SandboxService::Create, no_options)), Code::kInvalidArgument);
  auto wrong_type = CreateRequest();
  wrong_type.mutable_options()->set_type_url("containerd.runc.v1.Options");
  EXPECT_EQ(CodeOf(Call(&SandboxService::Create, wrong_type)), Code::kInvalidArgument);
  EXPECT_EQ(service_->state(), SandboxState::kNone);
  EXPECT_EQ(Calls("PrepareSandbox"), 0u);
  // Nothing failed for good: a correct create still works.
  EXPECT_TRUE(Create().has_value());
}

TEST_F(SandboxServiceTest, CreateSizesThePodFromThePodSandboxConfigAndPreparesIt) {
  auto prefixed = CreateRequest();
  prefixed.mutable_options()->set_type_url("type.googleapis.com/runtime.v1.PodSandboxConfig");
  ASSERT_TRUE(Call(&SandboxService::Create, prefixed).has_value());
  EXPECT_EQ(service_->state(), SandboxState::kCreated);
  EXPECT_FALSE(lifetime_->TaskShutdown()) << "the Sandbox API holds the server";
  EXPECT_EQ(Calls("PrepareSandbox"), 1u);
  ASSERT_TRUE(backend_->last_sandbox().size.has_value());
  const oci::PodSize& size = *backend_->last_sandbox().size;
  EXPECT_EQ(size.source, oci::SizeSource::kPodSandboxConfig);
  EXPECT_EQ(size.pod_cpu_millis, 1500u);
  EXPECT_EQ(size.pod_memory_bytes, 256ull << 20);
  EXPECT_EQ(backend_->last_sandbox().id, "pod1");
  EXPECT_EQ(backend_->last_sandbox().bundle, bundle_);
  // The record Pod::Size reads back.
  auto recorded = ReadPodSizeFile(bundle_ + "/" + std::string(kPodSizeFile));
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->source, oci::SizeSource::kPodSandboxConfig);
}

TEST_F(SandboxServiceTest, PrepareSandboxGetsThePodsSpec) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(backend_->last_sandbox().create_sandbox_process);
  const auto annotations = backend_->last_sandbox().spec.Annotations();
  EXPECT_EQ(annotations.at("io.kubernetes.cri.container-type"), "sandbox");
  EXPECT_EQ(annotations.at("io.kubernetes.cri.sandbox-id"), "pod1");
  EXPECT_EQ(backend_->last_sandbox().spec.Hostname(), "web-host");
}

// runsc: the backend's own sandbox holds the pod, not hull's pause process.
TEST_F(SandboxServiceTest, ABackendWithASandboxProcessRunsItInsteadOfThePauseProcess) {
  backend_runs_sandbox_ = true;
  ASSERT_TRUE(Create().has_value());
  auto started = Start();
  ASSERT_TRUE(started.has_value()) << started.error().ToString();
  EXPECT_EQ(started->pid(), 777u);
  EXPECT_EQ(Calls("StartSandbox"), 1u);
  EXPECT_EQ(pause_->starts, 0);
  auto status = StatusOf();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state(), "SANDBOX_READY");
  EXPECT_EQ(status->pid(), 777u);
  // Start twice: FailedPrecondition, the backend is not asked again.
  EXPECT_EQ(CodeOf(Start()), Code::kFailedPrecondition);
  EXPECT_EQ(Calls("StartSandbox"), 1u);

  ASSERT_TRUE(Stop().has_value());
  EXPECT_EQ(Calls("StopSandbox"), 1u);
  EXPECT_EQ(pause_->kills, 0);
  auto waited = Call(&SandboxService::Wait, For<sb::WaitSandboxRequest>("pod1"));
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->exit_status(), 137u);
  EXPECT_EQ(StatusOf()->state(), "SANDBOX_NOTREADY");

  ASSERT_TRUE(Shutdown().has_value());
  EXPECT_EQ(Calls("TeardownSandbox"), 1u);
  EXPECT_EQ(shutdowns_, 1);
}

TEST_F(SandboxServiceTest, CreateTwiceIsAlreadyExists) {
  ASSERT_TRUE(Create().has_value());
  EXPECT_EQ(CodeOf(Create()), Code::kAlreadyExists);
  EXPECT_EQ(CodeOf(Create("pod2")), Code::kAlreadyExists);
  EXPECT_EQ(Calls("PrepareSandbox"), 1u);
}

TEST_F(SandboxServiceTest, AnotherSandboxIdIsNotFound) {
  ASSERT_TRUE(Create().has_value());
  EXPECT_EQ(CodeOf(Start("other")), Code::kNotFound);
  EXPECT_EQ(CodeOf(StatusOf("other")), Code::kNotFound);
  EXPECT_EQ(CodeOf(Shutdown("other")), Code::kNotFound);
}

TEST_F(SandboxServiceTest, StartRunsThePauseProcessFromThePauseSpec) {
  ASSERT_TRUE(Create().has_value());
  auto started = Start();
  ASSERT_TRUE(started.has_value()) << started.error().ToString();
  EXPECT_EQ(started->pid(), 4242u);
  EXPECT_GT(started->created_at().seconds(), 0);
  EXPECT_EQ(pause_->starts, 1);
  // The spec the pause process ran from, and the one containerd gets back.
  auto spec = nlohmann::json::parse(pause_->spec_json);
  EXPECT_EQ(spec["hostname"], "web-host");
  EXPECT_EQ(spec["annotations"]["io.kubernetes.cri.container-type"], "sandbox");
  EXPECT_EQ(spec["annotations"]["io.kubernetes.cri.sandbox-id"], "pod1");
  EXPECT_EQ(started->spec().value(), pause_->spec_json);
  EXPECT_NE(started->spec().type_url().find("runtime-spec"), std::string::npos);

  auto status = StatusOf();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->sandbox_id(), "pod1");
  EXPECT_EQ(status->state(), "SANDBOX_READY");
  EXPECT_EQ(status->pid(), 4242u);
  EXPECT_EQ(status->created_at().seconds(), started->created_at().seconds());
  EXPECT_EQ(status->exited_at().seconds(), ZeroTime().seconds());  // Go's zero time
}

TEST_F(SandboxServiceTest, StartTwiceIsFailedPrecondition) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  EXPECT_EQ(CodeOf(Start()), Code::kFailedPrecondition);
  EXPECT_EQ(pause_->starts, 1);
}

TEST_F(SandboxServiceTest, AFailedStartLeavesTheSandboxCreated) {
  ASSERT_TRUE(Create().has_value());
  pause_->fail_next = true;
  EXPECT_EQ(CodeOf(Start()), Code::kUnimplemented);
  EXPECT_EQ(service_->state(), SandboxState::kCreated);
  pause_->fail_next = false;
  EXPECT_TRUE(Start().has_value());
}

TEST_F(SandboxServiceTest, WaitAnswersWhenStopEndsThePauseProcess) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  std::optional<Result<sb::WaitSandboxResponse>> waited;
  service_->Wait(For<sb::WaitSandboxRequest>("pod1"),
                 [&](Result<sb::WaitSandboxResponse> r) { waited = std::move(r); });
  loop_->RunUntil([] { return false; }, std::chrono::milliseconds(20));
  EXPECT_FALSE(waited.has_value()) << "Wait answered while the sandbox runs";

  ASSERT_TRUE(Stop().has_value());
  EXPECT_EQ(pause_->kills, 1);
  ASSERT_TRUE(loop_->RunUntil([&] { return waited.has_value(); }, seconds(5)));
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ((*waited)->exit_status(), 137u);
  EXPECT_GT((*waited)->exited_at().seconds(), 0);

  auto status = StatusOf();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state(), "SANDBOX_NOTREADY");
  EXPECT_EQ(status->exited_at().seconds(), (*waited)->exited_at().seconds());
  // Stopped: stopping again is fine, starting again is not; Wait answers now.
  EXPECT_TRUE(Stop().has_value());
  EXPECT_EQ(pause_->kills, 1);
  EXPECT_EQ(CodeOf(Start()), Code::kFailedPrecondition);
  auto again = Call(&SandboxService::Wait, For<sb::WaitSandboxRequest>("pod1"));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->exit_status(), 137u);
}

TEST_F(SandboxServiceTest, TwoStopsAtOnceSignalThePauseProcessOnce) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  int answered = 0;
  auto count = [&](Result<sb::StopSandboxResponse> r) {
    EXPECT_TRUE(r.has_value());
    ++answered;
  };
  service_->Stop(For<sb::StopSandboxRequest>("pod1"), count);
  service_->Stop(For<sb::StopSandboxRequest>("pod1"), count);
  ASSERT_TRUE(loop_->RunUntil([&] { return answered == 2; }, seconds(5)));
  EXPECT_EQ(pause_->kills, 1);
}

TEST_F(SandboxServiceTest, ThePauseProcessExitingStopsTheSandbox) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  pause_->Exit(2);
  auto waited = Call(&SandboxService::Wait, For<sb::WaitSandboxRequest>("pod1"));
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->exit_status(), 2u);
  EXPECT_EQ(service_->state(), SandboxState::kStopped);
  EXPECT_EQ(StatusOf()->state(), "SANDBOX_NOTREADY");
}

TEST_F(SandboxServiceTest, StopBeforeStartStopsAtOnce) {
  ASSERT_TRUE(Create().has_value());
  EXPECT_EQ(StatusOf()->state(), "SANDBOX_NOTREADY");
  ASSERT_TRUE(Stop().has_value());
  EXPECT_EQ(pause_->kills, 0);
  EXPECT_EQ(service_->state(), SandboxState::kStopped);
  auto waited = Call(&SandboxService::Wait, For<sb::WaitSandboxRequest>("pod1"));
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->exit_status(), 0u);
  EXPECT_EQ(CodeOf(Start()), Code::kFailedPrecondition);
}

TEST_F(SandboxServiceTest, PlatformAndPingOnceCreated) {
  ASSERT_TRUE(Create().has_value());
  auto platform = Call(&SandboxService::Platform, For<sb::PlatformRequest>("pod1"));
  ASSERT_TRUE(platform.has_value());
  EXPECT_EQ(platform->platform().os(), "linux");
  EXPECT_FALSE(platform->platform().architecture().empty());
  EXPECT_TRUE(Call(&SandboxService::Ping, For<sb::PingRequest>("pod1")).has_value());
}

TEST_F(SandboxServiceTest, MetricsOnlyWhileReady) {
  ASSERT_TRUE(Create().has_value());
  auto req = For<sb::SandboxMetricsRequest>("pod1");
  EXPECT_EQ(CodeOf(Call(&SandboxService::Metrics, req)), Code::kFailedPrecondition);
  ASSERT_TRUE(Start().has_value());
  auto metrics = Call(&SandboxService::Metrics, req);
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->metrics().id(), "pod1");
  EXPECT_EQ(metrics->metrics().data().type_url(), "io.containerd.cgroups.v2.Metrics");
  EXPECT_GT(metrics->metrics().timestamp().seconds(), 0);
  ASSERT_TRUE(Stop().has_value());
  EXPECT_EQ(CodeOf(Call(&SandboxService::Metrics, req)), Code::kFailedPrecondition);
}

TEST_F(SandboxServiceTest, ShutdownWithContainersLeftIsFailedPrecondition) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  ASSERT_TRUE(pod_->Add(std::make_unique<Container>(*ctx_, "app", bundle_, StdioConfig{},
                                                    ShimConfig(), *backend_, ContainerTraits{}))
                  .has_value());
  EXPECT_EQ(CodeOf(Shutdown()), Code::kFailedPrecondition);
  EXPECT_EQ(shutdowns_, 0);
  EXPECT_EQ(pause_->kills, 0);
  EXPECT_EQ(service_->state(), SandboxState::kReady);
}

TEST_F(SandboxServiceTest, TheSandboxOutlivesThePodsLastContainer) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  ASSERT_TRUE(pod_->Add(std::make_unique<Container>(*ctx_, "app", bundle_, StdioConfig{},
                                                    ShimConfig(), *backend_, ContainerTraits{}))
                  .has_value());
  pod_->DropLater("app");
  ASSERT_TRUE(loop_->RunUntil([&] { return pod_->container_count() == 0; }, seconds(5)));
  loop_->RunUntil([] { return false; }, std::chrono::milliseconds(20));
  EXPECT_EQ(Calls("TeardownSandbox"), 0u) << "torn down while the Sandbox API holds it";
  ASSERT_TRUE(Shutdown().has_value());
  EXPECT_EQ(Calls("TeardownSandbox"), 1u);
}

TEST_F(SandboxServiceTest, ShutdownEndsTheSandboxAndTheServer) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  ASSERT_TRUE(Shutdown().has_value());
  EXPECT_EQ(pause_->kills, 1);
  EXPECT_EQ(shutdowns_, 1);
  EXPECT_EQ(Calls("TeardownSandbox"), 1u);
  EXPECT_EQ(service_->state(), SandboxState::kShutdown);
  // After it: no second shutdown, no start, no stop; status still answers.
  EXPECT_EQ(CodeOf(Shutdown()), Code::kFailedPrecondition);
  EXPECT_EQ(CodeOf(Start()), Code::kFailedPrecondition);
  EXPECT_EQ(CodeOf(Stop()), Code::kFailedPrecondition);
  EXPECT_EQ(StatusOf()->state(), "SANDBOX_NOTREADY");
  EXPECT_EQ(shutdowns_, 1);
}

TEST_F(SandboxServiceTest, ShutdownAfterStop) {
  ASSERT_TRUE(Create().has_value());
  ASSERT_TRUE(Start().has_value());
  ASSERT_TRUE(Stop().has_value());
  ASSERT_TRUE(Shutdown().has_value());
  EXPECT_EQ(pause_->kills, 1);
  EXPECT_EQ(shutdowns_, 1);
}

}  // namespace
}  // namespace hull::shim
