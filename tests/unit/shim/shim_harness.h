// ShimHarness: the shim core as the server builds it (a real EventLoop and
// Reaper, an EventPublisher, a Pod, the TaskService on a ttrpc Server), with
// a FakeBackend made by the Pod's factory and a RecordingSink behind the
// publisher, driven by a ttrpc Client over a socketpair: every call goes
// through routing and status codes end to end, no root needed. Bundles are
// temporary directories holding a config.json. Loop thread only (the test's).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/empty.pb.h"
#include "shim/context.h"
#include "shim/pod/pod.h"
#include "shim/publisher.h"
#include "shim/task_service.h"
#include "tests/support/fake_backend.h"
#include "tests/unit/shim/recording_sink.h"
#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::shim::testing {

namespace tv2 = containerd::task::v2;
using Empty = google::protobuf::Empty;

inline constexpr std::chrono::seconds kDeadline(10);
inline constexpr char kTaskService[] = "containerd.task.v2.Task";

// What a bundle's config.json says.
struct BundleSpec {
  // linux.namespaces: a pid namespace of its own, one joined by path
  // (pid_ns_path set), or none at all (own_pid_ns false).
  bool own_pid_ns = true;
  std::string pid_ns_path;
  std::map<std::string, std::string> annotations;
};

// The answer to a call made with CallAsync, once it came.
template <typename Resp>
struct AsyncReply {
  std::optional<Result<Resp>> result;
  bool done() const { return result.has_value(); }
  Code code() const { return result ? result->status().code() : Code::kUnknown; }
};

// Annotations of a CRI pod's pause container and of one of its containers.
inline std::map<std::string, std::string> PauseAnnotations(const std::string& pod_id) {
  return {{"io.kubernetes.cri.container-type", "sandbox"},
          {"io.kubernetes.cri.sandbox-id", pod_id},
          {"io.kubernetes.cri.sandbox-cpu-period", "100000"},
          {"io.kubernetes.cri.sandbox-cpu-quota", "150000"},
          {"io.kubernetes.cri.sandbox-memory", "268435456"}};
}
inline std::map<std::string, std::string> AppAnnotations(const std::string& pod_id) {
  return {{"io.kubernetes.cri.container-type", "container"},
          {"io.kubernetes.cri.sandbox-id", pod_id}};
}

// FdLeakCheck first: it counts before and after everything else.
class ShimHarness : private ttrpc::testing::FdLeakCheck, public ::testing::Test {
 protected:
  ShimHarness() {
    char dir[] = "/tmp/hull-shim-test-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    loop_ = ttrpc::testing::NewLoop();
    reaper_ = std::move(*Reaper::Create(*loop_));
    factory_.loop = loop_.get();
    factory_.reaper = reaper_.get();
    auto sink = std::make_unique<RecordingSink>();
    sink_ = sink.get();
    publisher_ = std::make_unique<EventPublisher>(*loop_, log_, std::move(sink));
    ctx_ = std::make_unique<ShimContext>(ShimContext{
        .loop = *loop_, .reaper = *reaper_, .log = log_, .publisher = *publisher_, .ns = "test"});
    pod_ = std::make_unique<Pod>(*ctx_, factory_.Make(), std::nullopt);
    lifetime_ = std::make_unique<ServerLifetime>(
        *loop_, [this] { return pod_->AllDeleted(); }, [this] { shutdown_called_ = true; });
    tasks_ = std::make_unique<TaskService>(
        *ctx_, *pod_,
        [this](const google::protobuf::Any&, const std::string& bundle) -> Result<ShimConfig> {
          ShimConfig config;
          auto it = runtime_for_bundle_.find(bundle);
          config.runtime.binary_name = it == runtime_for_bundle_.end() ? "fake" : it->second;
          return config;
        },
        *lifetime_);
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    tasks_->RegisterWith(*server_);
    auto pair = ttrpc::testing::MakeSocketPair();
    EXPECT_TRUE(server_->ServeConnection(std::move(pair.b)).ok());
    client_ = std::move(*ttrpc::Client::FromFd(*loop_, std::move(pair.a)));
  }

  ~ShimHarness() override {
    client_.reset();
    server_.reset();
    tasks_.reset();
    pod_.reset();
    publisher_.reset();
    reaper_.reset();
    loop_.reset();
    std::filesystem::remove_all(root_);
  }

  // The pod's backend (made at the first Create).
  FakeBackend& fake() {
    EXPECT_NE(factory_.last, nullptr);
    return *factory_.last;
  }

  bool RunUntil(const std::function<bool()>& done) { return loop_->RunUntil(done, kDeadline); }

  // ---- bundles ----
  std::string MakeBundle(const std::string& name, const BundleSpec& spec = {}) {
    nlohmann::json namespaces = nlohmann::json::array({{{"type", "mount"}}});
    if (!spec.pid_ns_path.empty()) {
      namespaces.push_back({{"type", "pid"}, {"path", spec.pid_ns_path}});
    } else if (spec.own_pid_ns) {
      namespaces.push_back({{"type", "pid"}});
    }
    nlohmann::json config = {
        {"ociVersion", "1.0.2"},
        {"process", {{"args", {"/pause"}}, {"cwd", "/"}, {"terminal", false}}},
        {"root", {{"path", "rootfs"}}},
        {"linux", {{"namespaces", namespaces}}},
        {"annotations", spec.annotations},
    };
    return MakeBundleWith(name, config.dump());
  }
  std::string MakeBundleWith(const std::string& name, const std::string& config_json) {
    std::string bundle = (root_ / name).string();
    std::filesystem::create_directories(bundle);
    EXPECT_TRUE(WriteFileAtomic(bundle + "/config.json", config_json).ok());
    return bundle;
  }

  // ---- calls ----
  template <typename Resp, typename Req>
  Result<Resp> Call(const char* method, const Req& request) {
    ttrpc::CallOptions options;
    options.deadline = loop_->Now() + kDeadline;
    return client_->CallUnarySync<Resp>(kTaskService, method, request, options);
  }
  template <typename Resp, typename Req>
  std::shared_ptr<AsyncReply<Resp>> CallAsync(const char* method, const Req& request) {
    auto reply = std::make_shared<AsyncReply<Resp>>();
    client_->CallUnary<Resp>(kTaskService, method, request, {},
                             [reply](Result<Resp> r) { reply->result = std::move(r); });
    return reply;
  }
  // Runs until `reply` came; false on timeout.
  template <typename Resp>
  bool Await(const std::shared_ptr<AsyncReply<Resp>>& reply) {
    return RunUntil([&] { return reply->done(); });
  }
  // A call round trip: answers the server wrote before it handled this call
  // have reached the client when it returns.
  void Barrier() { (void)State("no-such-container-barrier"); }

  static tv2::CreateTaskRequest CreateRequestFor(const std::string& id, const std::string& bundle) {
    tv2::CreateTaskRequest r;
    r.set_id(id);
    r.set_bundle(bundle);
    return r;
  }
  Result<tv2::CreateTaskResponse> CreateTask(const std::string& id, const std::string& bundle) {
    return Call<tv2::CreateTaskResponse>("Create", CreateRequestFor(id, bundle));
  }
  // Creates `id` in a new bundle named after it.
  void Created(const std::string& id, const BundleSpec& spec = {}) {
    auto r = CreateTask(id, MakeBundle(id, spec));
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  void Started(const std::string& id, const BundleSpec& spec = {}) {
    ASSERT_NO_FATAL_FAILURE(Created(id, spec));
    auto r = Start(id);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }

  Result<tv2::StartResponse> Start(const std::string& id, const std::string& exec_id = "") {
    return Call<tv2::StartResponse>("Start", StartRequest(id, exec_id));
  }
  std::shared_ptr<AsyncReply<tv2::StartResponse>> StartAsync(const std::string& id,
                                                             const std::string& exec_id = "") {
    return CallAsync<tv2::StartResponse>("Start", StartRequest(id, exec_id));
  }
  Result<tv2::StateResponse> State(const std::string& id, const std::string& exec_id = "") {
    tv2::StateRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    return Call<tv2::StateResponse>("State", r);
  }
  static tv2::KillRequest KillRequest(const std::string& id, uint32_t signal, bool all = false,
                                      const std::string& exec_id = "") {
    tv2::KillRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    r.set_signal(signal);
    r.set_all(all);
    return r;
  }
  Status Kill(const std::string& id, uint32_t signal, bool all = false,
              const std::string& exec_id = "") {
    return Call<Empty>("Kill", KillRequest(id, signal, all, exec_id)).status();
  }
  Result<tv2::DeleteResponse> Delete(const std::string& id, const std::string& exec_id = "") {
    tv2::DeleteRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    return Call<tv2::DeleteResponse>("Delete", r);
  }
  Status Exec(const std::string& id, const std::string& exec_id) {
    tv2::ExecProcessRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    r.mutable_spec()->set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Process");
    r.mutable_spec()->set_value(R"({"args":["/bin/true"],"cwd":"/"})");
    return Call<Empty>("Exec", r).status();
  }
  std::shared_ptr<AsyncReply<tv2::WaitResponse>> WaitAsync(const std::string& id,
                                                           const std::string& exec_id = "") {
    tv2::WaitRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    return CallAsync<tv2::WaitResponse>("Wait", r);
  }
  Status Pause(const std::string& id) {
    tv2::PauseRequest r;
    r.set_id(id);
    return Call<Empty>("Pause", r).status();
  }
  Status Resume(const std::string& id) {
    tv2::ResumeRequest r;
    r.set_id(id);
    return Call<Empty>("Resume", r).status();
  }
  Status Update(const std::string& id, const std::string& resources_json) {
    tv2::UpdateTaskRequest r;
    r.set_id(id);
    r.mutable_resources()->set_value(resources_json);
    return Call<Empty>("Update", r).status();
  }
  Status Stats(const std::string& id) {
    tv2::StatsRequest r;
    r.set_id(id);
    return Call<tv2::StatsResponse>("Stats", r).status();
  }

  // The container's init state, as State reports it.
  containerd::v1::types::Status StatusOf(const std::string& id, const std::string& exec_id = "") {
    auto s = State(id, exec_id);
    return s ? s->status() : containerd::v1::types::UNKNOWN;
  }

  Logger log_ = Logger::Null();
  std::filesystem::path root_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  RecordingSink* sink_ = nullptr;  // owned by publisher_
  std::unique_ptr<EventPublisher> publisher_;
  std::unique_ptr<ShimContext> ctx_;
  FakeBackendFactory factory_;
  std::unique_ptr<Pod> pod_;
  std::unique_ptr<TaskService> tasks_;
  std::unique_ptr<ttrpc::Server> server_;
  std::unique_ptr<ttrpc::Client> client_;
  std::map<std::string, std::string> runtime_for_bundle_;  // bundle -> runtime binary name
  bool shutdown_called_ = false;
  std::unique_ptr<ServerLifetime> lifetime_;

 private:
  static tv2::StartRequest StartRequest(const std::string& id, const std::string& exec_id) {
    tv2::StartRequest r;
    r.set_id(id);
    r.set_exec_id(exec_id);
    return r;
  }
};

}  // namespace hull::shim::testing
