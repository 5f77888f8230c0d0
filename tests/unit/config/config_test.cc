// ShimConfig from TOML and from containerd's options, and its copy in the
// bundle.

#include "shim/config/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "containerd/linux/runc/runctypes.pb.h"
#include "containerd/runc/v1/options.pb.h"
#include "google/protobuf/any.pb.h"
#include "runtimeoptions/v1/options.pb.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

google::protobuf::Any RuncAny(const containerd::runc::v1::Options& options,
                              std::string type_url = "containerd.runc.v1.Options") {
  google::protobuf::Any any;
  any.set_type_url(std::move(type_url));
  any.set_value(options.SerializeAsString());
  return any;
}

google::protobuf::Any RuntimeOptionsAny(const std::string& config_path, const std::string& body) {
  runtimeoptions::v1::Options options;
  options.set_type_url("io.containerd.hull.v2.options");
  options.set_config_path(config_path);
  options.set_config_body(body);
  google::protobuf::Any any;
  any.set_type_url("runtimeoptions.v1.Options");
  any.set_value(options.SerializeAsString());
  return any;
}

// Every key set to something other than its default.
constexpr char kEveryKey[] = R"(
runtime = "crun"
root = "/run/hull/crun"
systemd_cgroup = true
no_pivot_root = true
no_new_keyring = true
io_uid = 1000
io_gid = 4294967295
shim_cgroup = "/system.slice/hull-shims"
criu_path = "/usr/sbin/criu"
criu_image_path = "/var/lib/hull/images"
criu_work_path = "/var/lib/hull/work"
log_level = "debug"

[sizing]
overhead_vcpus = 0.1
overhead_memory_mib = 96
default_vcpus = 2
default_memory_mib = 1024
min_memory_mib = 256
max_vcpus = 8
round_memory_to_even = false
pod_cgroup_limits = true
shim_in_pod_cgroup = true

[ttrpc]
max_connections = 64
max_calls_per_connection = 100
partial_frame_timeout_ms = 0

[security]
confine = true
logging_binaries = ["/usr/local/bin/nerdctl", "/opt/log/bin/fluent"]
)";

ShimConfig EveryKey() {
  ShimConfig c;
  c.runtime.binary_name = "crun";
  c.runtime.root = "/run/hull/crun";
  c.runtime.systemd_cgroup = true;
  c.runtime.no_pivot_root = true;
  c.runtime.no_new_keyring = true;
  c.io_uid = 1000;
  c.io_gid = 4294967295u;
  c.shim_cgroup = "/system.slice/hull-shims";
  c.runtime.criu_path = "/usr/sbin/criu";
  c.runtime.criu_image_path = "/var/lib/hull/images";
  c.runtime.criu_work_path = "/var/lib/hull/work";
  c.log_level = LogLevel::kDebug;
  c.sizing.policy.overhead_vcpus = 0.1;
  c.sizing.policy.overhead_memory_mib = 96;
  c.sizing.policy.default_vcpus = 2;
  c.sizing.policy.default_memory_mib = 1024;
  c.sizing.policy.min_memory_mib = 256;
  c.sizing.policy.max_vcpus = 8;
  c.sizing.policy.round_memory_to_even = false;
  c.sizing.pod_cgroup_limits = true;
  c.sizing.shim_in_pod_cgroup = true;
  c.ttrpc.max_connections = 64;
  c.ttrpc.max_calls_per_connection = 100;
  c.ttrpc.partial_frame_timeout_ms = 0;
  c.runtime.vm.qemu = "/opt/qemu/bin/qemu-system-x86_64";
  c.runtime.vm.kernel = "/var/lib/hull/vmlinux";
  c.runtime.vm.initramfs = "/var/lib/hull/initramfs.cpio";
  c.runtime.vm.kernel_args = "loglevel=7";
  c.runtime.vm.machine = "pc";
  c.runtime.vm.accel = "kvm";
  c.runtime.vm.share = "virtiofs";
  c.runtime.vm.agent_timeout_ms = 5000;
  c.runtime.vm.tcg_tb_size_mib = 64;
  c.runtime.vm.clone_tcg_tb_size_mib = 24;
  c.runtime.vm.templates = true;
  c.runtime.vm.template_cache_mib = 512;
  c.runtime.vm.memory_headroom_mib = 128;
  c.runtime.vm.jail = false;
  c.runtime.vm.share_helper = "/opt/qemu/libexec/virtfs-proxy-helper";
  c.runtime.vm.jail_id_base = 3'000'000'000;
  c.security.confine = true;
  c.security.logging_binaries = {"/usr/local/bin/nerdctl", "/opt/log/bin/fluent"};
  return c;
}

class ConfigTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-config"};  // root_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
    return (root_ / name).string();
  }
  fs::path root_;
};

TEST_F(ConfigTest, Defaults) {
  ShimConfig c;
  EXPECT_EQ(c.runtime.binary_name, "runc");
  EXPECT_EQ(c.runtime.root, "");
  EXPECT_FALSE(c.runtime.systemd_cgroup);
  EXPECT_EQ(c.io_uid, 0u);
  EXPECT_EQ(c.shim_cgroup, "");
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.sizing.policy.overhead_memory_mib, 112u);
  EXPECT_EQ(c.sizing.policy.overhead_memory_percent, 3.0);
  EXPECT_FALSE(c.sizing.pod_cgroup_limits);
  EXPECT_FALSE(c.sizing.shim_in_pod_cgroup);
}

TEST_F(ConfigTest, SizingKeysOneByOne) {
  ShimConfig c;
  ASSERT_TRUE(ApplyToml("[sizing]\noverhead_vcpus = 1\nmax_vcpus = 0\n", "test", c).ok());
  EXPECT_EQ(c.sizing.policy.overhead_vcpus, 1.0);  // an integer is a number too
  EXPECT_EQ(c.sizing.policy.max_vcpus, 0u);
  EXPECT_EQ(c.sizing.policy.default_memory_mib, 2048u);
  // A later file changes only the keys it has.
  ASSERT_TRUE(ApplyToml("[sizing]\nshim_in_pod_cgroup = true\n", "test", c).ok());
  EXPECT_TRUE(c.sizing.shim_in_pod_cgroup);
  EXPECT_EQ(c.sizing.policy.overhead_vcpus, 1.0);
}

TEST_F(ConfigTest, TtrpcKeysOneByOneAndTheirRanges) {
  ShimConfig c;
  EXPECT_EQ(c.ttrpc.max_connections, 256u);
  EXPECT_EQ(c.ttrpc.max_calls_per_connection, 4096u);
  EXPECT_EQ(c.ttrpc.partial_frame_timeout_ms, 10000u);
  ASSERT_TRUE(ApplyToml("[ttrpc]\nmax_connections = 1\n", "test", c).ok());
  EXPECT_EQ(c.ttrpc.max_connections, 1u);
  EXPECT_EQ(c.ttrpc.max_calls_per_connection, 4096u);
  for (const char* bad :
       {"[ttrpc]\nmax_connections = 0\n", "[ttrpc]\nmax_connections = 1048577\n",
        "[ttrpc]\nmax_calls_per_connection = 0\n", "[ttrpc]\npartial_frame_timeout_ms = -1\n",
        "[ttrpc]\npartial_frame_timeout_ms = 3600001\n", "[ttrpc]\nmax_conections = 5\n"}) {
    EXPECT_EQ(ApplyToml(bad, "test", c).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(c.ttrpc.max_connections, 1u);  // refused files change nothing
}

// On by default (issue 26, item 6); `confine = false` stays for debugging.
TEST_F(ConfigTest, SecurityConfineIsABoolOnByDefault) {
  ShimConfig c;
  EXPECT_TRUE(c.security.confine);
  ASSERT_TRUE(ApplyToml("[security]\nconfine = false\n", "test", c).ok());
  EXPECT_FALSE(c.security.confine);
  for (const char* bad : {"[security]\nconfine = 1\n", "[security]\nconfined = true\n"}) {
    EXPECT_EQ(ApplyToml(bad, "test", c).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(c.security.confine);
  EXPECT_NE(ToToml(ShimConfig{}).find("confine = true"), std::string::npos);
}

TEST_F(ConfigTest, LoggingBinariesAreAbsolutePaths) {
  ShimConfig c;
  EXPECT_TRUE(c.security.logging_binaries.empty());
  ASSERT_TRUE(ApplyToml("[security]\nlogging_binaries = [\"/bin/a\", \"/bin/b\"]\n", "t", c).ok());
  EXPECT_EQ(c.security.logging_binaries, (std::vector<std::string>{"/bin/a", "/bin/b"}));
  for (const char* bad :
       {"[security]\nlogging_binaries = \"/bin/a\"\n", "[security]\nlogging_binaries = [\"a\"]\n",
        "[security]\nlogging_binaries = [\"\"]\n", "[security]\nlogging_binaries = [1]\n"}) {
    EXPECT_EQ(ApplyToml(bad, "t", c).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(c.security.logging_binaries, (std::vector<std::string>{"/bin/a", "/bin/b"}));
}

// Found by tests/fuzz/config_fuzzer: toml++ reaches __builtin_unreachable on
// such a code point where whitespace may stand.
TEST_F(ConfigTest, CodePointsTomlPlusPlusMishandlesAreRefused) {
  ShimConfig c;
  // The first and last of each range: U+00A1, U+0499, U+2C5E, U+3057,
  // U+FB26, U+FEFE; and some inside.
  for (const char* text : {"x = 1\n\xef\xb0\x80y = 2\n", "\xef\xac\xa6", "a = \"\xef\xbb\xbe\"\n",
                           "root = \"/caf\xc3\xa9\"\n", "\xe3\x80\x81 = 1\n", "a = \"\xc2\xa1\"\n",
                           "a = \"\xd2\x99\"\n", "x = 1\xe2\xb1\x9e\n", "a = \"\xe3\x81\x97\"\n",
                           "a = \"\xe2\xb4\x80\"\n"}) {
    EXPECT_EQ(ApplyToml(text, "test", c).code(), Code::kInvalidArgument) << text;
  }
  // Neighbours are fine: U+FB25, U+049A, U+2C5D and U+3058 in a string,
  // U+FEFF (BOM) at the start.
  EXPECT_TRUE(ApplyToml("shim_cgroup = \"\xef\xac\xa5\"\n", "test", c).ok());
  EXPECT_TRUE(ApplyToml("shim_cgroup = \"\xe2\xb1\x9d\"\n", "test", c).ok());  // U+2C5D
  EXPECT_TRUE(ApplyToml("shim_cgroup = \"\xe3\x81\x98\"\n", "test", c).ok());  // U+3058
  EXPECT_TRUE(ApplyToml("shim_cgroup = \"\xd2\x9a\"\n", "test", c).ok());      // U+049A
  EXPECT_TRUE(ApplyToml("\xef\xbb\xbflog_level = \"info\"\n", "test", c).ok());
}

// Found by tests/fuzz/config_fuzzer: toml++'s own assert() (Debug builds)
// on "[" and a control character, which its release build refuses.
TEST_F(ConfigTest, ATableHeaderWithAControlCharacterIsRefused) {
  ShimConfig c;
  for (std::string_view text : {std::string_view("[\x1b\0\0\0\0\0\0\0overhead_vcpus\n", 24),
                                std::string_view("[\x01]\n"), std::string_view("[ \x7f]\n")}) {
    EXPECT_EQ(ApplyToml(text, "test", c).code(), Code::kInvalidArgument) << text;
  }
}

// Found by tests/fuzz/config_fuzzer: a relative root was taken from runc's
// Options and stored in the bundle as TOML that could not be read back.
TEST_F(ConfigTest, RuncOptionsFollowTheTomlKeysRules) {
  for (auto set : std::vector<std::function<void(containerd::runc::v1::Options&)>>{
           [](auto& o) { o.set_root("relative/root"); }, [](auto& o) { o.set_criu_path("criu"); },
           [](auto& o) { o.set_binary_name("bin/runc"); }}) {
    containerd::runc::v1::Options o;
    set(o);
    ShimConfig c;
    EXPECT_EQ(ApplyOptions(RuncAny(o), c).code(), Code::kInvalidArgument) << o.DebugString();
    EXPECT_EQ(c, ShimConfig());  // untouched
  }
}

// Found by tests/fuzz/config_fuzzer (runc_options_not_representable): what
// ApplyOptions accepts must come back from the bundle's TOML unchanged.
TEST_F(ConfigTest, AcceptedRuncOptionsSurviveTheBundleToml) {
  const std::string payload(
      "\x32\x04\x63\x72\x75\x6e\x1a\x06\x0a\x72\x75\x6e\x2f\x01\x42\x0e\x2f\x75\x73\x72\x2f\x73\x62"
      "\x72\x75\x6e\x2f\x78\x08\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45\x45"
      "\x20\xe8\x48\x01",
      50);
  google::protobuf::Any any;
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value(payload);
  ShimConfig c;
  if (!ApplyOptions(any, c).ok()) return;  // refused: nothing to store
  ShimConfig reread;
  ASSERT_TRUE(ApplyToml(ToToml(c), "bundle", reread).ok());
  EXPECT_EQ(reread, c);
}

TEST_F(ConfigTest, EveryKey) {
  ShimConfig c;
  Status s = ApplyToml(kEveryKey, "test", c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c, EveryKey());
}

TEST_F(ConfigTest, KeysPresentOverrideOthersStay) {
  ShimConfig c = EveryKey();
  ASSERT_TRUE(ApplyToml("runtime = \"runc\"\nsystemd_cgroup = false\n", "test", c).ok());
  ShimConfig want = EveryKey();
  want.runtime.binary_name = "runc";
  want.runtime.systemd_cgroup = false;
  EXPECT_EQ(c, want);
  ASSERT_TRUE(ApplyToml("runtime = \"/usr/local/bin/crun\"", "test", c).ok());
  EXPECT_EQ(c.runtime.binary_name, "/usr/local/bin/crun");
}

TEST_F(ConfigTest, BadInputIsInvalidArgumentAndChangesNothing) {
  for (const char* text : {
           "runtime = ",                               // syntax
           "[unclosed",                                // syntax
           "runtim = \"runc\"",                        // unknown key
           "runtime = \"runc\"\nbogus = 1",            // unknown key after a good one
           "[vm]\nmemory = 1",                         // section not (yet) known
           "[sizing]\noverhead = 1",                   // unknown key in a known section
           "sizing = 1",                               // a section's name as a key
           "[sizing]\noverhead_vcpus = -0.5",          // range
           "[sizing]\noverhead_vcpus = nan",           // not finite
           "[sizing]\noverhead_vcpus = \"1\"",         // type
           "[sizing]\ndefault_vcpus = 0",              // range (at least 1)
           "[sizing]\nmax_vcpus = 5000",               // range
           "[sizing]\nmin_memory_mib = 0",             // range (never 0 MiB)
           "[sizing]\ndefault_memory_mib = 99999999",  // range
           "[sizing]\nround_memory_to_even = 1",       // type
           "[sizing]\nshim_in_pod_cgroup = \"yes\"",   // type
           "systemd_cgroup = \"yes\"",                 // type
           "io_uid = -1",                              // range
           "io_gid = 4294967296",                      // range
           "io_uid = 1.5",                             // type
           "root = \"relative/path\"",                 // not absolute
           "criu_work_path = \"work\"",                // not absolute
           "runtime = \"\"",                           // empty
           "runtime = \"bin/runc\"",                   // relative path
           "log_level = \"loud\"",                     // enum
           "TypeUrl = \"x\"",                          // containerd's key outside config_body
       }) {
    ShimConfig c = EveryKey();
    Status s = ApplyToml(text, "test", c);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(c, EveryKey()) << text;
  }
}

TEST_F(ConfigTest, ContainerdKeysAreIgnoredInConfigBody) {
  ShimConfig c;
  ASSERT_TRUE(ApplyToml("TypeUrl = \"x\"\nConfigPath = \"\"\nruntime = \"crun\"", "body", c,
                        /*containerd_keys=*/true)
                  .ok());
  EXPECT_EQ(c.runtime.binary_name, "crun");
}

TEST_F(ConfigTest, TomlRoundTrip) {
  ShimConfig back;
  Status s = ApplyToml(ToToml(EveryKey()), "round trip", back);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << ToToml(EveryKey());
  EXPECT_EQ(back, EveryKey());
  // Defaults survive too (empty strings included).
  ShimConfig defaults;
  ShimConfig other = EveryKey();
  ASSERT_TRUE(ApplyToml(ToToml(defaults), "round trip", other).ok());
  EXPECT_EQ(other, defaults);
}

// ---- [vm] ----

TEST_F(ConfigTest, VmTableAndRuntimeVm) {
  ShimConfig c;
  Status s = ApplyToml(R"(runtime = "vm"
[vm]
machine = "microvm"
accel = "tcg"
share = "9p"
agent_timeout_ms = 120000
kernel = "/k"
tcg_tb_size_mib = 16
clone_tcg_tb_size_mib = 8
templates = true
template_cache_mib = 2048
memory_headroom_mib = 512
share_helper = ""
jail_id_base = 100000
)",
                       "vm.toml", c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.runtime.binary_name, "vm");
  EXPECT_EQ(c.runtime.vm.agent_timeout_ms, 120000u);
  EXPECT_EQ(c.runtime.vm.tcg_tb_size_mib, 16u);
  EXPECT_EQ(c.runtime.vm.clone_tcg_tb_size_mib, 8u);
  EXPECT_TRUE(c.runtime.vm.templates);
  EXPECT_EQ(c.runtime.vm.template_cache_mib, 2048u);
  EXPECT_EQ(c.runtime.vm.memory_headroom_mib, 512u);
  EXPECT_EQ(c.runtime.vm.share_helper, "");
  EXPECT_EQ(c.runtime.vm.jail_id_base, 100000u);
  EXPECT_TRUE(c.runtime.vm.jail);  // the default
  EXPECT_EQ(c.runtime.vm.kernel, "/k");
  EXPECT_EQ(c.runtime.vm.qemu, "qemu-system-x86_64");  // the default
}

TEST_F(ConfigTest, VmBadKeysAndValuesAreRefusedWithTheLine) {
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& bad : {
           Bad{"[vm]\nmachine = \"q35\"", "vm.machine: \"q35\" is not one of"},
           Bad{"[vm]\naccel = \"hvf\"", "vm.accel: \"hvf\" is not one of"},
           Bad{"[vm]\nshare = \"nfs\"", "vm.share: \"nfs\" is not one of"},
           Bad{"[vm]\nagent_timeout_ms = 0", "agent_timeout_ms: expected an integer"},
           Bad{"[vm]\nkernel = 3", "kernel: expected a string"},
           Bad{"[vm]\ntemplates = \"yes\"", "templates: expected true or false"},
           Bad{"[vm]\ntcg_tb_size_mib = -1", "tcg_tb_size_mib: expected an integer"},
           Bad{"[vm]\nclone_tcg_tb_size_mib = 5000", "clone_tcg_tb_size_mib: expected an integer"},
           Bad{"[vm]\nmemory_headroom_mib = 2000000", "memory_headroom_mib: expected an integer"},
           Bad{"[vm]\njail_id_base = 0", "jail_id_base: expected an integer"},
           Bad{"[vm]\njail_id_base = 4294000000", "jail_id_base: expected an integer"},
           Bad{"[vm]\nshare_helper = false", "share_helper: expected a string"},
           Bad{"[vm]\nvcpus = 2", "unknown key \"vm.vcpus\""},
       }) {
    ShimConfig c = EveryKey();
    Status s = ApplyToml(bad.text, "vm.toml", c);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad.text;
    EXPECT_NE(s.message().find(bad.says), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("vm.toml: line 2"), std::string::npos) << s.message();
    EXPECT_EQ(c, EveryKey());  // untouched
  }
}

// ---- [runsc_config] ----

TEST_F(ConfigTest, RunscConfigStringsBoolsAndInts) {
  ShimConfig c;
  Status s = ApplyToml(R"(binary_name = "runsc"
root = "/run/hull/runsc"
[runsc_config]
network = "none"
debug = true
overlay = false
watchdog-action = "panic"
num-network-channels = 4
debug_log = "/var/log/runsc/%ID%/"
)",
                       "runsc.toml", c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.runtime.binary_name, "runsc");  // gVisor's name for `runtime`
  EXPECT_EQ(c.runtime.root, "/run/hull/runsc");
  const std::map<std::string, std::string> want = {
      {"debug", "true"},    {"debug_log", "/var/log/runsc/%ID%/"},
      {"network", "none"},  {"num-network-channels", "4"},
      {"overlay", "false"}, {"watchdog-action", "panic"},
  };
  EXPECT_EQ(c.runtime.runtime_flags, want);
  ShimConfig empty;
  ASSERT_TRUE(ApplyToml("[runsc_config]\n", "test", empty).ok());
  EXPECT_TRUE(empty.runtime.runtime_flags.empty());
}

// gVisor's runsc.toml as Monogon ships it: no binary_name, gVisor's shim
// then runs runsc; hull's handler reading the same file must too.
TEST_F(ConfigTest, RunscConfigWithoutRuntimeMeansRunsc) {
  const char* monogon = R"(root = "/ephemeral/containerd/runsc"
[runsc_config]
debug = "false"
log = "/ephemeral/containerd/runsc-logs.fifo"
)";
  ShimConfig c;  // /etc/hull/config.toml's runtime = "runc"
  ASSERT_EQ(c.runtime.binary_name, "runc");
  Status s = ApplyToml(monogon, "runsc.toml", c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.runtime.binary_name, "runsc");
  EXPECT_EQ(c.runtime.root, "/ephemeral/containerd/runsc");
  EXPECT_EQ(c.runtime.runtime_flags.at("log"), "/ephemeral/containerd/runsc-logs.fifo");

  // A runsc path a lower layer named stays.
  ShimConfig path;
  path.runtime.binary_name = "/opt/gvisor/bin/runsc";
  ASSERT_TRUE(ApplyToml(monogon, "runsc.toml", path).ok());
  EXPECT_EQ(path.runtime.binary_name, "/opt/gvisor/bin/runsc");

  // A runtime named in the same file wins, under either name.
  for (const char* text : {"runtime = \"crun\"\n[runsc_config]\nx = \"y\"\n",
                           "binary_name = \"crun\"\n[runsc_config]\n"}) {
    ShimConfig named;
    ASSERT_TRUE(ApplyToml(text, "test", named).ok()) << text;
    EXPECT_EQ(named.runtime.binary_name, "crun") << text;
  }
  // No [runsc_config]: no runsc.
  ShimConfig plain;
  ASSERT_TRUE(ApplyToml("root = \"/run/x\"\n", "test", plain).ok());
  EXPECT_EQ(plain.runtime.binary_name, "runc");
  // A bad file changes nothing, the implied runtime included.
  ShimConfig bad;
  EXPECT_FALSE(ApplyToml("[runsc_config]\nx = 1.5\n", "test", bad).ok());
  EXPECT_EQ(bad.runtime.binary_name, "runc");
}

TEST_F(ConfigTest, RunscConfigBadNamesAndTypesNameTheFileAndLine) {
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& bad : {
           Bad{"[runsc_config]\nnetwork = \"none\"\n\"--root\" = \"/x\"", "not a flag name"},
           Bad{"[runsc_config]\n\"Network\" = \"none\"", "not a flag name"},
           Bad{"[runsc_config]\n\"net work\" = \"none\"", "not a flag name"},
           Bad{"[runsc_config]\n\"a=b\" = \"c\"", "not a flag name"},
           Bad{"[runsc_config]\n\"\" = \"c\"", "not a flag name"},
           Bad{"[runsc_config]\nx = 1.5", "expected a string, boolean or integer"},
           Bad{"[runsc_config]\nx = [\"a\"]", "expected a string, boolean or integer"},
           Bad{"[runsc_config]\nx = 1979-05-27", "expected a string, boolean or integer"},
           Bad{"[runsc_config]\n[runsc_config.x]\ny = 1", "expected a string, boolean or integer"},
           Bad{"runsc_config = \"network=none\"", "unknown key \"runsc_config\""},
       }) {
    ShimConfig c = EveryKey();
    c.runtime.runtime_flags = {{"platform", "ptrace"}};
    ShimConfig before = c;
    Status s = ApplyToml(bad.text, "/etc/hull/runsc.toml", c);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad.text;
    EXPECT_NE(s.message().find("/etc/hull/runsc.toml: line "), std::string::npos)
        << bad.text << ": " << s.message();
    EXPECT_NE(s.message().find(bad.says), std::string::npos) << bad.text << ": " << s.message();
    EXPECT_EQ(c, before) << bad.text;  // nothing applied, not even the good keys
  }
  // The line is the bad key's.
  ShimConfig c;
  Status s = ApplyToml("[runsc_config]\nnetwork = \"none\"\n\ndebug = 0.5\n", "f.toml", c);
  EXPECT_NE(s.message().find("f.toml: line 4: [runsc_config] debug:"), std::string::npos)
      << s.message();
}

TEST_F(ConfigTest, RunscConfigLayersKeyByKey) {
  // The config file, then the runtime handler's config_path, then its body.
  std::string file = Write("config.toml",
                           "runtime = \"runsc\"\n[runsc_config]\nnetwork = \"none\"\n"
                           "platform = \"ptrace\"\n");
  std::string handler = Write("handler.toml", "[runsc_config]\nplatform = \"kvm\"\ndebug = true\n");
  auto c = ResolveConfig(file, nullptr);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  google::protobuf::Any options = RuntimeOptionsAny(handler, "[runsc_config]\ndebug = false\n");
  ASSERT_TRUE(ApplyOptions(options, *c).ok());
  const std::map<std::string, std::string> want = {
      {"debug", "false"}, {"network", "none"}, {"platform", "kvm"}};
  EXPECT_EQ(c->runtime.runtime_flags, want);
  EXPECT_EQ(c->runtime.binary_name, "runsc");
  // A later layer without the table keeps the flags.
  ASSERT_TRUE(ApplyToml("log_level = \"debug\"", "test", *c).ok());
  EXPECT_EQ(c->runtime.runtime_flags, want);
  // Flags are part of equality (the bundle copy is compared whole).
  ShimConfig other = *c;
  other.runtime.runtime_flags["debug"] = "true";
  EXPECT_FALSE(other == *c);
}

TEST_F(ConfigTest, RunscConfigRoundTrip) {
  ShimConfig c = EveryKey();
  c.runtime.binary_name = "runsc";
  c.runtime.runtime_flags = {{"debug", "true"},
                             {"debug-log", "/var/log/runsc/"},
                             {"network", "none"},
                             {"num-network-channels", "4"},
                             {"quoted", "a \"b\" \\ c"}};
  std::string text = ToToml(c);
  EXPECT_NE(text.find("[runsc_config]"), std::string::npos) << text;
  ShimConfig back;
  Status s = ApplyToml(text, "round trip", back);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << text;
  EXPECT_EQ(back, c);
  // And through the bundle copy the server reads.
  fs::create_directories(root_ / "bundle");
  ASSERT_TRUE(WriteBundleConfig((root_ / "bundle").string(), c).ok());
  auto stored = ReadBundleConfig((root_ / "bundle").string());
  ASSERT_TRUE(stored.has_value()) << stored.error().ToString();
  EXPECT_EQ(*stored, c);
}

TEST_F(ConfigTest, ConfigFile) {
  auto missing = LoadConfigFile((root_ / "missing.toml").string());
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(*missing, ShimConfig());

  auto good = LoadConfigFile(Write("good.toml", kEveryKey));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, EveryKey());

  auto bad = LoadConfigFile(Write("bad.toml", "nope = 1"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);

  EXPECT_EQ(ConfigFilePath(nullptr), "/etc/hull/config.toml");
  EXPECT_EQ(ConfigFilePath(""), "/etc/hull/config.toml");
  EXPECT_EQ(ConfigFilePath("/x.toml"), "/x.toml");
}

TEST_F(ConfigTest, RuncOptions) {
  containerd::runc::v1::Options o;
  o.set_binary_name("crun");
  o.set_root("/run/r");
  o.set_systemd_cgroup(true);
  o.set_no_pivot_root(true);
  o.set_no_new_keyring(true);
  o.set_shim_cgroup("/shims");
  o.set_io_uid(7);
  o.set_io_gid(8);
  o.set_criu_path("/c");
  o.set_criu_image_path("/ci");
  o.set_criu_work_path("/cw");
  o.set_task_api_address("ignored");
  ShimConfig c;
  ASSERT_TRUE(ApplyOptions(RuncAny(o), c).ok());
  EXPECT_EQ(c.runtime.binary_name, "crun");
  EXPECT_EQ(c.runtime.root, "/run/r");
  EXPECT_TRUE(c.runtime.systemd_cgroup);
  EXPECT_TRUE(c.runtime.no_pivot_root);
  EXPECT_TRUE(c.runtime.no_new_keyring);
  EXPECT_EQ(c.shim_cgroup, "/shims");
  EXPECT_EQ(c.io_uid, 7u);
  EXPECT_EQ(c.io_gid, 8u);
  EXPECT_EQ(c.runtime.criu_path, "/c");
  EXPECT_EQ(c.runtime.criu_image_path, "/ci");
  EXPECT_EQ(c.runtime.criu_work_path, "/cw");
}

// containerd 1.6's client (WithShimCgroup) sends the runctypes form to
// runtimes not named io.containerd.runc.*.
TEST_F(ConfigTest, RuncCreateOptionsSetTheirKeys) {
  containerd::linux::runc::CreateOptions o;
  o.set_no_pivot_root(true);
  o.set_no_new_keyring(true);
  o.set_shim_cgroup("/shims");
  o.set_io_uid(7);
  o.set_io_gid(8);
  o.set_criu_image_path("/ci");
  o.set_criu_work_path("/cw");
  o.set_open_tcp(true);  // a restore setting: accepted, no key
  google::protobuf::Any any;
  any.set_type_url("containerd.linux.runc.CreateOptions");
  any.set_value(o.SerializeAsString());
  ShimConfig c;
  Status s = ApplyOptions(any, c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.runtime.no_pivot_root);
  EXPECT_TRUE(c.runtime.no_new_keyring);
  EXPECT_EQ(c.shim_cgroup, "/shims");
  EXPECT_EQ(c.io_uid, 7u);
  EXPECT_EQ(c.io_gid, 8u);
  EXPECT_EQ(c.runtime.criu_image_path, "/ci");
  EXPECT_EQ(c.runtime.criu_work_path, "/cw");
  EXPECT_EQ(c.runtime.binary_name, ShimConfig().runtime.binary_name);

  // Unset fields keep the config file's values; a malformed one changes nothing.
  c = EveryKey();
  any.set_value(containerd::linux::runc::CreateOptions().SerializeAsString());
  ASSERT_TRUE(ApplyOptions(any, c).ok());
  EXPECT_EQ(c, EveryKey());
  any.set_value("\xff\xff\xff");
  EXPECT_EQ(ApplyOptions(any, c).code(), Code::kInvalidArgument);
  EXPECT_EQ(c, EveryKey());
}

TEST_F(ConfigTest, UnsetRuncFieldsKeepTheConfigFile) {
  ShimConfig c = EveryKey();
  ASSERT_TRUE(ApplyOptions(RuncAny(containerd::runc::v1::Options()), c).ok());
  EXPECT_EQ(c, EveryKey());
}

TEST_F(ConfigTest, TypeUrlWithHostPrefix) {
  containerd::runc::v1::Options o;
  o.set_binary_name("crun");
  ShimConfig c;
  ASSERT_TRUE(ApplyOptions(RuncAny(o, "type.googleapis.com/containerd.runc.v1.Options"), c).ok());
  EXPECT_EQ(c.runtime.binary_name, "crun");
}

TEST_F(ConfigTest, RuntimeOptionsConfigBody) {
  ShimConfig c;
  Status s = ApplyOptions(
      RuntimeOptionsAny("", "TypeUrl = \"io.containerd.hull.v2.options\"\nruntime = \"crun\"\n"),
      c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.runtime.binary_name, "crun");
}

TEST_F(ConfigTest, RuntimeOptionsConfigPathThenBody) {
  std::string path = Write("handler.toml", "runtime = \"crun\"\nsystemd_cgroup = true\n");
  ShimConfig c;
  ASSERT_TRUE(ApplyOptions(RuntimeOptionsAny(path, ""), c).ok());
  EXPECT_EQ(c.runtime.binary_name, "crun");
  EXPECT_TRUE(c.runtime.systemd_cgroup);

  c = ShimConfig();
  ASSERT_TRUE(ApplyOptions(RuntimeOptionsAny(path, "runtime = \"runc\""), c).ok());
  EXPECT_EQ(c.runtime.binary_name, "runc");  // the body is applied last
  EXPECT_TRUE(c.runtime.systemd_cgroup);
}

TEST_F(ConfigTest, RuntimeOptionsErrors) {
  ShimConfig c = EveryKey();
  EXPECT_EQ(ApplyOptions(RuntimeOptionsAny("", "runtime = "), c).code(), Code::kInvalidArgument);
  EXPECT_EQ(ApplyOptions(RuntimeOptionsAny("", "unknown_key = 1"), c).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ApplyOptions(RuntimeOptionsAny((root_ / "missing.toml").string(), ""), c).code(),
            Code::kNotFound);
  std::string bad = Write("bad.toml", "runtime = 3");
  EXPECT_EQ(ApplyOptions(RuntimeOptionsAny(bad, ""), c).code(), Code::kInvalidArgument);
  // A good config_path followed by a bad body changes nothing either.
  std::string good = Write("good.toml", "runtime = \"runc\"");
  EXPECT_EQ(ApplyOptions(RuntimeOptionsAny(good, "x = 1"), c).code(), Code::kInvalidArgument);
  EXPECT_EQ(c, EveryKey());
}

TEST_F(ConfigTest, UnknownOrMalformedOptions) {
  ShimConfig c;
  google::protobuf::Any any;
  any.set_type_url("io.containerd.runhcs.v1.Options");
  EXPECT_EQ(ApplyOptions(any, c).code(), Code::kInvalidArgument);
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value("\xff\xff\xff");
  EXPECT_EQ(ApplyOptions(any, c).code(), Code::kInvalidArgument);
  any.set_type_url("runtimeoptions.v1.Options");
  EXPECT_EQ(ApplyOptions(any, c).code(), Code::kInvalidArgument);
  EXPECT_EQ(c, ShimConfig());
  // An empty Any is "no options".
  EXPECT_TRUE(ApplyOptions(google::protobuf::Any(), c).ok());
}

TEST_F(ConfigTest, ResolveConfig) {
  std::string path = Write("config.toml", "runtime = \"crun\"\nio_uid = 5\n");
  containerd::runc::v1::Options o;
  o.set_binary_name("runc");
  auto any = RuncAny(o);
  auto c = ResolveConfig(path, &any);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->runtime.binary_name, "runc");
  EXPECT_EQ(c->io_uid, 5u);
  c = ResolveConfig(path, nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->runtime.binary_name, "crun");
}

TEST_F(ConfigTest, BundleCopy) {
  fs::create_directories(root_ / "bundle");
  std::string bundle = (root_ / "bundle").string();
  EXPECT_EQ(ReadBundleConfig(bundle).error().code(), Code::kNotFound);
  ASSERT_TRUE(WriteBundleConfig(bundle, EveryKey()).ok());
  struct stat st;
  ASSERT_EQ(::stat((root_ / "bundle/hull-config.toml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = ReadBundleConfig(bundle);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, EveryKey());
}

TEST_F(ConfigTest, ContainerConfigForTheServer) {
  fs::create_directories(root_ / "bundle");
  std::string bundle = (root_ / "bundle").string();
  std::string config_file = Write("config.toml", "runtime = \"crun\"");
  // Nothing stored, no options: the config file.
  auto c = ResolveContainerConfig(google::protobuf::Any(), bundle, config_file);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->runtime.binary_name, "crun");
  // Stored by `start`: that.
  ShimConfig stored;
  stored.runtime.binary_name = "/opt/runc";
  ASSERT_TRUE(WriteBundleConfig(bundle, stored).ok());
  c = ResolveContainerConfig(google::protobuf::Any(), bundle, config_file);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->runtime.binary_name, "/opt/runc");
  // Options in the request: resolved from them over the config file.
  containerd::runc::v1::Options o;
  o.set_systemd_cgroup(true);
  c = ResolveContainerConfig(RuncAny(o), bundle, config_file);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->runtime.binary_name, "crun");
  EXPECT_TRUE(c->runtime.systemd_cgroup);
}

}  // namespace
}  // namespace hull::shim
