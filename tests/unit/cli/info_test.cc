// -info's RuntimeInfo and -version's line.

#include "shim/cli/info.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "containerd/runc/v1/options.pb.h"
#include "containerd/types/introspection.pb.h"
#include "google/protobuf/any.pb.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

class InfoTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-info"};  // root_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
  }

  InfoRequest Request(std::string stdin_data = "") {
    InfoRequest req;
    req.env.config_path = (root_ / "config.toml").string();
    req.stdin_data = std::move(stdin_data);
    req.features = [this](const RuntimeOptions& o) -> Result<std::string> {
      features_runtime_ = o.binary_name;
      if (fail_features_) return UnavailableError("no features");
      return std::string(R"({"ociVersionMin":"1.0.0"})");
    };
    return req;
  }

  containerd::types::RuntimeInfo Decode(const Result<std::string>& bytes) {
    EXPECT_TRUE(bytes.has_value()) << bytes.error().ToString();
    containerd::types::RuntimeInfo info;
    EXPECT_TRUE(info.ParseFromString(*bytes));
    return info;
  }

  fs::path root_;
  std::string features_runtime_;
  bool fail_features_ = false;
};

TEST_F(InfoTest, WithoutOptions) {
  auto info = Decode(RunInfo(Request()));
  EXPECT_EQ(info.name(), "io.containerd.hull.v2");
  EXPECT_FALSE(info.version().version().empty());
  EXPECT_FALSE(info.has_options());
  ASSERT_TRUE(info.has_features());
  EXPECT_EQ(info.features().type_url(),
            "types.containerd.io/opencontainers/runtime-spec/1/features/Features");
  EXPECT_EQ(info.features().value(), R"({"ociVersionMin":"1.0.0"})");
  EXPECT_EQ(features_runtime_, "runc");
}

TEST_F(InfoTest, EchoesOptionsAndUsesThem) {
  containerd::runc::v1::Options runc;
  runc.set_binary_name("crun");
  google::protobuf::Any any;
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value(runc.SerializeAsString());
  auto info = Decode(RunInfo(Request(any.SerializeAsString())));
  ASSERT_TRUE(info.has_options());
  EXPECT_EQ(info.options().SerializeAsString(), any.SerializeAsString());
  EXPECT_EQ(features_runtime_, "crun");
}

TEST_F(InfoTest, ConfigFileChoosesTheRuntime) {
  std::ofstream(root_ / "config.toml") << "runtime = \"crun\"\n";
  Decode(RunInfo(Request()));
  EXPECT_EQ(features_runtime_, "crun");
}

TEST_F(InfoTest, FeaturesLeftOutWhenTheBackendHasNone) {
  fail_features_ = true;
  auto info = Decode(RunInfo(Request()));
  EXPECT_FALSE(info.has_features());
  EXPECT_EQ(info.name(), "io.containerd.hull.v2");
}

TEST_F(InfoTest, BadOptionsAreErrors) {
  EXPECT_EQ(RunInfo(Request("\xff\xff\xff")).error().code(), Code::kInvalidArgument);
  google::protobuf::Any any;
  any.set_type_url("io.containerd.runhcs.v1.Options");
  EXPECT_EQ(RunInfo(Request(any.SerializeAsString())).error().code(), Code::kInvalidArgument);
}

TEST(VersionTest, HumanLine) {
  std::string text = VersionText();
  EXPECT_EQ(text.rfind("containerd-shim-hull-v2: version ", 0), 0u);
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace hull::shim
