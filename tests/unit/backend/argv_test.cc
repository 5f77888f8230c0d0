// Every runtime command line, for both flavours, checked word for word.
#include "runtime/oci_cli/argv.h"

#include <gtest/gtest.h>

#include "runtime/oci_cli/flavour.h"
#include "shim/backend/make_backend.h"

namespace hull::runtime::oci_cli {
namespace {

using shim::MakeRuntimeConfig;
using shim::RuntimeOptions;
using shim::RuntimeRoot;

using A = Argv;

RuntimeConfig Config(const std::string& binary) {
  RuntimeOptions options{.binary_name = binary};
  return MakeRuntimeConfig(options, "k8s.io", "/b");
}

const A kRuncGlobal = {"runc",  "--root",      "/run/containerd/runc/k8s.io",
                       "--log", "/b/log.json", "--log-format",
                       "json"};
const A kCrunGlobal = {"crun",  "--root",      "/run/containerd/crun/k8s.io",
                       "--log", "/b/log.json", "--log-format",
                       "json"};

A With(const A& global, std::initializer_list<std::string> rest) {
  A out = global;
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

struct Case {
  const char* binary;
  const Flavour* flavour;
  const A* global;
};

class ArgvTest : public ::testing::TestWithParam<Case> {
 protected:
  ArgvBuilder Builder() const {
    return ArgvBuilder(*GetParam().flavour, Config(GetParam().binary));
  }
  A G(std::initializer_list<std::string> rest) const { return With(*GetParam().global, rest); }
};

INSTANTIATE_TEST_SUITE_P(Flavours, ArgvTest,
                         ::testing::Values(Case{"runc", &RuncFlavour(), &kRuncGlobal},
                                           Case{"crun", &CrunFlavour(), &kCrunGlobal}),
                         [](const auto& info) { return std::string(info.param.binary); });

TEST_P(ArgvTest, Create) {
  CreateRequest req{.id = "c1", .bundle = "/b", .pid_file = "/b/init.pid"};
  EXPECT_EQ(Builder().Create(req),
            G({"create", "--bundle", "/b", "--pid-file", "/b/init.pid", "c1"}));
}

TEST_P(ArgvTest, CreateWithConsoleAndOptions) {
  RuntimeConfig config = Config(GetParam().binary);
  config.no_pivot_root = true;
  config.no_new_keyring = true;
  CreateRequest req{.id = "c1",
                    .bundle = "/b",
                    .pid_file = "/b/init.pid",
                    .stdio = {.console_socket = "/tmp/pty.sock"}};
  EXPECT_EQ(ArgvBuilder(*GetParam().flavour, config).Create(req),
            G({"create", "--bundle", "/b", "--pid-file", "/b/init.pid", "--console-socket",
               "/tmp/pty.sock", "--no-pivot", "--no-new-keyring", "c1"}));
}

TEST_P(ArgvTest, Start) {
  EXPECT_EQ(Builder().Start("c1"), G({"start", "c1"}));
}

TEST_P(ArgvTest, Exec) {
  ExecRequest req{
      .id = "c1", .exec_id = "e1", .process_json = "/b/e1.json", .pid_file = "/b/e1.pid"};
  EXPECT_EQ(Builder().Exec(req),
            G({"exec", "--process", "/b/e1.json", "--detach", "--pid-file", "/b/e1.pid", "c1"}));
  req.stdio.console_socket = "/tmp/s";
  EXPECT_EQ(Builder().Exec(req), G({"exec", "--process", "/b/e1.json", "--detach", "--pid-file",
                                    "/b/e1.pid", "--console-socket", "/tmp/s", "c1"}));
}

TEST_P(ArgvTest, Kill) {
  EXPECT_EQ(Builder().Kill("c1", 15, false), G({"kill", "c1", "15"}));
  EXPECT_EQ(Builder().Kill("c1", 9, true), G({"kill", "--all", "c1", "9"}));
}

TEST_P(ArgvTest, Delete) {
  EXPECT_EQ(Builder().Delete("c1", false), G({"delete", "c1"}));
  EXPECT_EQ(Builder().Delete("c1", true), G({"delete", "--force", "c1"}));
}

TEST_P(ArgvTest, PauseResumeUpdatePs) {
  EXPECT_EQ(Builder().Pause("c1"), G({"pause", "c1"}));
  EXPECT_EQ(Builder().Resume("c1"), G({"resume", "c1"}));
  EXPECT_EQ(Builder().Update("c1"), G({"update", "--resources", "-", "c1"}));
  EXPECT_EQ(Builder().Ps("c1"), G({"ps", "--format", "json", "c1"}));
}

TEST_P(ArgvTest, CheckpointMinimalLeavesRunning) {
  CheckpointRequest req{.id = "c1", .image_path = "/img"};
  EXPECT_EQ(Builder().Checkpoint(req),
            G({"checkpoint", "--image-path", "/img", "--leave-running", "c1"}));
}

TEST_P(ArgvTest, CheckpointEveryOption) {
  CheckpointRequest req{.id = "c1",
                        .image_path = "/img",
                        .work_path = "/work",
                        .parent_path = "/parent",
                        .exit = true,
                        .open_tcp = true,
                        .external_unix_sockets = true,
                        .terminal = true,
                        .file_locks = true,
                        .empty_namespaces = {"network", "ipc"},
                        .cgroups_mode = "soft"};
  EXPECT_EQ(
      Builder().Checkpoint(req),
      G({"checkpoint", "--image-path", "/img", "--work-path", "/work", "--parent-path", "/parent",
         "--tcp-established", "--ext-unix-sk", "--shell-job", "--file-locks", "--empty-ns",
         "network", "--empty-ns", "ipc", "--manage-cgroups-mode", "soft", "c1"}));
}

TEST_P(ArgvTest, CheckpointDefaultsFromOptions) {
  RuntimeConfig config = Config(GetParam().binary);
  config.criu_image_path = "/default-img";
  config.criu_work_path = "/default-work";
  CheckpointRequest req{.id = "c1"};
  EXPECT_EQ(ArgvBuilder(*GetParam().flavour, config).Checkpoint(req),
            G({"checkpoint", "--image-path", "/default-img", "--work-path", "/default-work",
               "--leave-running", "c1"}));
}

TEST_P(ArgvTest, OneShotCommandsHaveNoGlobalFlags) {
  const std::string bin = GetParam().binary;
  EXPECT_EQ(Builder().Features(), (A{bin, "features"}));
  EXPECT_EQ(Builder().Version(), (A{bin, "--version"}));
  EXPECT_EQ(Builder().CheckpointProbe(), (A{bin, "checkpoint", "--help"}));
  EXPECT_EQ(Builder().CriuCheck(), (A{"criu", "check"}));
}

// Where the flavours differ.

TEST(ArgvFlavourTest, RestoreRunc) {
  RuntimeConfig config = Config("runc");
  config.criu_work_path = "/work";
  CreateRequest req{.id = "c1", .bundle = "/b", .pid_file = "/b/init.pid", .checkpoint = "/ckpt"};
  EXPECT_EQ(
      ArgvBuilder(RuncFlavour(), config).Restore(req),
      With(kRuncGlobal, {"restore", "--detach", "--bundle", "/b", "--pid-file", "/b/init.pid",
                         "--image-path", "/ckpt", "--work-path", "/work", "--no-subreaper", "c1"}));
}

TEST(ArgvFlavourTest, RestoreCrun) {
  RuntimeConfig config = Config("crun");
  config.no_pivot_root = true;
  CreateRequest req{.id = "c1",
                    .bundle = "/b",
                    .pid_file = "/b/init.pid",
                    .stdio = {.console_socket = "/s"},
                    .checkpoint = "/ckpt"};
  EXPECT_EQ(
      ArgvBuilder(CrunFlavour(), config).Restore(req),
      With(kCrunGlobal, {"restore", "--detach", "--bundle", "/b", "--pid-file", "/b/init.pid",
                         "--console-socket", "/s", "--no-pivot", "--image-path", "/ckpt", "c1"}));
}

TEST(ArgvFlavourTest, CriuPathIsAGlobalFlagOfRuncOnly) {
  RuntimeOptions options{.binary_name = "runc", .criu_path = "/opt/criu"};
  EXPECT_EQ(ArgvBuilder(RuncFlavour(), MakeRuntimeConfig(options, "default", "/b")).Start("c1"),
            (A{"runc", "--root", "/run/containerd/runc/default", "--log", "/b/log.json",
               "--log-format", "json", "--criu", "/opt/criu", "start", "c1"}));
  options.binary_name = "crun";
  EXPECT_EQ(ArgvBuilder(CrunFlavour(), MakeRuntimeConfig(options, "default", "/b")).Start("c1"),
            (A{"crun", "--root", "/run/containerd/crun/default", "--log", "/b/log.json",
               "--log-format", "json", "start", "c1"}));
  EXPECT_EQ(ArgvBuilder(CrunFlavour(), MakeRuntimeConfig(options, "default", "/b")).CriuCheck(),
            (A{"/opt/criu", "check"}));
}

TEST(ArgvOptionsTest, RootSystemdCgroupAndPathBinary) {
  RuntimeOptions options{
      .binary_name = "/usr/local/bin/crun", .root = "/var/run/hull-crun", .systemd_cgroup = true};
  RuntimeConfig config = MakeRuntimeConfig(options, "ns1", "/bundles/x");
  EXPECT_EQ(ArgvBuilder(FlavourFor(options.binary_name), config).Pause("x"),
            (A{"/usr/local/bin/crun", "--root", "/var/run/hull-crun/ns1", "--log",
               "/bundles/x/log.json", "--log-format", "json", "--systemd-cgroup", "pause", "x"}));
}

TEST(ArgvOptionsTest, DefaultRootUsesTheBinaryBasename) {
  EXPECT_EQ(RuntimeRoot(RuntimeOptions{.binary_name = "/usr/sbin/runc"}, "default"),
            "/run/containerd/runc/default");
  EXPECT_EQ(RuntimeRoot(RuntimeOptions{.binary_name = "crun"}, "k8s.io"),
            "/run/containerd/crun/k8s.io");
}

TEST(ArgvOptionsTest, NoBundleMeansNoLog) {
  RuntimeConfig config = MakeRuntimeConfig(RuntimeOptions{}, "default", "");
  EXPECT_EQ(ArgvBuilder(RuncFlavour(), config).Delete("x", true),
            (A{"runc", "--root", "/run/containerd/runc/default", "delete", "--force", "x"}));
}

TEST(FlavourTest, ChosenByBasename) {
  EXPECT_EQ(&FlavourFor("runc"), &RuncFlavour());
  EXPECT_EQ(&FlavourFor("/usr/sbin/runc"), &RuncFlavour());
  EXPECT_EQ(&FlavourFor("crun"), &CrunFlavour());
  EXPECT_EQ(&FlavourFor("/usr/bin/crun"), &CrunFlavour());
  EXPECT_EQ(&FlavourFor("/opt/crun-1.8/bin/runc"), &RuncFlavour());
  EXPECT_EQ(&FlavourFor("youki"), &RuncFlavour());  // runc-compatible CLI
}

}  // namespace
}  // namespace hull::runtime::oci_cli
