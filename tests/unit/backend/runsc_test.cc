// gVisor's runsc as hull drives it: its command lines ([runsc_config] flags
// before the subcommand), its JSON log (entries back to back, no newlines),
// its `events --stats` and `wait` output, and the features document hull
// builds for it. testdata/runsc*: written by runsc 0.0~20221219.0 (Debian 12)
// on the build host.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/status.h"
#include "oci/spec.h"
#include "runtime/backend.h"
#include "runtime/oci_cli/argv.h"
#include "runtime/oci_cli/flavour.h"
#include "runtime/oci_cli/runsc_events.h"
#include "runtime/oci_cli/runsc_features.h"
#include "runtime/oci_cli/runtime_error.h"
#include "runtime/oci_cli/sandbox_kernel_spec.h"
#include "shim/backend/make_backend.h"
#include "tests/unit/backend/testdata.h"

namespace hull::runtime::oci_cli {
namespace {

using shim::MakeRuntimeConfig;
using shim::RuntimeFeatures;
using shim::RuntimeOptions;

using A = Argv;
using nlohmann::json;

using testing::ReadTestdata;

// ---- command lines ----

RuntimeOptions RunscOptions() {
  return RuntimeOptions{.binary_name = "runsc",
                        .root = "/run/hull/runsc",
                        .runtime_flags = {{"network", "none"},
                                          {"debug", "true"},
                                          {"debug-log", "/var/log/runsc/"},
                                          {"platform", "ptrace"}}};
}

ArgvBuilder RunscBuilder(const RuntimeOptions& options = RunscOptions()) {
  return ArgvBuilder(FlavourFor(options.binary_name), MakeRuntimeConfig(options, "default", "/b"));
}

// Global flags in key order (std::map), after hull's own (--oci-seccomp
// always: runsc ignores a spec's seccomp without it), before the command.
const A kRunscGlobal = {"runsc",
                        "--root",
                        "/run/hull/runsc/default",
                        "--log",
                        "/b/log.json",
                        "--log-format",
                        "json",
                        "--oci-seccomp",
                        "--debug=true",
                        "--debug-log=/var/log/runsc/",
                        "--network=none",
                        "--platform=ptrace"};

A G(std::initializer_list<std::string> rest) {
  A out = kRunscGlobal;
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

TEST(RunscArgvTest, FlavourIsChosenByBasename) {
  EXPECT_EQ(&FlavourFor("runsc"), &RunscFlavour());
  EXPECT_EQ(&FlavourFor("/usr/bin/runsc"), &RunscFlavour());
  EXPECT_EQ(&FlavourFor("/opt/gvisor/runsc-20221219"), &RunscFlavour());
  EXPECT_EQ(&FlavourFor("/opt/runsc/bin/runc"), &RuncFlavour());
}

TEST(RunscArgvTest, ConfigFlagsComeBeforeEverySubcommand) {
  ArgvBuilder b = RunscBuilder();
  CreateRequest req{.id = "c1", .bundle = "/b", .pid_file = "/b/init.pid"};
  EXPECT_EQ(b.Create(req), G({"create", "--bundle", "/b", "--pid-file", "/b/init.pid", "c1"}));
  EXPECT_EQ(b.Start("c1"), G({"start", "c1"}));
  EXPECT_EQ(b.Kill("c1", 9, false), G({"kill", "c1", "9"}));
  EXPECT_EQ(b.Kill("c1", 15, true), G({"kill", "--all", "c1", "15"}));
  EXPECT_EQ(b.Delete("c1", true), G({"delete", "--force", "c1"}));
  EXPECT_EQ(b.Pause("c1"), G({"pause", "c1"}));
  EXPECT_EQ(b.Resume("c1"), G({"resume", "c1"}));
  EXPECT_EQ(b.Ps("c1"), G({"ps", "--format", "json", "c1"}));
  ExecRequest exec{
      .id = "c1", .exec_id = "e1", .process_json = "/b/e1.json", .pid_file = "/b/e1.pid"};
  // The exec's pid in the sandbox, for its signals: killing the host-side
  // `runsc exec` would leave the process running.
  EXPECT_EQ(b.Exec(exec), G({"exec", "--process", "/b/e1.json", "--detach", "--pid-file",
                             "/b/e1.pid", "--internal-pid-file", "/b/e1.pid.internal", "c1"}));
  EXPECT_EQ(b.KillProcess("c1", 7, 9), G({"kill", "--pid", "7", "c1", "9"}));
}

TEST(RunscArgvTest, RunscOnlyCommands) {
  ArgvBuilder b = RunscBuilder();
  EXPECT_EQ(b.Wait("c1"), G({"wait", "c1"}));
  EXPECT_EQ(b.EventsStats("c1"), G({"events", "--stats", "c1"}));
  EXPECT_EQ(b.List(), G({"list", "--format", "json"}));
}

TEST(RunscArgvTest, NoCriuFlagAndNoConfigFlagsOnOneShotCommands) {
  RuntimeOptions options = RunscOptions();
  options.criu_path = "/opt/criu";  // runsc saves its own state: never --criu
  ArgvBuilder b = RunscBuilder(options);
  EXPECT_EQ(b.Start("c1"), G({"start", "c1"}));
  EXPECT_EQ(b.Version(), (A{"runsc", "--version"}));
  EXPECT_EQ(b.Features(), (A{"runsc", "features"}));
}

TEST(RunscArgvTest, WithoutConfigFlagsOnlyHullsGlobals) {
  RuntimeOptions options{.binary_name = "runsc"};
  EXPECT_EQ(RunscBuilder(options).Start("c1"),
            (A{"runsc", "--root", "/run/containerd/runsc/default", "--log", "/b/log.json",
               "--log-format", "json", "--oci-seccomp", "start", "c1"}));
}

TEST(RunscArgvTest, ConfigFlagsReachRuncToo) {
  // The table is not runsc-only in the builder: whatever names the binary
  // gets the flags (the config documents them as runsc's).
  RuntimeOptions options{.binary_name = "runc", .runtime_flags = {{"debug", "true"}}};
  EXPECT_EQ(RunscBuilder(options).Start("c1"),
            (A{"runc", "--root", "/run/containerd/runc/default", "--log", "/b/log.json",
               "--log-format", "json", "--debug=true", "start", "c1"}));
}

// ---- the JSON log ----

TEST(RunscLogTest, EntriesWithoutNewlinesAreSplit) {
  std::string log = ReadTestdata("runsc.log.json");
  ASSERT_EQ(log.find('\n'), std::string::npos) << "the sample must be runsc's, unbroken";
  EXPECT_EQ(LastLoggedError(log), "connecting to control server at PID 14801: connection refused");
  // The first entry alone, and cut just before the second.
  size_t second = log.find("}{");
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(LastLoggedError(log.substr(0, second + 1)),
            "loading container \"nosuch\": file does not exist");
  // A second entry cut short does not hide the first.
  EXPECT_EQ(LastLoggedError(log.substr(0, second + 20)),
            "loading container \"nosuch\": file does not exist");
}

TEST(RunscLogTest, BracesAndQuotesInsideMessagesDoNotSplit) {
  std::string log = R"({"msg":"spec {\"a\":\"}{\"} bad","level":"error"})"
                    R"({"msg":"info {","level":"info"})";
  EXPECT_EQ(LastLoggedError(log), R"(spec {"a":"}{"} bad)");
}

TEST(RunscLogTest, MixedWithNewlineSeparatedAndGarbage) {
  std::string log =
      "garbage line\n{\"msg\":\"first\",\"level\":\"error\"}{\"msg\":\"w\",\"level\":"
      "\"warning\"}\n{broken\n{\"msg\":\"last\",\"level\":\"fatal\"}";
  EXPECT_EQ(LastLoggedError(log), "last");
  EXPECT_EQ(LastLoggedError("{\"msg\":\"only\",\"level\":\"error\"}{\"msg\":\"cut"), "only");
}

TEST(RunscLogTest, EveryEntryIsClassified) {
  std::string log = ReadTestdata("runsc.log.json");
  std::vector<std::string> msgs;
  for (size_t at = 0; at < log.size();) {
    size_t end = log.find("}{", at);
    end = end == std::string::npos ? log.size() : end + 1;
    msgs.push_back(LastLoggedError(log.substr(at, end - at)));
    at = end;
  }
  ASSERT_EQ(msgs.size(), 6u);
  auto code = [&](size_t i) { return ClassifyFailure(RunscFlavour(), "/r/c1", msgs[i]).code(); };
  EXPECT_EQ(code(0), Code::kNotFound);            // loading container "nosuch"
  EXPECT_EQ(code(1), Code::kUnknown);             // missing executable: runsc's message as is
  EXPECT_EQ(code(2), Code::kFailedPrecondition);  // resume a running container
  EXPECT_EQ(code(3), Code::kFailedPrecondition);  // pause a paused one
  EXPECT_EQ(code(4), Code::kUnknown);             // exec of a missing program
  // A kill that finds the sandbox gone means the process has exited.
  EXPECT_TRUE(IsProcessGone(RunscFlavour(), msgs[5]));
  EXPECT_FALSE(IsProcessGone(RunscFlavour(), msgs[0]));
  EXPECT_NE(msgs[1].find("/no/such/program"), std::string::npos);
}

// ---- events --stats and wait ----

TEST(RunscEventsTest, RealStatsEventMapsOntoCgroupMetrics) {
  auto metrics = MetricsFromRunscStats(ReadTestdata("runsc-events-stats.json"));
  ASSERT_TRUE(metrics.has_value()) << metrics.error().ToString();
  EXPECT_EQ(metrics->cpu().usage().total(), 93032552u);
  EXPECT_EQ(metrics->memory().usage().usage(), 2027520u);
  EXPECT_EQ(metrics->memory().usage().limit(), 0u);
  EXPECT_EQ(metrics->pids().current(), 1u);
  // What runsc leaves out is zero, not made up.
  EXPECT_EQ(metrics->cpu().usage().kernel(), 0u);
  EXPECT_EQ(metrics->memory().cache(), 0u);
  EXPECT_EQ(metrics->pids().limit(), 0u);
}

TEST(RunscEventsTest, EveryMappedField) {
  auto metrics = MetricsFromRunscStats(R"({"type":"stats","id":"c","data":{
      "cpu":{"usage":{"total":10,"kernel":3,"user":7,"percpu":[4,6]},
             "throttling":{"periods":5,"throttledPeriods":2,"throttledTime":99}},
      "memory":{"cache":11,"usage":{"usage":12,"max":13,"limit":14,"failcnt":1},
                "swap":{"usage":21,"limit":22},"kernel":{"usage":31},"kernelTCP":{"usage":41}},
      "pids":{"current":3,"limit":64}}})");
  ASSERT_TRUE(metrics.has_value()) << metrics.error().ToString();
  const auto& cpu = metrics->cpu();
  EXPECT_EQ(cpu.usage().total(), 10u);
  EXPECT_EQ(cpu.usage().kernel(), 3u);
  EXPECT_EQ(cpu.usage().user(), 7u);
  ASSERT_EQ(cpu.usage().per_cpu_size(), 2);
  EXPECT_EQ(cpu.usage().per_cpu(1), 6u);
  EXPECT_EQ(cpu.throttling().periods(), 5u);
  EXPECT_EQ(cpu.throttling().throttled_periods(), 2u);
  EXPECT_EQ(cpu.throttling().throttled_time(), 99u);
  const auto& mem = metrics->memory();
  EXPECT_EQ(mem.cache(), 11u);
  EXPECT_EQ(mem.usage().usage(), 12u);
  EXPECT_EQ(mem.usage().max(), 13u);
  EXPECT_EQ(mem.usage().limit(), 14u);
  EXPECT_EQ(mem.usage().failcnt(), 1u);
  EXPECT_EQ(mem.swap().usage(), 21u);
  EXPECT_EQ(mem.swap().limit(), 22u);
  EXPECT_EQ(mem.kernel().usage(), 31u);
  EXPECT_EQ(mem.kernel_tcp().usage(), 41u);
  EXPECT_EQ(metrics->pids().current(), 3u);
  EXPECT_EQ(metrics->pids().limit(), 64u);
}

TEST(RunscEventsTest, NegativeAndOddValuesBecomeZero) {
  auto metrics = MetricsFromRunscStats(
      R"({"type":"stats","data":{"cpu":{"usage":{"total":-5,"user":"x"}},"pids":{"current":2.0}}})");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->cpu().usage().total(), 0u);
  EXPECT_EQ(metrics->cpu().usage().user(), 0u);
  EXPECT_EQ(metrics->pids().current(), 2u);
}

TEST(RunscEventsTest, NotAStatsEventIsInvalidArgument) {
  for (const char* text : {"", "not json", "[]", R"({"type":"oom","id":"c"})",
                           R"({"type":"stats","id":"c"})", R"({"type":"stats","data":7})"}) {
    auto metrics = MetricsFromRunscStats(text);
    ASSERT_FALSE(metrics.has_value()) << text;
    EXPECT_EQ(metrics.error().code(), Code::kInvalidArgument) << text;
  }
}

TEST(RunscWaitTest, ExitStatus) {
  EXPECT_EQ(ExitStatusFromRunscWait(R"({"id":"c1","exitStatus":0})").value(), 0);
  EXPECT_EQ(ExitStatusFromRunscWait("{\"id\":\"c1\",\"exitStatus\":137}\n").value(), 137);
  for (const char* text : {"", "{}", R"({"exitStatus":"1"})", R"({"exitStatus":1.5})", "7"}) {
    auto status = ExitStatusFromRunscWait(text);
    ASSERT_FALSE(status.has_value()) << text;
    EXPECT_EQ(status.error().code(), Code::kInvalidArgument) << text;
  }
}

// ---- features ----

TEST(RunscFeaturesTest, FromTheRealVersionBanner) {
  auto doc = BuildRunscFeatures(ReadTestdata("runsc-20221219.version"));
  ASSERT_TRUE(doc.has_value()) << doc.error().ToString();
  json parsed = json::parse(*doc);
  EXPECT_EQ(parsed["ociVersionMin"], "1.0.0");
  EXPECT_EQ(parsed["ociVersionMax"], "1.0.2-dev");
  EXPECT_EQ(parsed["annotations"]["dev.gvisor.runsc.version"], "0.0~20221219.0");
  EXPECT_EQ(parsed["annotations"]["org.opencontainers.runc.checkpoint.enabled"], "false");
  EXPECT_EQ(parsed["linux"]["cgroup"]["v2"], true);
  // Nothing hull cannot tell from runsc's CLI.
  EXPECT_FALSE(parsed["linux"].contains("namespaces"));
  EXPECT_FALSE(parsed["linux"].contains("capabilities"));
}

TEST(RunscFeaturesTest, BannerWithoutSpecLine) {
  auto doc = BuildRunscFeatures("runsc version release-20240101.0\n");
  ASSERT_TRUE(doc.has_value());
  json parsed = json::parse(*doc);
  EXPECT_EQ(parsed["ociVersionMax"], "1.0.0");
  EXPECT_EQ(parsed["annotations"]["dev.gvisor.runsc.version"], "release-20240101.0");
}

TEST(RunscFeaturesTest, RejectsAnotherBanner) {
  for (const char* text : {"", "runc version 1.1.5\nspec: 1.0.2-dev\n", "runsc version \n"}) {
    auto doc = BuildRunscFeatures(text);
    ASSERT_FALSE(doc.has_value()) << text;
    EXPECT_EQ(doc.error().code(), Code::kInvalidArgument) << text;
  }
}

TEST(RunscFeaturesTest, InstalledRunscGetsOneBuiltByHull) {
  if (::access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "runsc not installed";
  auto doc = RuntimeFeatures(RuntimeOptions{.binary_name = "runsc"});
  ASSERT_TRUE(doc.has_value()) << doc.error().ToString();
  json parsed = json::parse(*doc);
  EXPECT_TRUE(parsed["annotations"].contains("dev.gvisor.runsc.version"));
}

// ---- specs fitted to the sandbox's kernel ----

json PodContainerJson(const std::string& pid_path) {
  json pid = {{"type", "pid"}};
  if (!pid_path.empty()) pid["path"] = pid_path;
  return {{"ociVersion", "1.0.2-dev"},
          {"linux",
           {{"namespaces",
             {{{"type", "ipc"}, {"path", "/proc/42/ns/ipc"}}, pid, {{"type", "mount"}}}}}}};
}

oci::Spec SpecOf(const json& doc) {
  auto spec = oci::Spec::Parse(doc.dump());
  EXPECT_TRUE(spec.has_value()) << doc.dump();
  return spec.has_value() ? *spec : oci::Spec();
}

TEST(SandboxKernelSpecTest, PidEqualsPodJoinsTheSandboxsRootPidNamespace) {
  oci::Spec spec = SpecOf(PodContainerJson("/proc/42/ns/pid"));
  auto changed = FitSpecToSandboxKernel(spec, /*joins_sandbox=*/true);
  ASSERT_TRUE(changed.has_value()) << changed.error().ToString();
  EXPECT_TRUE(*changed);
  // The pid entry is gone; the others stay as they were.
  EXPECT_EQ(spec.Namespaces(),
            (std::vector<oci::Namespace>{{"ipc", "/proc/42/ns/ipc"}, {"mount", ""}}));
}

TEST(SandboxKernelSpecTest, OtherPidNamespacesStay) {
  // pid=CONTAINER (no path: a namespace of its own), a path of another
  // form, and the sandbox's own container.
  for (const auto& [path, joins] :
       std::vector<std::pair<std::string, bool>>{{"", true},
                                                 {"/run/netns/x", true},
                                                 {"/proc/42/ns/ipc", true},
                                                 {"/proc/42/ns/pid", false}}) {
    oci::Spec spec = SpecOf(PodContainerJson(path));
    const std::string before = spec.Dump();
    auto changed = FitSpecToSandboxKernel(spec, joins);
    ASSERT_TRUE(changed.has_value()) << path;
    EXPECT_FALSE(*changed) << path;
    EXPECT_EQ(spec.Dump(), before) << path;
  }
}

TEST(SandboxKernelSpecTest, HostPidAndHostIpcAreRefused) {
  for (const char* type : {"pid", "ipc"}) {
    json doc = PodContainerJson("");
    json& namespaces = doc["linux"]["namespaces"];
    namespaces.erase(std::remove_if(namespaces.begin(), namespaces.end(),
                                    [&](const json& n) { return n["type"] == type; }),
                     namespaces.end());
    oci::Spec spec = SpecOf(doc);
    for (bool joins : {false, true}) {
      auto refused = FitSpecToSandboxKernel(spec, joins);
      ASSERT_FALSE(refused.has_value()) << type;
      EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
      EXPECT_NE(
          refused.error().message().find(std::string("(host") +
                                         (type == std::string("pid") ? "PID" : "IPC") + ": true)"),
          std::string::npos)
          << refused.error().message();
    }
  }
}

TEST(SandboxKernelSpecTest, SysctlsOutsideNetAreRefusedByName) {
  json doc = PodContainerJson("");
  doc["linux"]["sysctl"] = {{"net.ipv4.ip_unprivileged_port_start", "0"},
                            {"net.ipv4.ping_group_range", "0 2147483647"}};
  oci::Spec net = SpecOf(doc);
  auto net_only = FitSpecToSandboxKernel(net, false);
  ASSERT_TRUE(net_only.has_value()) << net_only.error().ToString();
  EXPECT_FALSE(*net_only);
  for (const char* key : {"kernel.shm_rmid_forced", "fs.mqueue.msg_max", "kernel.msgmax"}) {
    json with = doc;
    with["linux"]["sysctl"][key] = "1";
    oci::Spec spec = SpecOf(with);
    auto refused = FitSpecToSandboxKernel(spec, false);
    ASSERT_FALSE(refused.has_value()) << key;
    EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
    EXPECT_NE(refused.error().message().find("sysctl " + std::string(key) + " cannot be set"),
              std::string::npos)
        << refused.error().message();
  }
}

TEST(SandboxKernelSpecTest, MaskedAndReadonlyPathsOutsideProcAndSysAreRefused) {
  // containerd's defaults pass.
  json doc = PodContainerJson("");
  doc["linux"]["maskedPaths"] = {"/proc/acpi", "/proc/kcore", "/sys/firmware",
                                 "/sys/devices/virtual/powercap"};
  doc["linux"]["readonlyPaths"] = {"/proc/bus", "/proc/sys", "/proc/sysrq-trigger"};
  oci::Spec defaults = SpecOf(doc);
  auto passed = FitSpecToSandboxKernel(defaults, false);
  ASSERT_TRUE(passed.has_value()) << passed.error().ToString();
  EXPECT_FALSE(*passed);
  for (const auto& [key, path] :
       std::vector<std::pair<std::string, std::string>>{{"maskedPaths", "/bin/tr"},
                                                        {"readonlyPaths", "/tmp"},
                                                        {"maskedPaths", "/procfs"},
                                                        {"maskedPaths", "/proc/../bin/tr"}}) {
    json with = doc;
    with["linux"][key].push_back(path);
    oci::Spec spec = SpecOf(with);
    auto refused = FitSpecToSandboxKernel(spec, false);
    ASSERT_FALSE(refused.has_value()) << path;
    EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
    EXPECT_NE(refused.error().message().find(key + " entry " + path + " cannot be applied"),
              std::string::npos)
        << refused.error().message();
  }
}

TEST(SandboxKernelSpecTest, BidirectionalPropagationIsRefusedNamingTheVolume) {
  json doc = PodContainerJson("");
  doc["mounts"] = {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
                   {{"destination", "/slave"},
                    {"type", "bind"},
                    {"source", "/srv/a"},
                    {"options", {"rbind", "rslave", "rw"}}}};
  doc["linux"]["rootfsPropagation"] = "rslave";
  oci::Spec host_to_container = SpecOf(doc);
  auto passed = FitSpecToSandboxKernel(host_to_container, false);
  ASSERT_TRUE(passed.has_value()) << passed.error().ToString();
  EXPECT_FALSE(*passed);

  for (const char* option : {"rshared", "shared"}) {
    json with = doc;
    with["mounts"].push_back({{"destination", "/both"},
                              {"type", "bind"},
                              {"source", "/srv/b"},
                              {"options", {"rbind", option, "rw"}}});
    with["linux"]["rootfsPropagation"] = "rshared";
    oci::Spec spec = SpecOf(with);
    auto refused = FitSpecToSandboxKernel(spec, true);
    ASSERT_FALSE(refused.has_value()) << option;
    EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
    EXPECT_NE(refused.error().message().find("volume /both asks for " + std::string(option)),
              std::string::npos)
        << refused.error().message();
  }
  json root_only = doc;
  root_only["linux"]["rootfsPropagation"] = "shared";
  oci::Spec spec = SpecOf(root_only);
  auto refused = FitSpecToSandboxKernel(spec, false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("rootfsPropagation shared"), std::string::npos)
      << refused.error().message();
}

TEST(SandboxKernelSpecTest, BundleIsRewrittenOnlyWhenChanged) {
  char dir[] = "/tmp/hull-sandbox-spec-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config.json";
  std::ofstream(path) << PodContainerJson("/proc/7/ns/pid").dump();
  ASSERT_TRUE(FitBundleToSandboxKernel(path, true).ok());
  auto fitted = oci::Spec::Load(path);
  ASSERT_TRUE(fitted.has_value());
  EXPECT_EQ(fitted->Namespaces().size(), 2u);
  std::ofstream(path) << "{not json";
  Status bad = FitBundleToSandboxKernel(path, true);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument) << bad.ToString();
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace hull::runtime::oci_cli
