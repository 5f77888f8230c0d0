// What a confined server's spawner agrees to start (shim/security/
// spawn_policy.h): the command lines the pod's own backend builds, and the
// logging binaries the configuration lists; nothing else. Argvs are made by
// the same ArgvBuilder the backend uses. No root needed.
#include "shim/security/spawn_policy.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;
using runtime::oci_cli::Argv;
using runtime::oci_cli::ArgvBuilder;

class SpawnPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    bundles_ = fs::canonical(tmp_.path()) / "ns";
    fs::create_directories(bundles_ / "c1");
    fs::create_directories(fs::path(tmp_.path()) / "elsewhere");
    fs::create_directory_symlink(fs::path(tmp_.path()) / "elsewhere", bundles_ / "link");
    ShimConfig config;
    config.runtime.binary_name = "/bin/true";  // any executable: never run here
    config.runtime.runtime_flags = {{"network", "none"}};
    config.security.logging_binaries = {"/usr/local/bin/logger"};
    policy_.emplace(MakeSpawnPolicy(config, "k8s.io", {bundles_.string()}));
    ASSERT_TRUE(policy_->runtime_error.ok()) << policy_->runtime_error.ToString();
  }

  // The builder the backend uses for container `id`: its calls log to its
  // own bundle.
  ArgvBuilder Container(const std::string& id) const {
    runtime::oci_cli::RuntimeConfig config = policy_->runtime->config();
    config.log_path = (bundles_ / id / "log.json").string();
    return ArgvBuilder(policy_->runtime->flavour(), config);
  }

  Status Check(Argv argv) const { return CheckSpawn(*policy_, SpawnOptions{.argv = argv}); }

  hull::testing::TempDir tmp_{"hull-spawn-policy"};
  fs::path bundles_;
  std::optional<SpawnPolicy> policy_;
};

TEST_F(SpawnPolicyTest, TheBackendsOwnCallsPass) {
  const ArgvBuilder c1 = Container("c1");
  const std::string bundle = (bundles_ / "c1").string();
  runtime::CreateRequest create{.id = "c1", .bundle = bundle, .pid_file = bundle + "/init.pid"};
  for (const Argv& argv :
       {c1.Create(create), c1.Start("c1"), c1.Kill("c1", 9, true), c1.Delete("c1", true),
        c1.Ps("c1"), c1.Update("c1"), c1.Pause("c1"), policy_->runtime->List(),
        policy_->runtime->Features(), policy_->runtime->Version(), policy_->runtime->CriuCheck()}) {
    EXPECT_TRUE(Check(argv).ok()) << Check(argv).ToString();
  }
  SpawnOptions logger{.argv = {"/usr/local/bin/logger", "--any", "args"},
                      .env = std::vector<std::string>{"CONTAINER_ID=c1", "CONTAINER_NAMESPACE=ns"}};
  EXPECT_TRUE(CheckSpawn(*policy_, logger).ok());
}

TEST_F(SpawnPolicyTest, EverythingElseIsRefused) {
  const ArgvBuilder c1 = Container("c1");
  const std::string bundle = (bundles_ / "c1").string();
  Argv create = c1.Create({.id = "c1", .bundle = bundle, .pid_file = bundle + "/init.pid"});
  Argv other_binary = create;
  other_binary[0] = "/bin/sh";
  Argv run = c1.Start("c1");
  run[run.size() - 2] = "run";  // a command hull never uses
  Argv extra_flag = c1.Start("c1");
  extra_flag.insert(extra_flag.begin() + 1, "--rootless=false");
  Argv no_flags = {"/bin/true", "start", "c1"};  // without the pod's global flags
  Argv outside = c1.Create({.id = "x", .bundle = "/etc", .pid_file = "/etc/x.pid"});
  Argv through_link =
      Container("c1").Create({.id = "x", .bundle = (bundles_ / "link").string(), .pid_file = ""});
  Argv log_elsewhere = Container("../elsewhere").Start("c1");
  for (const Argv& argv : {other_binary, run, extra_flag, no_flags, outside, through_link,
                           log_elsewhere, Argv{"/bin/sh", "-c", "id"}}) {
    EXPECT_EQ(Check(argv).code(), Code::kPermissionDenied) << argv[0] << " " << argv.back();
  }
  // A runtime call with an environment of the server's choosing
  // (LD_PRELOAD), or a logger with more than its two variables.
  SpawnOptions preload{.argv = c1.Start("c1"), .env = std::vector<std::string>{"LD_PRELOAD=/x"}};
  EXPECT_EQ(CheckSpawn(*policy_, preload).code(), Code::kPermissionDenied);
  SpawnOptions logger{.argv = {"/usr/local/bin/logger"},
                      .env = std::vector<std::string>{"CONTAINER_ID=c1", "LD_PRELOAD=/x"}};
  EXPECT_EQ(CheckSpawn(*policy_, logger).code(), Code::kPermissionDenied);
  EXPECT_EQ(Check({}).code(), Code::kInvalidArgument);
}

TEST_F(SpawnPolicyTest, AVmPodStartsNoOciRuntime) {
  ShimConfig config;
  config.runtime.binary_name = "vm";
  SpawnPolicy vm = MakeSpawnPolicy(config, "k8s.io", {bundles_.string()});
  EXPECT_FALSE(vm.runtime.has_value());
  EXPECT_EQ(CheckSpawn(vm, SpawnOptions{.argv = {"/bin/true", "--version"}}).code(),
            Code::kPermissionDenied);
}

}  // namespace
}  // namespace hull::shim
