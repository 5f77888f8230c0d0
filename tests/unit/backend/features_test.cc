// The features document hull builds for crun (which has no `crun features`),
// and RuntimeFeatures against the installed runtimes.
#include "runtime/oci_cli/features.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/backend.h"
#include "shim/backend/make_backend.h"
#include "tests/unit/backend/testdata.h"

namespace hull::runtime::oci_cli {
namespace {

using shim::RuntimeFeatures;
using shim::RuntimeOptions;

using nlohmann::json;

using testing::ReadTestdata;

bool OnPath(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"}) {
    if (::access((std::string(dir) + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool Contains(const json& array, const std::string& item) {
  return std::find(array.begin(), array.end(), item) != array.end();
}

const HostFacts kFacts{.capabilities = {"CAP_CHOWN", "CAP_KILL"},
                       .seccomp_archs = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"},
                       .libseccomp_version = "2.5.4"};

TEST(CrunFeaturesTest, FromTheRealVersionBanner) {
  auto doc_text = CrunFeaturesDocument(ReadTestdata("crun-1.8.1.version"), kFacts);
  ASSERT_TRUE(doc_text.has_value()) << doc_text.error().ToString();
  json doc = json::parse(*doc_text);
  EXPECT_EQ(doc["ociVersionMin"], "1.0.0");
  EXPECT_EQ(doc["ociVersionMax"], "1.0.0");  // "spec: 1.0.0"
  EXPECT_EQ(doc["hooks"].size(), 6u);
  EXPECT_TRUE(Contains(doc["mountOptions"], "rro"));
  EXPECT_TRUE(Contains(doc["mountOptions"], "idmap"));
  const json& linux_ = doc["linux"];
  EXPECT_TRUE(Contains(linux_["namespaces"], "user"));
  EXPECT_TRUE(Contains(linux_["namespaces"], "cgroup"));
  EXPECT_EQ(linux_["capabilities"], json({"CAP_CHOWN", "CAP_KILL"}));
  EXPECT_EQ(linux_["cgroup"],
            json({{"v1", true}, {"v2", true}, {"systemd", true}, {"systemdUser", true}}));
  EXPECT_EQ(linux_["seccomp"]["enabled"], true);
  EXPECT_TRUE(Contains(linux_["seccomp"]["actions"], "SCMP_ACT_NOTIFY"));
  EXPECT_TRUE(Contains(linux_["seccomp"]["operators"], "SCMP_CMP_MASKED_EQ"));
  EXPECT_EQ(linux_["seccomp"]["archs"], json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"}));
  EXPECT_EQ(linux_["apparmor"]["enabled"], true);
  EXPECT_EQ(linux_["selinux"]["enabled"], true);
  EXPECT_EQ(linux_["mountExtensions"]["idmap"]["enabled"], true);
  const json& ann = doc["annotations"];
  EXPECT_EQ(ann["run.oci.crun.version"], "1.8.1");
  EXPECT_EQ(ann["run.oci.crun.commit"], "f8a096be060b22ccd3d5f3ebe44108517fbf6c30");
  EXPECT_EQ(ann["run.oci.crun.checkpoint.enabled"], "false");  // no +CRIU
  EXPECT_EQ(ann["org.opencontainers.runc.checkpoint.enabled"], "false");
  EXPECT_EQ(ann["io.github.seccomp.libseccomp.version"], "2.5.4");
}

TEST(CrunFeaturesTest, HasTheShapeOfRuncsDocument) {
  json runc = json::parse(ReadTestdata("runc-1.1.5.features.json"));
  json crun = json::parse(*CrunFeaturesDocument(ReadTestdata("crun-1.8.1.version"), kFacts));
  for (const auto& [key, value] : runc.items()) EXPECT_TRUE(crun.contains(key)) << key;
  for (const auto& [key, value] : runc["linux"].items()) {
    EXPECT_TRUE(crun["linux"].contains(key)) << "linux." << key;
    EXPECT_EQ(crun["linux"][key].type(), value.type()) << "linux." << key;
  }
}

TEST(CrunFeaturesTest, FollowsTheBuildFlags) {
  const std::string banner =
      "crun version 1.5\ncommit: abc\nrundir: /run/crun\nspec: 1.0.0\n+CAP +CRIU +YAJL\n";
  json doc = json::parse(*CrunFeaturesDocument(banner, kFacts));
  EXPECT_EQ(doc["linux"]["seccomp"], json({{"enabled", false}}));
  EXPECT_EQ(doc["linux"]["apparmor"]["enabled"], false);
  EXPECT_EQ(doc["linux"]["cgroup"]["systemd"], false);
  EXPECT_EQ(doc["annotations"]["run.oci.crun.checkpoint.enabled"], "true");
  EXPECT_FALSE(doc["annotations"].contains("io.github.seccomp.libseccomp.version"));
}

TEST(CrunFeaturesTest, LeavesOutWhatTheHostCannotTell) {
  json doc = json::parse(*CrunFeaturesDocument(ReadTestdata("crun-1.8.1.version"), HostFacts{}));
  EXPECT_FALSE(doc["linux"].contains("capabilities"));
  EXPECT_FALSE(doc["linux"]["seccomp"].contains("archs"));
  EXPECT_FALSE(doc["annotations"].contains("io.github.seccomp.libseccomp.version"));
}

TEST(CrunFeaturesTest, RejectsAnotherBanner) {
  auto doc = CrunFeaturesDocument("runc version 1.1.5\ncommit: x\n", kFacts);
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code(), Code::kInvalidArgument);
}

TEST(HostFactsTest, LibcapAndLibseccompAnswer) {
  HostFacts facts = QueryHostFacts();
  if (facts.capabilities.empty()) GTEST_SKIP() << "libcap.so.2 not installed";
  EXPECT_EQ(facts.capabilities.front(), "CAP_CHOWN");
  EXPECT_NE(std::find(facts.capabilities.begin(), facts.capabilities.end(), "CAP_SYS_ADMIN"),
            facts.capabilities.end());
  if (facts.libseccomp_version.empty()) GTEST_SKIP() << "libseccomp.so.2 not installed";
#if defined(__x86_64__)
  EXPECT_NE(std::find(facts.seccomp_archs.begin(), facts.seccomp_archs.end(), "SCMP_ARCH_X86_64"),
            facts.seccomp_archs.end());
#endif
}

TEST(RuntimeFeaturesTest, RuncPrintsItsOwn) {
  if (!OnPath("runc")) GTEST_SKIP() << "runc not installed";
  auto doc = RuntimeFeatures(RuntimeOptions{.binary_name = "runc"});
  ASSERT_TRUE(doc.has_value()) << doc.error().ToString();
  json parsed = json::parse(*doc);
  EXPECT_TRUE(parsed.contains("ociVersionMin"));
  EXPECT_TRUE(parsed["annotations"].contains("org.opencontainers.runc.version"));
}

TEST(RuntimeFeaturesTest, CrunGetsOneBuiltByHull) {
  if (!OnPath("crun")) GTEST_SKIP() << "crun not installed";
  auto doc = RuntimeFeatures(RuntimeOptions{.binary_name = "crun"});
  ASSERT_TRUE(doc.has_value()) << doc.error().ToString();
  json parsed = json::parse(*doc);
  EXPECT_TRUE(parsed["annotations"].contains("run.oci.crun.version"));
  EXPECT_TRUE(Contains(parsed["linux"]["namespaces"], "user"));
}

TEST(RuntimeFeaturesTest, UnknownBinaryIsNotFound) {
  auto doc = RuntimeFeatures(RuntimeOptions{.binary_name = "no-such-runtime-hull"});
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code(), Code::kNotFound);
  EXPECT_NE(doc.error().message().find("no-such-runtime-hull"), std::string::npos);
}

}  // namespace
}  // namespace hull::runtime::oci_cli
