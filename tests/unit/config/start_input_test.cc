// What `start` finds on stdin: nothing, an Any, or a BootstrapParams.

#include "shim/config/start_input.h"

#include <gtest/gtest.h>

#include "containerd/runc/v1/options.pb.h"

namespace hull::shim {
namespace {

using containerd::runtime::bootstrap::v1::BootstrapParams;

google::protobuf::Any Options() {
  containerd::runc::v1::Options o;
  o.set_binary_name("crun");
  google::protobuf::Any any;
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value(o.SerializeAsString());
  return any;
}

BootstrapParams Params(const std::string& id, const std::string& ns, bool with_options = true) {
  BootstrapParams p;
  p.set_instance_id(id);
  p.set_namespace_(ns);
  p.set_containerd_version("v2.3.0");
  p.set_containerd_ttrpc_address("/run/containerd/containerd.sock.ttrpc");
  p.set_containerd_grpc_address("/run/containerd/containerd.sock");
  p.set_socket_dir("/run/user/1000/containerd/s");
  if (with_options) *p.add_extensions()->mutable_value() = Options();
  return p;
}

TEST(StartInputTest, Empty) {
  auto input = DecodeStartInput("", "id", "ns");
  ASSERT_TRUE(input.has_value());
  EXPECT_FALSE(input->options.has_value());
  EXPECT_FALSE(input->bootstrap.has_value());
}

TEST(StartInputTest, LegacyAny) {
  auto input = DecodeStartInput(Options().SerializeAsString(), "id", "ns");
  ASSERT_TRUE(input.has_value());
  EXPECT_FALSE(input->bootstrap.has_value());
  ASSERT_TRUE(input->options.has_value());
  EXPECT_EQ(input->options->SerializeAsString(), Options().SerializeAsString());
}

TEST(StartInputTest, EmptyAnyIsNoOptions) {
  auto input = DecodeStartInput(std::string("\x0a\x00", 2), "id", "ns");  // type_url ""
  ASSERT_TRUE(input.has_value());
  EXPECT_FALSE(input->options.has_value());
}

TEST(StartInputTest, BootstrapParamsForThisTask) {
  auto input = DecodeStartInput(Params("id", "ns").SerializeAsString(), "id", "ns");
  ASSERT_TRUE(input.has_value());
  ASSERT_TRUE(input->bootstrap.has_value());
  EXPECT_EQ(input->bootstrap->socket_dir(), "/run/user/1000/containerd/s");
  ASSERT_TRUE(input->options.has_value());
  EXPECT_EQ(input->options->SerializeAsString(), Options().SerializeAsString());

  input = DecodeStartInput(Params("id", "ns", false).SerializeAsString(), "id", "ns");
  ASSERT_TRUE(input.has_value());
  EXPECT_TRUE(input->bootstrap.has_value());
  EXPECT_FALSE(input->options.has_value());
}

TEST(StartInputTest, BootstrapParamsForAnotherTaskAreReadAsAnAny) {
  // containerd's rule: only a matching instance_id and namespace make it a
  // BootstrapParams; otherwise the bytes are the legacy Any, whose type_url
  // is then the foreign id, which the config rejects.
  auto input = DecodeStartInput(Params("other", "ns").SerializeAsString(), "id", "ns");
  ASSERT_TRUE(input.has_value());
  EXPECT_FALSE(input->bootstrap.has_value());
  ASSERT_TRUE(input->options.has_value());
  EXPECT_EQ(input->options->type_url(), "other");

  input = DecodeStartInput(Params("id", "other-ns").SerializeAsString(), "id", "ns");
  ASSERT_TRUE(input.has_value());
  EXPECT_FALSE(input->bootstrap.has_value());
}

TEST(StartInputTest, GarbageIsInvalid) {
  auto input = DecodeStartInput("\xff\xff\xff\xff", "id", "ns");
  ASSERT_FALSE(input.has_value());
  EXPECT_EQ(input.error().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace hull::shim
