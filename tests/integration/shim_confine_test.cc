// [security] confine = true under a real containerd 1.6 (docs/security.md):
// the server runs with the reduced capability set, NoNewPrivs and a seccomp
// filter; its spawner does not, and containers get exactly what their spec
// gives them, once per runtime. It is the default, so every other suite
// runs confined servers too (docs/testing.md).
#include <sys/wait.h>

#include <cstdint>

#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

class HullConfinedTest : public HullCtrTest {
 protected:
  std::string ServerConfig() const override { return kConfinedServerConfig; }
};

// CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL (shim/security/confine.cc):
// no CAP_SYS_ADMIN, rootfs mounts are the spawner's.
constexpr uint64_t kServerCaps = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 5);
constexpr int kCapNetAdmin = 12;

// containerd 1.6's default capabilities for a container (ctr's spec).
const std::vector<std::string> kDefaultCaps = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",    "CAP_AUDIT_WRITE"};

// The value of "Key:" in a /proc/<pid>/status text; "" when absent.
std::string Field(const std::string& status, const std::string& key) {
  std::istringstream lines(status);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(key + ":")) continue;
    std::string value = line.substr(key.size() + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

uint64_t Hex(const std::string& value) {
  return value.empty() ? ~uint64_t{0} : std::stoull(value, nullptr, 16);
}

std::string ProcStatus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The children of `parent`.
std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string status = ProcStatus(std::stoi(name));
    if (Field(status, "PPid") == std::to_string(parent)) out.push_back(std::stoi(name));
  }
  return out;
}

TEST_P(HullConfinedTest, ServerIsConfinedAndItsSpawnerIsNot) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::vector<pid_t> shims = Shims();
  ASSERT_EQ(shims.size(), 1u) << DescribeShims();
  std::string server = ProcStatus(shims[0]);
  EXPECT_EQ(Hex(Field(server, "CapEff")), kServerCaps) << server;
  EXPECT_EQ(Hex(Field(server, "CapPrm")), kServerCaps) << server;
  EXPECT_EQ(Hex(Field(server, "CapBnd")), kServerCaps) << server;
  EXPECT_EQ(Field(server, "NoNewPrivs"), "1") << server;
  EXPECT_EQ(Field(server, "Seccomp"), "2") << server;

  // The spawner: the server's one child named hull-spawner, unconfined.
  pid_t spawner = 0;
  for (pid_t child : Children(shims[0])) {
    if (Field(ProcStatus(child), "Name") == "hull-spawner") spawner = child;
  }
  ASSERT_GT(spawner, 0);
  std::string spawner_status = ProcStatus(spawner);
  EXPECT_EQ(Field(spawner_status, "NoNewPrivs"), "0") << spawner_status;
  EXPECT_EQ(Field(spawner_status, "Seccomp"), "0") << spawner_status;
  EXPECT_NE(Hex(Field(spawner_status, "CapEff")) & (uint64_t{1} << kCapNetAdmin), 0u);

  // The container's init is the spawner's (reparented from runc), not the
  // server's, and carries neither filter (runc and crun: its host pid).
  auto [pid, status] = Task("t1");
  ASSERT_GT(pid, 0);
  if (!IsRunsc()) {
    std::string init = ProcStatus(pid);
    EXPECT_EQ(Field(init, "Seccomp"), "0") << init;
  }

  // exec, kill, delete through the confined server.
  r = Ctr({"task", "exec", "--exec-id", "e1", "t1", "sh", "-c", "echo exec-out; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, "exec-out\n");
  r = Ctr({"task", "kill", "-s", "SIGKILL", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus("t1", "STOPPED"));
  r = Ctr({"task", "delete", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  r = Ctr({"container", "delete", "t1"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  // The server exits after its last container, and its spawner with it.
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s)) << DescribeShims();
  EXPECT_TRUE(WaitUntil([&] { return !fs::exists("/proc/" + std::to_string(spawner)); }, 10s));
}

TEST_P(HullConfinedTest, ContainerGrantedNetAdminHasIt) {
  CommandResult r = Run({"--rm", "--cap-add", "CAP_NET_ADMIN"}, "t1", {"cat", "/proc/self/status"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(Hex(Field(r.out, "CapEff")) & (uint64_t{1} << kCapNetAdmin), 0u) << r.out;
  // No seccomp filter in the spec (ctr sets none without --seccomp), none
  // from hull's server. gVisor may not report the field.
  std::string seccomp = Field(r.out, "Seccomp");
  if (!seccomp.empty()) {
    EXPECT_EQ(seccomp, "0") << r.out;
  }
}

TEST_P(HullConfinedTest, ContainerThatDropsEverythingHasNothing) {
  std::vector<std::string> flags = {"--rm"};
  for (const std::string& cap : kDefaultCaps) {
    flags.push_back("--cap-drop");
    flags.push_back(cap);
  }
  CommandResult r = Run(flags, "t1", {"cat", "/proc/self/status"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Hex(Field(r.out, "CapEff")), 0u) << r.out;
  EXPECT_EQ(Hex(Field(r.out, "CapPrm")), 0u) << r.out;
}

TEST_P(HullConfinedTest, ContainerWithASeccompProfileHasIt) {
  if (IsRunsc()) {
    GTEST_SKIP() << "runsc applies a spec's seccomp profile only with --oci-seccomp, which the "
                    "test's config does not set";
  }
  CommandResult r = Run({"--rm", "--seccomp"}, "t1", {"cat", "/proc/self/status"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Field(r.out, "Seccomp"), "2") << r.out;
}

// The spawner starts only what the configuration names (docs/security.md,
// "The spawner as a boundary"). A logging binary that [security]
// logging_binaries does not list is refused; the spawner itself writes the
// refusal to the shim's log, and the rootfs (mounted, by the spawner, before
// stdio) is unmounted again. The one the list names ($DIR/logger.sh) runs.
TEST_P(HullConfinedTest, SpawnerStartsOnlyTheLoggersTheConfigurationNames) {
  CommandResult r = Run({"--rm", "--log-uri", "binary:///bin/sh"}, "t1", {"echo", "refused"});
  EXPECT_FALSE(r.ok()) << r.Describe();
  std::ifstream in(containerd_->log_path());
  std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(log.find("spawner refused \"/bin/sh\""), std::string::npos) << containerd_->LogTail(40);
  EXPECT_EQ(MountsUnder(containerd_->state()), std::vector<std::string>{});
  Ctr({"task", "rm", "-f", "t1"});
  Ctr({"container", "rm", "t1"});

  const std::string logger = containerd_->dir() + "/logger.sh";
  const std::string out = containerd_->dir() + "/binary.log";
  std::ofstream(logger) << "#!/bin/sh\nexec 5>&-\ncat <&3 > " << out << "\n";
  fs::permissions(logger, fs::perms::owner_all);
  r = Run({"--rm", "--log-uri", "binary://" + logger}, "t2", {"echo", "via-logger"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::ifstream f(out);
        return std::string((std::istreambuf_iterator<char>(f)), {}) == "via-logger\n";
      },
      10s));
}

// The options of the mount at `point` in /proc/<pid>/mountinfo ("ro,...");
// "" when nothing is mounted there.
std::string MountOptions(pid_t pid, const std::string& point) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/mountinfo");
  std::string options;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, at, opts;
    if (fields >> id >> parent >> device >> root >> at >> opts && at == point) options = opts;
  }
  return options;  // the last listed is the one on top
}

std::string MountNamespace(const std::string& pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + pid + "/ns/mnt", ec).string();
}

// The server sees the host read-only but what it writes (docs/security.md,
// "The server's view of the host"), in a mount namespace of its own; its
// spawner, and so the runtime and the containers, see the host's. file://
// logs, which the server cannot create, are opened by the spawner, which
// refuses a system directory and logs it.
TEST_P(HullConfinedTest, ServerSeesTheHostAndItsBundlesReadOnly) {
  CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::vector<pid_t> shims = Shims();
  ASSERT_EQ(shims.size(), 1u) << DescribeShims();
  const pid_t server = shims[0];
  EXPECT_NE(MountNamespace(std::to_string(server)), MountNamespace("self"));
  for (pid_t child : Children(server)) {
    if (Field(ProcStatus(child), "Name") == "hull-spawner") {
      EXPECT_EQ(MountNamespace(std::to_string(child)), MountNamespace("self"));
    }
  }
  EXPECT_TRUE(MountOptions(server, "/").starts_with("ro")) << MountOptions(server, "/");
  // Its bundles' specs are containerd's: the server cannot rewrite one
  // (seen from its own mount namespace, as root with every capability).
  CommandResult write = RunCommand({"nsenter", "-t", std::to_string(server), "-m", "--", "sh", "-c",
                                    "echo >> " + Bundle("t1") + "/config.json"});
  EXPECT_FALSE(write.ok()) << write.Describe();
  EXPECT_NE(write.err.find("Read-only file system"), std::string::npos) << write.Describe();
  // runsc's own bundle keeps hull-sandbox writable (a Sandbox API pod's
  // sandbox bundle).
  if (IsRunsc()) {
    EXPECT_TRUE(MountOptions(server, Bundle("t1") + "/hull-sandbox").starts_with("rw"));
  }
  EXPECT_TRUE(MountOptions(server, "/run/hull").starts_with("rw"));
  EXPECT_TRUE(MountOptions(server, "/sys/fs/cgroup").starts_with("rw"));
  EXPECT_TRUE(MountOptions(server, "/proc/sys").starts_with("ro"));
  // Where a runtime keeps its state is not the server's to write, runsc's
  // included (its spawner removes runsc's orphaned locks).
  const std::string root = (IsRunsc() ? RunscRoot() : "/run/containerd/" + GetParam()) + "/default";
  EXPECT_FALSE(MountOptions(server, root).starts_with("rw")) << root;
  CommandResult in_root = RunCommand({"nsenter", "-t", std::to_string(server), "-m", "--", "sh",
                                      "-c", "echo > " + root + "/hull-confine-probe"});
  EXPECT_FALSE(in_root.ok()) << in_root.Describe();

  // A container's exec and its end still work, the spawner writing hull's
  // files in the bundle.
  r = Ctr({"task", "exec", "--exec-id", "e1", "t1", "true"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  // ...and removing them once the exec is gone (its process file, its pid
  // file and runsc's internal pid file).
  for (const auto& entry : fs::directory_iterator(Bundle("t1"))) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("e1.")) << entry.path();
  }

  const std::string log = containerd_->dir() + "/logs/t2.log";
  r = Run({"--rm", "--log-uri", "file://" + log}, "t2", {"echo", "into-a-file"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::ifstream in(log);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "into-a-file\n");

  const std::string refused = "/etc/hull-confine-test-" + std::to_string(::getpid()) + ".log";
  r = Run({"--rm", "--log-uri", "file://" + refused}, "t3", {"echo", "refused"});
  EXPECT_FALSE(r.ok()) << r.Describe();
  EXPECT_FALSE(fs::exists(refused));
  std::ifstream log_in(containerd_->log_path());
  std::string text((std::istreambuf_iterator<char>(log_in)), {});
  EXPECT_NE(text.find("spawner refused log-file"), std::string::npos) << containerd_->LogTail(40);
  Ctr({"task", "rm", "-f", "t3"});
  Ctr({"container", "rm", "t3"});
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullConfinedTest, ::testing::Values("runc", "crun", "runsc"));

// [security] where operators configure a runtime handler (issue 26, 5): the
// handler's own file, ctr's --runtime-config-path or a CRI handler's
// ConfigPath. The servers' config file (HULL_CONFIG) turns confinement off
// here (`confine = false`, kept for debugging). Runtime-independent: runc
// only.
class HullHandlerSecurityTest : public HullCtrTest {
 protected:
  std::string ServerConfig() const override { return "[security]\nconfine = false\n"; }

  // Runs t1 and checks that its server is confined (Seccomp 2, NoNewPrivs,
  // the four capabilities, one spawner), then removes it.
  void RunT1Confined() {
    CommandResult r = Run({"-d"}, "t1", {"sleep", "1000"});
    ASSERT_TRUE(r.ok()) << r.Describe();
    std::vector<pid_t> shims = Shims();
    ASSERT_EQ(shims.size(), 1u) << DescribeShims();
    std::string server = ProcStatus(shims[0]);
    EXPECT_EQ(Field(server, "Seccomp"), "2") << server;
    EXPECT_EQ(Field(server, "NoNewPrivs"), "1") << server;
    EXPECT_EQ(Hex(Field(server, "CapEff")), kServerCaps) << server;
    EXPECT_EQ(ServerAndSpawner(shims[0]).size(), 2u);
    RemoveContainer("t1");
    EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s)) << DescribeShims();
  }

  std::string ContainerdLog() const {
    std::ifstream in(containerd_->log_path());
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
};

// The handler's file confines the server: it was silently ignored (the
// server read [security] from HULL_CONFIG only: every capability and
// `Seccomp: 0`).
TEST_P(HullHandlerSecurityTest, HandlerFileConfinesTheServer) {
  std::ofstream(config_) << ConfigText() << "[security]\nconfine = true\n";
  RunT1Confined();
}

// A container of a pod whose server runs unconfined, whose own handler file
// asks for confinement, is refused, and the log names the file and the key:
// the server's settings are fixed when it starts.
TEST_P(HullHandlerSecurityTest, ContainerAskingAnUnconfinedServerToConfineIsRefused) {
  CommandResult r = Run({"-d", "--annotation", "io.kubernetes.cri.container-type=sandbox",
                         "--annotation", "io.kubernetes.cri.sandbox-id=p1"},
                        "p1", {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  const std::string confined = containerd_->dir() + "/hull-confined.toml";
  std::ofstream(confined) << ConfigText() << "[security]\nconfine = true\n";
  r = containerd_->Ctr({"run", "-d", "--runtime", kHull, "--runtime-config-path", confined,
                        "--annotation", "io.kubernetes.cri.container-type=container",
                        "--annotation", "io.kubernetes.cri.sandbox-id=p1", kBusybox, "c1", "sleep",
                        "1000"});
  EXPECT_FALSE(r.ok()) << r.Describe();
  // ctr 1.6 prints the code of containerd's error.
  EXPECT_NE((r.out + r.err).find("failed precondition"), std::string::npos) << r.Describe();
  std::vector<pid_t> shims = Shims();
  ASSERT_EQ(shims.size(), 1u) << DescribeShims();
  EXPECT_EQ(Field(ProcStatus(shims[0]), "Seccomp"), "0");
  std::string log = ContainerdLog();
  size_t line = log.find("key security.confine = true is not applied");
  ASSERT_NE(line, std::string::npos) << containerd_->LogTail(40);
  size_t begin = log.rfind('\n', line);
  std::string text = log.substr(begin + 1, log.find('\n', line) - begin - 1);
  EXPECT_NE(text.find(confined), std::string::npos) << text;
  Ctr({"task", "rm", "c1"});
  Ctr({"container", "rm", "c1"});
  RemoveContainer("p1");
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s)) << DescribeShims();
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullHandlerSecurityTest, ::testing::Values("runc"));

// Confinement is the default (issue 26, item 6): no file says `confine`
// (HULL_CONFIG has only logging_binaries, the handler's file only the
// runtime), and the server is confined all the same, with its spawner.
class HullDefaultSecurityTest : public HullHandlerSecurityTest {
 protected:
  std::string ServerConfig() const override { return ""; }
};

TEST_P(HullDefaultSecurityTest, WithNoSettingTheServerIsConfined) {
  RunT1Confined();
}

INSTANTIATE_TEST_SUITE_P(Runtimes, HullDefaultSecurityTest, ::testing::Values("runc"));

}  // namespace
}  // namespace hull::itest
