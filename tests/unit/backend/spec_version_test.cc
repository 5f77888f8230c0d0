// Fitting a spec's ociVersion to a runtime that checks it (crun): down-level
// when the spec uses nothing newer, else FailedPrecondition; and the crun
// version table. The real crun run is in tests/integration (containerd 2.x).
#include "runtime/oci_cli/spec_version.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "runtime/oci_cli/features.h"
#include "runtime/oci_cli/flavour.h"
#include "tests/unit/backend/testdata.h"

namespace hull::runtime::oci_cli {
namespace {

using nlohmann::json;

// What containerd 2.1.5 writes for `ctr run` (abridged).
json Containerd2Spec() {
  return json{{"ociVersion", "1.2.1"},
              {"process", {{"args", {"sh"}}, {"cwd", "/"}}},
              {"root", {{"path", "rootfs"}}},
              {"linux",
               {{"namespaces", {{{"type", "pid"}}, {{"type", "mount"}}}},
                {"resources", {{"devices", json::array()}}}}}};
}

TEST(FitSpecVersionTest, NothingNewerIsDownLevelled) {
  EXPECT_EQ(FitSpecVersion(Containerd2Spec(), "1.1.0", "crun").value(), "1.1.0");
  // Build and pre-release suffixes do not matter; the result is M.m.0.
  EXPECT_EQ(FitSpecVersion(Containerd2Spec(), "1.1.0+dev", "crun").value(), "1.1.0");
  // 1.0 runtime: nothing of 1.1 or 1.2 in the spec either.
  EXPECT_EQ(FitSpecVersion(Containerd2Spec(), "1.0.0", "crun").value(), "1.0.0");
}

TEST(FitSpecVersionTest, NotNewerGoesAsItIs) {
  for (const char* v : {"1.1.0", "1.0.2-dev", "1.1.0-rc.1", "1.0.0"}) {
    json spec = Containerd2Spec();
    spec["ociVersion"] = v;
    EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "") << v;
  }
  // Same minor, newer patch, no newer field.
  EXPECT_EQ(FitSpecVersion(Containerd2Spec(), "1.2.0", "crun").value(), "");
  // Unreadable versions: the runtime decides.
  json spec = Containerd2Spec();
  spec["ociVersion"] = "banana";
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "");
  EXPECT_EQ(FitSpecVersion(Containerd2Spec(), "", "crun").value(), "");
  spec.erase("ociVersion");
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "");
}

TEST(FitSpecVersionTest, NewerFieldIsFailedPreconditionNamingBothVersions) {
  json spec = Containerd2Spec();
  spec["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_RT"}, {"priority", 1}};
  // Debian's crun 1.8.1 knows 1.1.0-rc.1; ioPriority came in 1.1.0-rc.3.
  Result<std::string> fit = FitSpecVersion(spec, "1.1.0-rc.1", "crun");
  ASSERT_FALSE(fit.has_value());
  EXPECT_EQ(fit.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(fit.error().message().find("1.1.0-rc.1"), std::string::npos) << fit.error().ToString();
  EXPECT_NE(fit.error().message().find("1.2.1"), std::string::npos) << fit.error().ToString();
  EXPECT_NE(fit.error().message().find("/process/ioPriority"), std::string::npos);
  // A crun that knows 1.1.0 takes it.
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "1.1.0");

  // A 1.1 field matters to a 1.0 runtime, not to a 1.1 one.
  spec = Containerd2Spec();
  spec["linux"]["namespaces"].push_back({{"type", "time"}});
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "1.1.0");
  EXPECT_EQ(FitSpecVersion(spec, "1.0.0", "crun").error().code(), Code::kFailedPrecondition);
  // The time namespace is 1.1.0-rc.2's.
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0-rc.1", "crun").error().code(), Code::kFailedPrecondition);
  spec = Containerd2Spec();
  spec["mounts"] = {{{"destination", "/x"}, {"uidMappings", json::array()}}};
  EXPECT_EQ(FitSpecVersion(spec, "1.0.0", "crun").error().code(), Code::kFailedPrecondition);
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0-rc.1", "crun").value(), "1.1.0");
  // 1.2.0's idmap mount option.
  spec = Containerd2Spec();
  spec["mounts"] = {{{"destination", "/x"}, {"options", {"rbind", "idmap"}}}};
  EXPECT_NE(FitSpecVersion(spec, "1.1.0", "crun").error().message().find("(idmap)"),
            std::string::npos);
  // 1.2.1's execCPUAffinity, even within 1.2.
  spec = Containerd2Spec();
  spec["process"]["execCPUAffinity"] = {{"initial", "0"}};
  EXPECT_EQ(FitSpecVersion(spec, "1.2.0", "crun").error().code(), Code::kFailedPrecondition);
  spec["ociVersion"] = "1.2.0";
  EXPECT_EQ(FitSpecVersion(spec, "1.2.0", "crun").value(), "");
}

// What containerd 2.3.4 writes (`ctr oci spec`, the spec of `ctr run`).
json Containerd23Spec() {
  return json::parse(testing::ReadTestdata("containerd-2.3.4.oci-spec.json"));
}

TEST(FitSpecVersionTest, Containerd23SpecIsDownLevelledForDebiansCrun) {
  json spec = Containerd23Spec();
  ASSERT_EQ(spec["ociVersion"], "1.3.0");
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0-rc.1", "crun").value(), "1.1.0");
  EXPECT_EQ(FitSpecVersion(spec, "1.1.0", "crun").value(), "1.1.0");
  EXPECT_EQ(FitSpecVersion(spec, "1.2.0", "crun").value(), "1.2.0");
  EXPECT_EQ(FitSpecVersion(spec, "1.3.0", "crun").value(), "");
}

TEST(FitSpecVersionTest, EachFieldOf130IsNamed) {
  const std::pair<const char*, json> fields[] = {
      {"/linux/netDevices", {{"eth1", {{"name", "eth0"}}}}},
      {"/linux/memoryPolicy", {{"mode", "MPOL_BIND"}, {"nodes", "0"}}},
      {"/linux/intelRdt/schemata", {"L3:0=ff"}},
      {"/linux/intelRdt/enableMonitoring", true},
      {"/vm/hwConfig", {{"vcpus", 2}}},
      {"/freebsd", json::object()},
  };
  for (const auto& [where, value] : fields) {
    json spec = Containerd23Spec();
    spec[json::json_pointer(where)] = value;
    for (const char* runtime_max : {"1.1.0-rc.1", "1.1.0", "1.2.1"}) {
      Result<std::string> fit = FitSpecVersion(spec, runtime_max, "crun");
      ASSERT_FALSE(fit.has_value()) << where << " " << runtime_max;
      EXPECT_EQ(fit.error().code(), Code::kFailedPrecondition);
      EXPECT_EQ(fit.error().message(), std::string("crun takes runtime-spec up to ") + runtime_max +
                                           ", the spec is 1.3.0 and uses " + where +
                                           ", which crun does not know");
    }
    EXPECT_EQ(FitSpecVersion(spec, "1.3.0", "crun").value(), "") << where;
  }
}

TEST(FitSpecVersionTest, VersionsHullDoesNotKnowAreRefused) {
  json spec = Containerd2Spec();
  for (const char* v : {"1.4.0", "1.3.1", "2.0.0"}) {
    spec["ociVersion"] = v;
    Result<std::string> fit = FitSpecVersion(spec, "1.1.0", "crun");
    ASSERT_FALSE(fit.has_value()) << v;
    EXPECT_EQ(fit.error().code(), Code::kFailedPrecondition);
    EXPECT_NE(fit.error().message().find("hull does not know what " + std::string(v) + " added"),
              std::string::npos)
        << fit.error().ToString();
  }
}

TEST(FitBundleSpecVersionTest, RewritesTheFileKeepingItsMode) {
  char dir[] = "/tmp/hull-specver-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config.json";
  std::ofstream(path) << Containerd2Spec().dump();
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::string from;
  ASSERT_TRUE(FitBundleSpecVersion(path, "1.1.0", "crun", &from).ok());
  EXPECT_EQ(from, "1.2.1");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json rewritten = json::parse(text.str());
  EXPECT_EQ(rewritten["ociVersion"], "1.1.0");
  json expected = Containerd2Spec();
  expected["ociVersion"] = "1.1.0";
  EXPECT_EQ(rewritten, expected);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Already fitted: untouched.
  from.clear();
  ASSERT_TRUE(FitBundleSpecVersion(path, "1.1.0", "crun", &from).ok());
  EXPECT_EQ(from, "");
  EXPECT_EQ(
      FitBundleSpecVersion(std::string(dir) + "/missing.json", "1.1.0", "crun", nullptr).code(),
      Code::kNotFound);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(SpecVersionMaxTest, FromFeaturesAndFromCrunsBanner) {
  EXPECT_EQ(SpecVersionMax(R"({"ociVersionMin":"1.0.0","ociVersionMax":"1.2.0"})"), "1.2.0");
  EXPECT_EQ(SpecVersionMax("{}"), "");
  EXPECT_EQ(SpecVersionMax("not json"), "");
  // Debian 12's crun 1.8.1 says "spec: 1.0.0" but takes 1.1.x, knowing 1.1.0-rc.1.
  EXPECT_EQ(CrunSpecVersionMax(testing::ReadTestdata("crun-1.8.1.version")), "1.1.0-rc.1");
  EXPECT_EQ(CrunSpecVersionMax("crun version 1.8.6\nspec: 1.0.0\n"), "1.1.0");
  EXPECT_EQ(CrunSpecVersionMax("crun version 1.14.4\nspec: 1.0.0\n"), "1.1.0");
  EXPECT_EQ(CrunSpecVersionMax("crun version 1.2\nspec: 1.0.0\n"), "1.0.0");
  EXPECT_EQ(CrunSpecVersionMax("runc version 1.1.5\n"), "");
  // Only crun checks the version.
  EXPECT_NE(CrunFlavour().spec_version_max, nullptr);
  EXPECT_EQ(RuncFlavour().spec_version_max, nullptr);
  EXPECT_EQ(RunscFlavour().spec_version_max, nullptr);
}

}  // namespace
}  // namespace hull::runtime::oci_cli
