// Checks that hull's .proto files encode exactly like containerd's: a few
// messages are compared byte for byte (which pins field numbers and types),
// the rest are round-tripped through the lite runtime.

#include <gtest/gtest.h>
#include <sys/sysmacros.h>  // major()/minor() macros vs. the cgroup fields of those names

#include <cstdint>
#include <string>
#include <string_view>

#include "containerd/events/task.pb.h"
#include "containerd/runc/v1/options.pb.h"
#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"
#include "containerd/runtime/sandbox/v1/sandbox.pb.h"
#include "containerd/services/events/ttrpc/v1/events.pb.h"
#include "containerd/task/v2/shim.pb.h"
#include "containerd/task/v3/shim.pb.h"
#include "containerd/types/introspection.pb.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/empty.pb.h"
#include "io/containerd/cgroups/v1/metrics.pb.h"
#include "io/containerd/cgroups/v2/metrics.pb.h"
#include "runtimeoptions/v1/options.pb.h"
#include "ttrpc/request.pb.h"

namespace {

// "0A 03 61" style, so a mismatch prints readably.
std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 0xF];
  }
  return out;
}

// Go's time.Time{} as a protobuf Timestamp: what the runc shim sends for
// processes that have not exited.
constexpr int64_t kGoZeroTimeSeconds = -62135596800;

TEST(ProtoTest, TtrpcRequestEncoding) {
  ttrpc::Request req;
  req.set_service("a.B");
  req.set_method("M");
  EXPECT_EQ(Hex(req.SerializeAsString()), "0A 03 61 2E 42 12 01 4D");

  req.set_payload("x");
  req.set_timeout_nano(5);
  auto* kv = req.add_metadata();
  kv->set_key("k");
  kv->set_value("v");
  EXPECT_EQ(Hex(req.SerializeAsString()),
            "0A 03 61 2E 42 12 01 4D 1A 01 78 20 05 2A 06 0A 01 6B 12 01 76");
}

TEST(ProtoTest, TtrpcResponseEncoding) {
  ttrpc::Response resp;
  EXPECT_EQ(resp.SerializeAsString(), "");  // OK with empty payload

  resp.mutable_status()->set_code(12);  // Unimplemented
  resp.mutable_status()->set_message("service a.B");
  EXPECT_EQ(Hex(resp.SerializeAsString()), "0A 0F 08 0C 12 0B 73 65 72 76 69 63 65 20 61 2E 42");

  ttrpc::Response parsed;
  ASSERT_TRUE(parsed.ParseFromString(resp.SerializeAsString()));
  EXPECT_TRUE(parsed.has_status());
  EXPECT_EQ(parsed.status().code(), 12);
}

TEST(ProtoTest, TaskExitEncoding) {
  containerd::events::TaskExit exit;
  exit.set_container_id("c");
  exit.set_id("e");
  exit.set_pid(7);
  exit.set_exit_status(137);
  exit.mutable_exited_at()->set_seconds(1);
  exit.mutable_exited_at()->set_nanos(2);
  EXPECT_EQ(Hex(exit.SerializeAsString()), "0A 01 63 12 01 65 18 07 20 89 01 2A 04 08 01 10 02");
}

TEST(ProtoTest, TaskDeleteEncoding) {
  containerd::events::TaskDelete del;
  del.set_container_id("c");
  del.set_pid(7);
  del.set_exit_status(1);
  del.set_id("e");
  EXPECT_EQ(Hex(del.SerializeAsString()), "0A 01 63 10 07 18 01 2A 01 65");
}

TEST(ProtoTest, DeleteResponseWithGoZeroTime) {
  containerd::task::v2::DeleteResponse resp;
  resp.set_pid(42);
  resp.set_exit_status(137);
  resp.mutable_exited_at()->set_seconds(kGoZeroTimeSeconds);
  EXPECT_EQ(Hex(resp.SerializeAsString()), "08 2A 10 89 01 1A 0B 08 80 92 B8 C3 98 FE FF FF FF 01");
}

TEST(ProtoTest, StateResponseHighFields) {
  containerd::task::v2::StateResponse state;
  state.set_status(containerd::v1::types::RUNNING);
  state.set_terminal(true);
  state.set_exec_id("x");
  EXPECT_EQ(Hex(state.SerializeAsString()), "20 02 40 01 5A 01 78");
}

TEST(ProtoTest, RuncOptionsEncoding) {
  containerd::runc::v1::Options opts;
  opts.set_binary_name("crun");
  EXPECT_EQ(Hex(opts.SerializeAsString()), "32 04 63 72 75 6E");

  opts.set_systemd_cgroup(true);
  opts.set_task_api_version(3);
  EXPECT_EQ(Hex(opts.SerializeAsString()), "32 04 63 72 75 6E 48 01 68 03");
}

TEST(ProtoTest, RuntimeOptionsEncoding) {
  runtimeoptions::v1::Options opts;
  opts.set_config_path("/p");
  opts.set_config_body("a");
  EXPECT_EQ(Hex(opts.SerializeAsString()), "12 02 2F 70 1A 01 61");
}

TEST(ProtoTest, AnyEncodingUsesBareTypeUrl) {
  containerd::events::TaskOOM oom;
  oom.set_container_id("c");
  google::protobuf::Any any;
  any.set_type_url("containerd.events.TaskOOM");
  any.set_value(oom.SerializeAsString());
  EXPECT_EQ(Hex(any.SerializeAsString()),
            "0A 19 " + Hex("containerd.events.TaskOOM") + " 12 03 0A 01 63");
}

// The lite runtime's Any helpers assume "type.googleapis.com/<name>", which
// containerd 1.6 rejects. hull sets and compares type_url itself; this test
// records why.
TEST(ProtoTest, AnyHelpersAssumePrefixedTypeUrl) {
  containerd::events::TaskOOM oom;
  google::protobuf::Any any;
  ASSERT_TRUE(any.PackFrom(oom));
  EXPECT_EQ(any.type_url(), "type.googleapis.com/containerd.events.TaskOOM");

  any.set_type_url("containerd.events.TaskOOM");
  EXPECT_FALSE(any.Is<containerd::events::TaskOOM>());
}

TEST(ProtoTest, EnvelopeRoundTrip) {
  containerd::services::events::ttrpc::v1::ForwardRequest req;
  auto* env = req.mutable_envelope();
  env->mutable_timestamp()->set_seconds(1700000000);
  env->set_namespace_("k8s.io");
  env->set_topic("/tasks/exit");
  env->mutable_event()->set_type_url("containerd.events.TaskExit");

  containerd::services::events::ttrpc::v1::ForwardRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.SerializeAsString()));
  EXPECT_EQ(parsed.envelope().timestamp().seconds(), 1700000000);
  EXPECT_EQ(parsed.envelope().namespace_(), "k8s.io");
  EXPECT_EQ(parsed.envelope().topic(), "/tasks/exit");
  EXPECT_EQ(parsed.envelope().event().type_url(), "containerd.events.TaskExit");

  // Empty, the reply of Forward and of most Task RPCs, is zero bytes.
  EXPECT_EQ(google::protobuf::Empty().SerializeAsString(), "");
}

TEST(ProtoTest, CreateTaskRequestRoundTrip) {
  containerd::task::v2::CreateTaskRequest req;
  req.set_id("ctr");
  req.set_bundle("/run/b");
  auto* m = req.add_rootfs();
  m->set_type("overlay");
  m->set_source("overlay");
  m->add_options("lowerdir=/l");
  m->add_options("upperdir=/u");
  req.set_stdout("/fifo/out");
  containerd::runc::v1::Options opts;
  opts.set_root("/run/r");
  req.mutable_options()->set_type_url("containerd.runc.v1.Options");
  req.mutable_options()->set_value(opts.SerializeAsString());

  containerd::task::v2::CreateTaskRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.SerializeAsString()));
  ASSERT_EQ(parsed.rootfs_size(), 1);
  EXPECT_EQ(parsed.rootfs(0).options(1), "upperdir=/u");
  EXPECT_EQ(parsed.stdout(), "/fifo/out");
  containerd::runc::v1::Options parsed_opts;
  ASSERT_TRUE(parsed_opts.ParseFromString(parsed.options().value()));
  EXPECT_EQ(parsed_opts.root(), "/run/r");
  EXPECT_EQ(parsed.SerializeAsString(), req.SerializeAsString());
}

TEST(ProtoTest, UpdateTaskRequestMapRoundTrip) {
  containerd::task::v2::UpdateTaskRequest req;
  req.set_id("c");
  (*req.mutable_annotations())["a"] = "1";
  (*req.mutable_annotations())["b"] = "2";
  containerd::task::v2::UpdateTaskRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.SerializeAsString()));
  EXPECT_EQ(parsed.annotations().at("b"), "2");
}

TEST(ProtoTest, CgroupV2MetricsEncoding) {
  io::containerd::cgroups::v2::Metrics metrics;
  metrics.mutable_memory_events()->set_oom_kill(3);
  EXPECT_EQ(Hex(metrics.SerializeAsString()), "42 02 28 03");

  metrics.Clear();
  metrics.mutable_memory()->set_usage(1);
  auto* io_entry = metrics.mutable_io()->add_usage();
  io_entry->set_major(8);
  io_entry->set_minor(0);
  EXPECT_EQ(Hex(metrics.SerializeAsString()), "22 03 80 02 01 32 04 0A 02 08 08");
}

TEST(ProtoTest, CgroupV1MetricsEncoding) {
  io::containerd::cgroups::v1::Metrics metrics;
  metrics.mutable_memory_oom_control()->set_oom_kill(1);
  metrics.mutable_memory()->mutable_usage()->set_limit(2);
  EXPECT_EQ(Hex(metrics.SerializeAsString()), "22 05 8A 02 02 08 02 4A 02 18 01");
}

TEST(ProtoTest, BootstrapParamsEncoding) {
  containerd::runtime::bootstrap::v1::BootstrapParams params;
  params.set_instance_id("i");
  params.set_log_level(containerd::runtime::bootstrap::v1::LOG_LEVEL_DEBUG);
  EXPECT_EQ(Hex(params.SerializeAsString()), "0A 01 69 18 FC FF FF FF FF FF FF FF FF 01");

  // socket_dir is proto3 `optional`: presence survives even when empty.
  params.set_socket_dir("");
  containerd::runtime::bootstrap::v1::BootstrapParams parsed;
  ASSERT_TRUE(parsed.ParseFromString(params.SerializeAsString()));
  EXPECT_TRUE(parsed.has_socket_dir());
}

TEST(ProtoTest, BootstrapResultEncoding) {
  containerd::runtime::bootstrap::v1::BootstrapResult result;
  result.set_version(3);
  result.set_address("unix:///s");
  result.set_protocol("ttrpc");
  EXPECT_EQ(Hex(result.SerializeAsString()),
            "08 03 12 09 " + Hex("unix:///s") + " 1A 05 " + Hex("ttrpc"));
}

TEST(ProtoTest, SandboxMessagesEncoding) {
  containerd::runtime::sandbox::v1::CreateSandboxRequest create;
  create.set_sandbox_id("p");
  create.set_netns_path("/n");
  EXPECT_EQ(Hex(create.SerializeAsString()), "0A 01 70 2A 02 2F 6E");

  containerd::runtime::sandbox::v1::SandboxStatusResponse status;
  status.set_state("SANDBOX_READY");
  status.mutable_extra()->set_type_url("t");
  EXPECT_EQ(Hex(status.SerializeAsString()), "1A 0D " + Hex("SANDBOX_READY") + " 3A 03 0A 01 74");

  containerd::runtime::sandbox::v1::PlatformResponse platform;
  platform.mutable_platform()->set_os("linux");
  platform.mutable_platform()->set_architecture("amd64");
  EXPECT_EQ(Hex(platform.SerializeAsString()),
            "0A 0E 0A 05 " + Hex("linux") + " 12 05 " + Hex("amd64"));
}

TEST(ProtoTest, RuntimeInfoEncoding) {
  containerd::types::RuntimeInfo info;
  info.set_name("io.containerd.hull.v2");
  info.mutable_features()->set_type_url("f");
  (*info.mutable_annotations())["k"] = "v";
  EXPECT_EQ(Hex(info.SerializeAsString()),
            "0A 15 " + Hex("io.containerd.hull.v2") + " 22 03 0A 01 66 2A 06 0A 01 6B 12 01 76");
}

}  // namespace
