// Several containers of one CRI pod in one shim: one backend for all (made
// once, from the first container's runtime options), the sandbox prepared
// once before the first create and torn down after the last delete, and the
// pod's size computed once from the pause container's annotations (or read
// back from the record in its bundle).
#include <filesystem>

#include "shim/pod/pod_size.h"
#include "tests/unit/shim/shim_harness.h"

namespace hull::shim::testing {
namespace {

class PodTest : public ShimHarness {
 protected:
  std::string PauseBundle() {
    return MakeBundle("pause", BundleSpec{.annotations = PauseAnnotations("pause")});
  }
  std::string AppBundle(const std::string& name) {
    return MakeBundle(name, BundleSpec{.annotations = AppAnnotations("pause")});
  }
  // Creates the pause container with PrepareSandbox held, then an app
  // container of the pod while it is; both answers still due (nulls when the
  // preparation never began).
  using Reply = std::shared_ptr<AsyncReply<tv2::CreateTaskResponse>>;
  std::pair<Reply, Reply> CreatePauseAndAppWhilePreparing() {
    factory_.configure = [](FakeBackend& b) { b.Hold("PrepareSandbox"); };
    auto pause =
        CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("pause", PauseBundle()));
    if (!RunUntil([&] { return factory_.last && fake().pending("PrepareSandbox") == 1; })) {
      return {nullptr, nullptr};
    }
    auto app =
        CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("app", AppBundle("app")));
    Barrier();
    return {pause, app};
  }
  int IndexOfCall(const std::string& method, const std::string& id = "") {
    const auto& calls = fake().calls();
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].method == method && (id.empty() || calls[i].id == id)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
};

TEST_F(PodTest, ContainersOfThePodShareOneBackend) {
  ASSERT_TRUE(CreateTask("pause", PauseBundle()).has_value());
  ASSERT_TRUE(CreateTask("app", AppBundle("app")).has_value());
  EXPECT_EQ(factory_.made, 1);
  auto creates = fake().calls_of("Create");
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[0].id, "pause");
  EXPECT_FALSE(creates[0].create->joins_sandbox);
  EXPECT_EQ(creates[1].id, "app");
  EXPECT_TRUE(creates[1].create->joins_sandbox);
  EXPECT_EQ(StatusOf("pause"), containerd::v1::types::CREATED);
  EXPECT_EQ(StatusOf("app"), containerd::v1::types::CREATED);
}

TEST_F(PodTest, SandboxIsPreparedOnceBeforeTheFirstCreate) {
  const std::string bundle = PauseBundle();
  ASSERT_TRUE(CreateTask("pause", bundle).has_value());
  ASSERT_TRUE(CreateTask("app", AppBundle("app")).has_value());
  auto prepares = fake().calls_of("PrepareSandbox");
  ASSERT_EQ(prepares.size(), 1u);
  int prepared = IndexOfCall("PrepareSandbox");
  int created = IndexOfCall("Create");
  ASSERT_GE(created, 0);
  EXPECT_LT(prepared, created);
  const SandboxRequest& req = *prepares[0].sandbox;
  EXPECT_EQ(req.id, "pause");
  EXPECT_EQ(req.bundle, bundle);
  // The pause container's spec comes with it: no backend reads a bundle.
  EXPECT_EQ(req.spec.Annotations().at("io.kubernetes.cri.container-type"), "sandbox");
  EXPECT_FALSE(req.create_sandbox_process) << "the Task API's pod has a pause container";
  EXPECT_FALSE(req.pod_cgroup.has_value()) << "the spec names no cgroupsPath";
  ASSERT_TRUE(req.size.has_value());
  // 1.5 CPUs + the default overhead -> 2 vCPUs; 256 MiB + 112 + 8 MiB.
  EXPECT_EQ(req.size->vcpus, 2u);
  EXPECT_EQ(req.size->memory_mib, 376u);
  // Computed once and recorded in the pause container's bundle.
  auto recorded = ReadPodSizeFile(bundle + "/" + std::string(kPodSizeFile));
  ASSERT_TRUE(recorded.has_value()) << recorded.error().ToString();
  EXPECT_EQ(recorded->vcpus, req.size->vcpus);
  EXPECT_EQ(recorded->memory_mib, req.size->memory_mib);
  EXPECT_FALSE(std::filesystem::exists(root_ / "app" / kPodSizeFile)) << "only the pause's";
}

TEST_F(PodTest, ARecordedSizeIsReadBack) {
  const std::string bundle = PauseBundle();
  oci::PodSize recorded;
  recorded.source = oci::SizeSource::kContainerdAnnotations;
  recorded.vcpus = 7;
  recorded.memory_mib = 999;
  ASSERT_TRUE(WritePodSizeFile(bundle, recorded).ok());
  ASSERT_TRUE(CreateTask("pause", bundle).has_value());
  auto prepares = fake().calls_of("PrepareSandbox");
  ASSERT_EQ(prepares.size(), 1u);
  ASSERT_TRUE(prepares[0].sandbox->size.has_value());
  EXPECT_EQ(prepares[0].sandbox->size->vcpus, 7u);
  EXPECT_EQ(prepares[0].sandbox->size->memory_mib, 999u);
}

TEST_F(PodTest, AContainerAskingForAnotherRuntimeIsFailedPrecondition) {
  ASSERT_TRUE(CreateTask("pause", PauseBundle()).has_value());
  const std::string other = AppBundle("app");
  runtime_for_bundle_[other] = "other-runtime";
  EXPECT_EQ(CreateTask("app", other).status().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("app") == nullptr; }));
  EXPECT_EQ(State("app").status().code(), Code::kNotFound);
  EXPECT_EQ(factory_.made, 1);
  EXPECT_EQ(fake().count("Create"), 1u);
  // The pod goes on with the runtime it has.
  EXPECT_TRUE(CreateTask("app2", AppBundle("app2")).has_value());
}

TEST_F(PodTest, SandboxIsTornDownAfterTheLastContainerIsDeleted) {
  ASSERT_TRUE(CreateTask("pause", PauseBundle()).has_value());
  ASSERT_TRUE(CreateTask("app", AppBundle("app")).has_value());
  ASSERT_TRUE(Delete("app").has_value());
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("app") == nullptr; }));
  EXPECT_GE(IndexOfCall("Release", "app"), 0);
  EXPECT_EQ(fake().count("TeardownSandbox"), 0u) << "the pause container is still there";

  ASSERT_TRUE(Delete("pause").has_value());
  ASSERT_TRUE(RunUntil([&] { return fake().count("TeardownSandbox") == 1; }));
  EXPECT_LT(IndexOfCall("Release", "pause"), IndexOfCall("TeardownSandbox"));
  EXPECT_EQ(pod_->container_count(), 0u);
}

TEST_F(PodTest, AFailedSandboxPreparationFailsTheCreate) {
  factory_.configure = [](FakeBackend& b) { b.Hold("PrepareSandbox"); };
  auto create =
      CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("pause", PauseBundle()));
  ASSERT_TRUE(RunUntil([&] { return factory_.last && fake().pending("PrepareSandbox") == 1; }));
  ASSERT_TRUE(fake().Complete("PrepareSandbox", UnavailableError("no VM")));
  ASSERT_TRUE(Await(create));
  EXPECT_EQ(create->code(), Code::kUnavailable);
  EXPECT_EQ(fake().count("Create"), 0u);
  ASSERT_TRUE(RunUntil([&] { return pod_->Get("pause") == nullptr; }));
  EXPECT_EQ(State("pause").status().code(), Code::kNotFound);
}

// Pod's sandbox phase: a container admitted while another's admission is
// preparing the sandbox waits for that one preparation (a VM is booted once),
// and shares its outcome.
TEST_F(PodTest, AdmissionsDuringThePreparationShareIt) {
  auto [pause, app] = CreatePauseAndAppWhilePreparing();
  ASSERT_TRUE(pause && app);
  EXPECT_FALSE(app->done()) << "answered before the sandbox was ready";
  EXPECT_EQ(fake().count("PrepareSandbox"), 1u);
  EXPECT_TRUE(pod_->Get("app") == nullptr) << "no Container before its admission";
  ASSERT_TRUE(fake().Complete("PrepareSandbox"));
  ASSERT_TRUE(Await(pause));
  ASSERT_TRUE(Await(app));
  EXPECT_TRUE(pause->result->has_value()) << pause->result->error().ToString();
  EXPECT_TRUE(app->result->has_value()) << app->result->error().ToString();
  EXPECT_EQ(fake().count("PrepareSandbox"), 1u);
  EXPECT_EQ(fake().count("Create"), 2u);
}

TEST_F(PodTest, AFailedPreparationFailsEveryWaitingAdmission) {
  auto [pause, app] = CreatePauseAndAppWhilePreparing();
  ASSERT_TRUE(pause && app);
  ASSERT_TRUE(fake().Complete("PrepareSandbox", UnavailableError("no VM")));
  ASSERT_TRUE(Await(pause));
  ASSERT_TRUE(Await(app));
  EXPECT_EQ(pause->code(), Code::kUnavailable);
  EXPECT_EQ(app->code(), Code::kUnavailable);
  EXPECT_EQ(fake().count("Create"), 0u);
  EXPECT_EQ(pod_->container_count(), 0u);
}

TEST_F(PodTest, ADuplicateCreateDuringAdmissionIsAlreadyExists) {
  factory_.configure = [](FakeBackend& b) { b.Hold("PrepareSandbox"); };
  const std::string bundle = PauseBundle();
  auto first = CallAsync<tv2::CreateTaskResponse>("Create", CreateRequestFor("pause", bundle));
  ASSERT_TRUE(RunUntil([&] { return factory_.last && fake().pending("PrepareSandbox") == 1; }));
  auto again = Call<tv2::CreateTaskResponse>("Create", CreateRequestFor("pause", bundle));
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  ASSERT_TRUE(fake().Complete("PrepareSandbox"));
  ASSERT_TRUE(Await(first));
  EXPECT_TRUE(first->result->has_value());
}

}  // namespace
}  // namespace hull::shim::testing
