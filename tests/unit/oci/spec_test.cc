// oci::Spec on a CRI pause spec fixture and on malformed documents.

#include "oci/spec.h"

#include <gtest/gtest.h>

#include <string>

#include "oci/annotations.h"

namespace hull::oci {
namespace {

const std::string kPause = std::string(HULL_OCI_TESTDATA) + "/pause_config.json";

TEST(SpecTest, PauseFixture) {
  auto spec = Spec::Load(kPause);
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  EXPECT_EQ(spec->Annotation(kContainerType), std::string(kContainerTypeSandbox));
  EXPECT_EQ(spec->Annotation(kSandboxId),
            "4f1c0c7dbb6e1a8b1f7f2f3c7f7c6ad0bd0b4bdb0ea7f0a3c8d5e0c9f1a2b3c4");
  EXPECT_EQ(spec->Annotation(kSandboxCpuPeriod), "100000");
  EXPECT_EQ(spec->Annotation(kSandboxCpuQuota), "50000");
  EXPECT_EQ(spec->Annotation(kSandboxCpuShares), "512");
  EXPECT_EQ(spec->Annotation(kSandboxMemory), "268435456");
  EXPECT_EQ(spec->Annotation(kSandboxImageName), "registry.k8s.io/pause:3.9");
  EXPECT_EQ(spec->Annotation(kRuncGroup), std::nullopt);
  EXPECT_EQ(spec->Annotations().size(), 11u);
  EXPECT_FALSE(spec->Terminal());
  EXPECT_EQ(spec->CgroupsPath(), "kubepods-burstable-pod7d2a8f0e.slice:cri-containerd:4f1c");
  EXPECT_EQ(spec->Namespaces(), (std::vector<Namespace>{{"pid", ""},
                                                        {"ipc", ""},
                                                        {"uts", ""},
                                                        {"mount", ""},
                                                        {"network", "/var/run/netns/cni-1234"}}));
}

TEST(SpecTest, KeepsEveryField) {
  auto spec = Spec::Load(kPause);
  ASSERT_TRUE(spec.has_value());
  EXPECT_TRUE(spec->json()["linux"]["x-future-field"]["kept"].get<bool>());
  EXPECT_EQ(spec->json()["hooks"]["createRuntime"][0]["path"], "/usr/bin/true");
  auto again = Spec::Parse(spec->Dump());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->json(), spec->json());
}

TEST(SpecTest, MutableJson) {
  auto spec = Spec::Parse(R"({"process":{"terminal":false}})");
  ASSERT_TRUE(spec.has_value());
  spec->mutable_json()["process"]["terminal"] = true;
  EXPECT_TRUE(spec->Terminal());
  // A wrong type set after parsing reads as absent instead of throwing.
  spec->mutable_json()["process"]["terminal"] = "yes";
  EXPECT_FALSE(spec->Terminal());
  spec->mutable_json()["annotations"] = nlohmann::json::array();
  EXPECT_TRUE(spec->Annotations().empty());
  EXPECT_EQ(spec->Annotation(kSandboxId), std::nullopt);
}

TEST(SpecTest, MinimalDocument) {
  auto spec = Spec::Parse(R"({"ociVersion":"1.0.2","annotations":null,"linux":null})");
  ASSERT_TRUE(spec.has_value());
  EXPECT_TRUE(spec->Annotations().empty());
  EXPECT_FALSE(spec->Terminal());
  EXPECT_EQ(spec->CgroupsPath(), "");
  EXPECT_TRUE(spec->Namespaces().empty());
  EXPECT_TRUE(Spec::Parse(R"({"process":{"terminal":true}})")->Terminal());
}

TEST(SpecTest, MalformedIsInvalidArgument) {
  for (const char* text : {
           "",
           "{",
           "{\"a\":1,}",
           "[]",
           "42",
           "{} trailing",
           R"({"annotations":[]})",
           R"({"annotations":{"a":1}})",
           R"({"process":[]})",
           R"({"process":{"terminal":"yes"}})",
           R"({"linux":{"cgroupsPath":7}})",
           R"({"linux":{"namespaces":{}}})",
           R"({"linux":{"namespaces":[{"path":"/x"}]}})",
           R"({"linux":{"namespaces":[{"type":"pid","path":1}]}})",
       }) {
    auto spec = Spec::Parse(text);
    ASSERT_FALSE(spec.has_value()) << text;
    EXPECT_EQ(spec.error().code(), Code::kInvalidArgument) << text;
  }
}

TEST(SpecTest, ErrorsNameTheFile) {
  auto spec = Spec::Parse("{\n  \"a\": tru\n}");
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().message().rfind("config.json: ", 0), 0u) << spec.error().message();
}

TEST(SpecTest, MissingFileIsNotFound) {
  auto spec = Spec::Load("/nonexistent/config.json");
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace hull::oci
