// oci::Spec on a CRI pause spec fixture, on real runc and containerd specs
// (round trips that must keep every unknown field), on its mutators and on
// malformed documents.

#include "oci/spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "oci/annotations.h"

namespace hull::oci {
namespace {

const std::string kPause = std::string(HULL_OCI_TESTDATA) + "/pause_config.json";
// `runc spec` (runc 1.1.5) with fields added that hull does not model: an
// unknown process member with nested values and a uint64 max, annotations with
// UTF-8, linux.intelRdt, empty arrays and objects, a vendor top-level member.
const std::string kRuncSpec =
    std::string(HULL_OCI_TESTDATA) + "/runc_1.1.5_spec_with_unknown_fields.json";
// `ctr -n k8s.io oci spec` of containerd 1.6.20: its default spec, as written.
const std::string kContainerdDefault =
    std::string(HULL_OCI_TESTDATA) + "/containerd_1.6.20_default_spec.json";

std::string Slurp(const std::string& path) {
  auto text = ReadFile(path);
  EXPECT_TRUE(text.has_value()) << path;
  return text.value_or("");
}

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

// Unmodified, a spec is written back byte for byte (same key order, same
// numbers, same UTF-8), in the indentation it came with.
TEST(SpecTest, RoundTripIsByteIdentical) {
  const std::string runc_text = Slurp(kRuncSpec);
  auto runc = Spec::Parse(runc_text);
  ASSERT_TRUE(runc.has_value()) << runc.error().ToString();
  EXPECT_EQ(runc->Dump(1, '\t'), runc_text);

  std::string containerd_text = Slurp(kContainerdDefault);
  auto containerd = Spec::Parse(containerd_text);
  ASSERT_TRUE(containerd.has_value()) << containerd.error().ToString();
  ASSERT_EQ(containerd_text.back(), '\n');
  containerd_text.pop_back();
  EXPECT_EQ(containerd->Dump(4), containerd_text);
}

// Load -> modify -> dump changes only what was modified: the result equals
// the original document with the same edits made by hand, key order included.
TEST(SpecTest, ModifiedRoundTripKeepsUnknownFields) {
  auto spec = Spec::Load(kRuncSpec);
  ASSERT_TRUE(spec.has_value());
  spec->SetAnnotation(kSandboxId, "b4r");
  spec->SetAnnotation("new.example/key", "v");
  spec->SetNamespacePath("network", "/var/run/netns/cni-1");
  spec->SetCgroupsPath("/k8s.io/abc");
  spec->SetOomScoreAdj(-998);
  ASSERT_EQ(spec->RemoveMounts("/sys/fs/cgroup"), 1u);

  auto reread = Spec::Parse(spec->Dump());
  ASSERT_TRUE(reread.has_value());
  auto original = Spec::Parse(Slurp(kRuncSpec));
  ASSERT_TRUE(original.has_value());
  SpecJson expected = original->json();
  expected["annotations"]["io.kubernetes.cri.sandbox-id"] = "b4r";
  expected["annotations"]["new.example/key"] = "v";
  expected["linux"]["namespaces"][1]["path"] = "/var/run/netns/cni-1";
  expected["linux"]["cgroupsPath"] = "/k8s.io/abc";
  expected["process"]["oomScoreAdj"] = -998;
  expected["mounts"].erase(6);
  EXPECT_EQ(reread->json(), expected);
  EXPECT_EQ(reread->json()["process"]["x-hull-unknown"]["big"].get<uint64_t>(),
            18446744073709551615u);
  EXPECT_EQ(reread->Annotation("org.example/owner"), "\xc3\xa9quipe");
  EXPECT_EQ(reread->json()["linux"]["intelRdt"]["closID"], "guaranteed_group");
}

TEST(SpecTest, Accessors) {
  auto spec = Spec::Load(kRuncSpec);
  ASSERT_TRUE(spec.has_value());
  EXPECT_TRUE(spec->Terminal());
  EXPECT_EQ(spec->Args(), std::vector<std::string>{"sh"});
  EXPECT_EQ(spec->Env().size(), 2u);
  EXPECT_EQ(spec->Cwd(), "/");
  EXPECT_EQ(spec->Hostname(), "runc");
  EXPECT_EQ(spec->OomScoreAdj(), std::nullopt);
  auto mounts = spec->Mounts();
  ASSERT_EQ(mounts.size(), 7u);
  EXPECT_EQ(mounts[0], (Mount{"/proc", "proc", "proc", {}}));
  EXPECT_EQ(mounts[5], (Mount{"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}}));
  EXPECT_TRUE(spec->Sysctls().empty());
  EXPECT_EQ(spec->CgroupsPath(), "");
}

TEST(SpecTest, Mutators) {
  auto spec = Spec::Parse(R"({"ociVersion":"1.0.2"})");
  ASSERT_TRUE(spec.has_value());
  spec->SetAnnotation("a", "1");
  spec->SetAnnotation("b", "2");
  spec->SetAnnotation("a", "3");
  EXPECT_EQ(spec->Annotations(), (std::map<std::string, std::string>{{"a", "3"}, {"b", "2"}}));
  EXPECT_TRUE(spec->RemoveAnnotation("a"));
  EXPECT_FALSE(spec->RemoveAnnotation("a"));

  spec->AddMount({"/dev/shm", "bind", "/run/shm", {"rbind", "ro"}});
  spec->AddMount({"/x", "", "", {}});
  EXPECT_EQ(spec->json()["mounts"][1], SpecJson({{"destination", "/x"}}));
  EXPECT_EQ(spec->RemoveMounts("/dev/shm"), 1u);
  EXPECT_EQ(spec->Mounts().size(), 1u);

  spec->SetNamespacePath("network", "/var/run/netns/a");
  spec->SetNamespacePath("pid", "");
  EXPECT_EQ(spec->Namespaces(),
            (std::vector<Namespace>{{"network", "/var/run/netns/a"}, {"pid", ""}}));
  spec->SetNamespacePath("network", "");
  EXPECT_FALSE(spec->json()["linux"]["namespaces"][0].contains("path"));
  EXPECT_EQ(spec->RemoveNamespace("network"), 1u);
  EXPECT_EQ(spec->RemoveNamespace("network"), 0u);

  spec->SetSysctl("net.ipv4.ping_group_range", "0 2147483647");
  EXPECT_EQ(spec->Sysctls().at("net.ipv4.ping_group_range"), "0 2147483647");
  spec->SetOomScoreAdj(-500);
  EXPECT_EQ(spec->OomScoreAdj(), -500);
  spec->SetCgroupsPath("/k8s.io/x");
  EXPECT_EQ(spec->CgroupsPath(), "/k8s.io/x");

  // Mutators replace wrong-typed containers (reachable only through
  // mutable_json) instead of throwing.
  spec->mutable_json()["annotations"] = SpecJson::array();
  spec->mutable_json()["linux"] = 7;
  spec->mutable_json()["mounts"] = "x";
  spec->SetAnnotation("k", "v");
  spec->SetSysctl("a", "b");
  spec->AddMount({"/y", "", "", {}});
  spec->SetNamespacePath("ipc", "");
  EXPECT_EQ(spec->Annotation("k"), "v");
  EXPECT_EQ(spec->Sysctls().size(), 1u);
  EXPECT_EQ(spec->Mounts().size(), 1u);
  EXPECT_EQ(spec->Namespaces().size(), 1u);
  spec->mutable_json() = SpecJson::array();
  spec->SetOomScoreAdj(1);
  EXPECT_EQ(spec->OomScoreAdj(), 1);
}

TEST(SpecTest, SaveWritesCompactJson) {
  char dir_template[] = "/tmp/hull-spec-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/config.json";
  auto spec = Spec::Load(kRuncSpec);
  ASSERT_TRUE(spec.has_value());
  ASSERT_TRUE(spec->Save(path).ok());
  EXPECT_EQ(Slurp(path), spec->Dump());
  auto again = Spec::Load(path);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->json(), spec->json());
  ::unlink(path.c_str());
  ::rmdir(dir_template);
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
           R"({"linux":{"sysctl":{"a":1}}})",
           R"({"process":{"args":"sh"}})",
           R"({"process":{"env":[1]}})",
           R"({"process":{"oomScoreAdj":"1"}})",
           R"({"mounts":{}})",
           R"({"mounts":[{"type":"bind"}]})",
           R"({"mounts":[{"destination":"/x","options":"ro"}]})",
           R"({"hostname":1})",
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

TEST(NamespacePathPidTest, ReadsOnlyProcPidNsOfTheType) {
  EXPECT_EQ(NamespacePathPid("/proc/91/ns/ipc", "ipc"), 91);
  EXPECT_EQ(NamespacePathPid("/proc/1/ns/pid", "pid"), 1);
  EXPECT_EQ(NamespacePathPid("/proc/91/ns/ipc", "uts"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/proc/self/ns/ipc", "ipc"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/proc/091/ns/ipc", "ipc"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/proc//ns/ipc", "ipc"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/proc/1234567890/ns/ipc", "ipc"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/var/run/netns/cni-1", "network"), std::nullopt);
  EXPECT_EQ(NamespacePathPid("/proc/9/ns/", ""), std::nullopt);
}

}  // namespace
}  // namespace hull::oci
