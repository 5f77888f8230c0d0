// The pause spec builder: whole specs against golden files written from
// containerd's code (key order included, since containerd writes Go struct
// order), the default spec against `ctr oci spec` of containerd 1.6.20, and
// each checklist item on its own: resources, DNS, sysctls, host IPC / network
// / PID, cgroups paths, OOM score, user, seccomp, user namespaces.

#include "oci/pause_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>

#include "base/file_util.h"
#include "cri/runtime/v1/api.pb.h"
#include "oci/annotations.h"
#include "tests/support/temp_dir.h"

namespace hull::oci {
namespace {

const std::string kTestdata = HULL_OCI_TESTDATA;
constexpr char kId[] = "4f1c0c7dbb6e1a8b1f7f2f3c7f7c6ad0bd0b4bdb0ea7f0a3c8d5e0c9f1a2b3c4";
constexpr char kShm[] =
    "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/"
    "4f1c0c7dbb6e1a8b1f7f2f3c7f7c6ad0bd0b4bdb0ea7f0a3c8d5e0c9f1a2b3c4/shm";

// A pod as kubelet sends it: resources, DNS config, sysctls, a systemd
// cgroup parent, pod annotations.
runtime::v1::PodSandboxConfig WebPod() {
  ::runtime::v1::PodSandboxConfig config;
  auto* metadata = config.mutable_metadata();
  metadata->set_name("web-0");
  metadata->set_uid("7d2a8f0e-0a4b-4c55-9a8e-1c2d3e4f5a6b");
  metadata->set_namespace_("default");
  config.set_hostname("web-0");
  config.set_log_directory("/var/log/pods/default_web-0_7d2a8f0e-0a4b-4c55-9a8e-1c2d3e4f5a6b");
  auto* dns = config.mutable_dns_config();
  dns->add_servers("10.96.0.10");
  dns->add_searches("default.svc.cluster.local");
  dns->add_options("ndots:5");
  (*config.mutable_labels())["app"] = "web";
  (*config.mutable_annotations())["kubernetes.io/config.source"] = "api";
  (*config.mutable_annotations())["io.katacontainers.config.hypervisor.default_vcpus"] = "2";
  auto* linux_config = config.mutable_linux();
  linux_config->set_cgroup_parent("kubepods-burstable-pod7d2a8f0e.slice");
  (*linux_config->mutable_sysctls())["net.core.somaxconn"] = "1024";
  (*linux_config->mutable_sysctls())["net.ipv4.ping_group_range"] = "1 1";
  linux_config->mutable_security_context()->mutable_namespace_options();
  auto* resources = linux_config->mutable_resources();
  resources->set_cpu_period(100000);
  resources->set_cpu_quota(50000);
  resources->set_cpu_shares(512);
  resources->set_memory_limit_in_bytes(268435456);
  auto* overhead = linux_config->mutable_overhead();
  overhead->set_memory_limit_in_bytes(134217728);
  return config;
}

ImageConfig PauseImage() {
  ImageConfig image;
  image.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  image.entrypoint = {"/pause"};
  image.user = "65535:65535";
  return image;
}

PauseSpecOptions Options(CriFlavor flavor = CriFlavor::kContainerd2) {
  PauseSpecOptions options;
  options.sandbox_id = kId;
  options.netns_path = "/var/run/netns/cni-1234";
  options.sandbox_image = "registry.k8s.io/pause:3.10";
  options.pod_annotations = {"io.katacontainers.*"};
  options.enable_unprivileged_ports = true;
  options.enable_unprivileged_icmp = true;
  options.flavor = flavor;
  return options;
}

Spec Build(const ::runtime::v1::PodSandboxConfig& config, const PauseSpecOptions& options,
           const ImageConfig& image = PauseImage()) {
  auto spec = BuildPauseSpec(config, image, options);
  EXPECT_TRUE(spec.has_value()) << spec.error().ToString();
  if (!spec.has_value()) return *Spec::Parse("{}");
  return *std::move(spec);
}

SpecJson Golden(const std::string& name) {
  auto text = ReadFile(kTestdata + "/" + name);
  EXPECT_TRUE(text.has_value()) << name;
  return SpecJson::parse(text.value_or("{}"), nullptr, false);
}

std::vector<std::string> Destinations(const Spec& spec) {
  std::vector<std::string> out;
  for (const Mount& m : spec.Mounts()) out.push_back(m.destination);
  return out;
}

bool HasNamespace(const Spec& spec, std::string_view type) {
  auto namespaces = spec.Namespaces();
  return std::any_of(namespaces.begin(), namespaces.end(),
                     [&](const Namespace& ns) { return ns.type == type; });
}

// The base everything starts from is byte for byte containerd 1.6.20's
// default spec (`ctr -n k8s.io oci spec`, container id "").
TEST(PauseSpecTest, DefaultSpecIsContainerds) {
  auto text = ReadFile(kTestdata + "/containerd_1.6.20_default_spec.json");
  ASSERT_TRUE(text.has_value());
  SpecJson built = DefaultUnixSpecJson(CriFlavor::kContainerd16, "k8s.io", "");
  EXPECT_EQ(built.dump(4) + "\n", *text);
  SpecJson v2 = DefaultUnixSpecJson(CriFlavor::kContainerd2, "k8s.io", "abc", "1.3.0");
  EXPECT_EQ(v2["ociVersion"], "1.3.0");
  EXPECT_EQ(v2["linux"]["cgroupsPath"], "/k8s.io/abc");
  EXPECT_EQ(v2["linux"]["maskedPaths"][9], "/sys/devices/virtual/powercap");
}

// The whole spec, checklist order and Go field order, for both flavors.
TEST(PauseSpecTest, GoldenContainerd2) {
  Spec spec = Build(WebPod(), Options(CriFlavor::kContainerd2));
  EXPECT_EQ(spec.json(), Golden("pause_spec_web_containerd2.json")) << spec.Dump(2);
}

TEST(PauseSpecTest, GoldenContainerd16) {
  Spec spec = Build(WebPod(), Options(CriFlavor::kContainerd16));
  EXPECT_EQ(spec.json(), Golden("pause_spec_web_containerd1.6.json")) << spec.Dump(2);
}

TEST(PauseSpecTest, SizingAnnotationsAreRawDecimalStrings) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  auto* resources = config.mutable_linux()->mutable_resources();
  resources->Clear();
  resources->set_cpu_quota(-1);
  resources->set_cpu_shares(2);
  Spec spec = Build(config, Options());
  EXPECT_EQ(spec.Annotation(kSandboxCpuPeriod), "0");
  EXPECT_EQ(spec.Annotation(kSandboxCpuQuota), "-1");
  EXPECT_EQ(spec.Annotation(kSandboxCpuShares), "2");
  EXPECT_EQ(spec.Annotation(kSandboxMemory), "0");
  // The pause container's own cgroup gets only the default shares.
  EXPECT_EQ(spec.json()["linux"]["resources"]["cpu"], SpecJson({{"shares", 2}}));

  config.mutable_linux()->clear_resources();
  spec = Build(config, Options());
  for (auto key : {kSandboxCpuPeriod, kSandboxCpuQuota, kSandboxCpuShares, kSandboxMemory}) {
    EXPECT_EQ(spec.Annotation(key), std::nullopt) << key;
  }
  // The overhead goes into no annotation.
  for (const auto& [key, value] : spec.Annotations()) {
    EXPECT_EQ(value.find("134217728"), std::string::npos) << key;
  }
}

TEST(PauseSpecTest, DefaultCriAnnotations) {
  Spec spec = Build(WebPod(), Options());
  EXPECT_EQ(spec.Annotation(kContainerType), "sandbox");
  EXPECT_EQ(spec.Annotation(kSandboxId), kId);
  EXPECT_EQ(spec.Annotation(kSandboxName), "web-0");
  EXPECT_EQ(spec.Annotation(kSandboxNamespace), "default");
  EXPECT_EQ(spec.Annotation(kSandboxUid), "7d2a8f0e-0a4b-4c55-9a8e-1c2d3e4f5a6b");
  EXPECT_EQ(spec.Annotation(kSandboxImageName), "registry.k8s.io/pause:3.10");
  // Only globbed pod annotations pass; '*' does not cross '/'.
  EXPECT_EQ(spec.Annotation("io.katacontainers.config.hypervisor.default_vcpus"), "2");
  EXPECT_EQ(spec.Annotation("kubernetes.io/config.source"), std::nullopt);
  PauseSpecOptions options = Options();
  options.pod_annotations = {"kubernetes.io/*", "*"};
  spec = Build(WebPod(), options);
  EXPECT_EQ(spec.Annotation("kubernetes.io/config.source"), "api");
  // A pod annotation cannot override a CRI annotation.
  ::runtime::v1::PodSandboxConfig config = WebPod();
  (*config.mutable_annotations())[std::string(kSandboxId)] = "forged";
  options.pod_annotations = {"io.kubernetes.cri.*"};
  spec = Build(config, options);
  EXPECT_EQ(spec.Annotation(kSandboxId), kId);
}

TEST(PauseSpecTest, DnsConfigOnlyMountsTheFile) {
  Spec spec = Build(WebPod(), Options());
  auto mounts = spec.Mounts();
  auto resolv = std::find_if(mounts.begin(), mounts.end(),
                             [](const Mount& m) { return m.destination == "/etc/resolv.conf"; });
  ASSERT_NE(resolv, mounts.end());
  EXPECT_EQ(resolv->source,
            SandboxPathsFor(kDefaultCriRootDir, kDefaultCriStateDir, kId).resolv_conf);
  // /etc/hosts and /etc/hostname are not mounted into the pause container.
  for (const Mount& m : mounts) {
    EXPECT_NE(m.destination, "/etc/hosts");
    EXPECT_NE(m.destination, "/etc/hostname");
  }
}

TEST(PauseSpecTest, Sysctls) {
  PauseSpecOptions options = Options();
  Spec spec = Build(WebPod(), options);
  auto sysctls = spec.Sysctls();
  EXPECT_EQ(sysctls.at("net.core.somaxconn"), "1024");
  EXPECT_EQ(sysctls.at("net.ipv4.ping_group_range"), "1 1");  // the pod's wins
  EXPECT_EQ(sysctls.at("net.ipv4.ip_unprivileged_port_start"), "0");

  ::runtime::v1::PodSandboxConfig config = WebPod();
  config.mutable_linux()->mutable_sysctls()->clear();
  spec = Build(config, options);
  EXPECT_EQ(spec.Sysctls().at("net.ipv4.ping_group_range"), "0 2147483647");
  options.running_in_user_namespace = true;
  spec = Build(config, options);
  EXPECT_FALSE(spec.Sysctls().contains("net.ipv4.ping_group_range"));
  options.enable_unprivileged_ports = false;
  options.enable_unprivileged_icmp = false;
  spec = Build(config, options);
  EXPECT_FALSE(spec.json()["linux"].contains("sysctl"));
}

TEST(PauseSpecTest, HostIpc) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_ipc(
      ::runtime::v1::NODE);
  Spec spec = Build(config, Options());
  EXPECT_FALSE(HasNamespace(spec, "ipc"));
  EXPECT_TRUE(HasNamespace(spec, "pid"));
  EXPECT_TRUE(HasNamespace(spec, "network"));
  auto mounts = spec.Mounts();
  auto shm = std::find_if(mounts.begin(), mounts.end(),
                          [](const Mount& m) { return m.destination == "/dev/shm"; });
  ASSERT_NE(shm, mounts.end());
  EXPECT_EQ(*shm,
            (Mount{"/dev/shm", "bind", "/dev/shm", {"rbind", "ro", "nosuid", "nodev", "noexec"}}));
  const auto destinations = Destinations(spec);
  EXPECT_EQ(std::count(destinations.begin(), destinations.end(), "/dev/shm"), 1);
}

TEST(PauseSpecTest, HostNetwork) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  config.clear_hostname();
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
      ::runtime::v1::NODE);
  Spec spec = Build(config, Options());
  EXPECT_FALSE(HasNamespace(spec, "network"));
  EXPECT_FALSE(HasNamespace(spec, "uts"));
  EXPECT_TRUE(HasNamespace(spec, "ipc"));
  EXPECT_FALSE(spec.json().contains("hostname"));
  // No unprivileged port / ICMP defaults on the host network; the pod's own
  // sysctls still apply.
  EXPECT_EQ(spec.Sysctls(),
            (std::map<std::string, std::string>{{"net.core.somaxconn", "1024"},
                                                {"net.ipv4.ping_group_range", "1 1"}}));
}

TEST(PauseSpecTest, HostPid) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_pid(
      ::runtime::v1::NODE);
  Spec spec = Build(config, Options());
  EXPECT_EQ(spec.Namespaces(),
            (std::vector<Namespace>{
                {"ipc", ""}, {"uts", ""}, {"mount", ""}, {"network", "/var/run/netns/cni-1234"}}));
}

TEST(PauseSpecTest, NetnsNotYetKnown) {
  PauseSpecOptions options = Options();
  options.netns_path.clear();
  Spec spec = Build(WebPod(), options);
  EXPECT_EQ(spec.Namespaces().back(), (Namespace{"network", ""}));
}

TEST(PauseSpecTest, CgroupsPath) {
  EXPECT_EQ(CgroupsPathFor("kubepods-besteffort.slice", "id", CgroupPathForm::kAuto),
            "kubepods-besteffort.slice:cri-containerd:id");
  EXPECT_EQ(CgroupsPathFor("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice",
                           "id", CgroupPathForm::kAuto),
            "kubepods-burstable-pod1.slice:cri-containerd:id");
  EXPECT_EQ(CgroupsPathFor("/kubepods/burstable/pod1", "id", CgroupPathForm::kAuto),
            "/kubepods/burstable/pod1/id");
  EXPECT_EQ(CgroupsPathFor("/kubepods/burstable/pod1/", "id", CgroupPathForm::kAuto),
            "/kubepods/burstable/pod1/id");
  EXPECT_EQ(CgroupsPathFor("/kubepods//besteffort/./pod1", "id", CgroupPathForm::kCgroupfs),
            "/kubepods/besteffort/pod1/id");
  EXPECT_EQ(CgroupsPathFor("kubepods.slice", "id", CgroupPathForm::kCgroupfs), "kubepods.slice/id");
  EXPECT_EQ(CgroupsPathFor("/kubepods/pod1", "id", CgroupPathForm::kSystemd),
            "pod1:cri-containerd:id");

  ::runtime::v1::PodSandboxConfig config = WebPod();
  config.mutable_linux()->set_cgroup_parent("/kubepods/burstable/pod7d2a8f0e");
  EXPECT_EQ(Build(config, Options()).CgroupsPath(),
            std::string("/kubepods/burstable/pod7d2a8f0e/") + kId);
  config.mutable_linux()->clear_cgroup_parent();
  EXPECT_EQ(Build(config, Options()).CgroupsPath(), std::string("/k8s.io/") + kId);
  PauseSpecOptions options = Options(CriFlavor::kContainerd16);
  options.disable_cgroup = true;
  Spec spec = Build(WebPod(), options);
  EXPECT_EQ(spec.CgroupsPath(), "");
  EXPECT_FALSE(spec.json()["linux"]["resources"].contains("cpu"));
}

TEST(PauseSpecTest, OomScoreAdj) {
  PauseSpecOptions options = Options();
  EXPECT_EQ(Build(WebPod(), options).OomScoreAdj(), -998);
  options.restrict_oom_score_adj = true;
  options.daemon_oom_score_adj = -500;
  EXPECT_EQ(Build(WebPod(), options).OomScoreAdj(), -500);
  options.daemon_oom_score_adj = 0;
  EXPECT_EQ(Build(WebPod(), options).OomScoreAdj(), 0);
  options.daemon_oom_score_adj = -999;
  EXPECT_EQ(Build(WebPod(), options).OomScoreAdj(), -998);
}

TEST(PauseSpecTest, CurrentOomScoreAdj) {
  auto adj = CurrentOomScoreAdj();
  ASSERT_TRUE(adj.has_value()) << adj.error().ToString();
  EXPECT_GE(*adj, -1000);
  EXPECT_LE(*adj, 1000);
  hull::testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "adj", "-17\n").ok());
  EXPECT_EQ(CurrentOomScoreAdj(dir / "adj"), -17);
  ASSERT_TRUE(WriteFileAtomic(dir / "adj", "x").ok());
  EXPECT_EQ(CurrentOomScoreAdj(dir / "adj").error().code(), Code::kInvalidArgument);
}

TEST(PauseSpecTest, ImageConfigProcess) {
  ImageConfig image;
  image.entrypoint = {"/pause", "-v"};
  image.cmd = {"--x"};
  image.working_dir = "/work";
  image.env = {"A=1", "B=2", "A=3", "C", "D="};
  Spec spec = Build(WebPod(), Options(), image);
  EXPECT_EQ(spec.Args(), (std::vector<std::string>{"/pause", "-v", "--x"}));
  EXPECT_EQ(spec.Cwd(), "/work");
  // containerd appends entries it has no default for; "C" (unset) has none.
  EXPECT_EQ(spec.Env(), (std::vector<std::string>{"A=1", "B=2", "A=3", "D="}));
  // No user: uid 0, no additional gids.
  EXPECT_EQ(spec.json()["process"]["user"], SpecJson({{"uid", 0}, {"gid", 0}}));
  EXPECT_FALSE(spec.json()["process"].contains("rlimits"));
  EXPECT_EQ(spec.json()["root"], SpecJson({{"path", "rootfs"}, {"readonly", true}}));

  image.entrypoint.clear();
  image.cmd.clear();
  auto empty = BuildPauseSpec(WebPod(), image, Options());
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), Code::kInvalidArgument);
}

TEST(PauseSpecTest, User) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  auto* sc = config.mutable_linux()->mutable_security_context();
  sc->add_supplemental_groups(3000);
  sc->add_supplemental_groups(1000);
  sc->add_supplemental_groups(3000);
  ImageConfig image = PauseImage();
  image.user.clear();
  // No user anywhere: the supplemental groups, sorted and deduplicated.
  Spec spec = Build(config, Options(), image);
  EXPECT_EQ(spec.json()["process"]["user"],
            SpecJson({{"uid", 0}, {"gid", 0}, {"additionalGids", {1000, 3000}}}));
  // A user resets them to its primary group (containerd's WithUser).
  sc->mutable_run_as_user()->set_value(1000);
  sc->mutable_run_as_group()->set_value(2000);
  spec = Build(config, Options(), PauseImage());
  EXPECT_EQ(spec.json()["process"]["user"],
            SpecJson({{"uid", 1000}, {"gid", 2000}, {"additionalGids", {2000}}}));
  // A group without a user is an error.
  sc->clear_run_as_user();
  auto result = BuildPauseSpec(config, PauseImage(), Options());
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
  // A name needs the rootfs.
  sc->clear_run_as_group();
  image.user = "nobody";
  result = BuildPauseSpec(config, image, Options());
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), Code::kFailedPrecondition);
}

TEST(PauseSpecTest, Seccomp) {
  hull::testing::TempDir dir;
  ASSERT_TRUE(
      WriteFileAtomic(dir / "profile.json", R"({"defaultAction":"SCMP_ACT_LOG","syscalls":[]})")
          .ok());
  ::runtime::v1::PodSandboxConfig config = WebPod();
  auto* sc = config.mutable_linux()->mutable_security_context();
  PauseSpecOptions options = Options();

  // None asked for: none (containerd's default when nothing is configured).
  EXPECT_FALSE(Build(config, options).json()["linux"].contains("seccomp"));

  sc->mutable_seccomp()->set_profile_type(::runtime::v1::SecurityProfile::Unconfined);
  EXPECT_FALSE(Build(config, options).json()["linux"].contains("seccomp"));

  sc->mutable_seccomp()->set_profile_type(::runtime::v1::SecurityProfile::Localhost);
  sc->mutable_seccomp()->set_localhost_ref(dir / "profile.json");
  EXPECT_EQ(Build(config, options).json()["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_LOG");

  sc->mutable_seccomp()->set_localhost_ref(dir / "missing.json");
  auto missing = BuildPauseSpec(config, PauseImage(), options);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);

  sc->mutable_seccomp()->set_profile_type(::runtime::v1::SecurityProfile::RuntimeDefault);
  auto no_default = BuildPauseSpec(config, PauseImage(), options);
  ASSERT_FALSE(no_default.has_value());
  EXPECT_EQ(no_default.error().code(), Code::kInvalidArgument);  // localhost_ref still set
  sc->mutable_seccomp()->clear_localhost_ref();
  no_default = BuildPauseSpec(config, PauseImage(), options);
  ASSERT_FALSE(no_default.has_value());
  EXPECT_EQ(no_default.error().code(), Code::kFailedPrecondition);
  options.runtime_default_seccomp = SpecJson{{"defaultAction", "SCMP_ACT_ERRNO"}};
  EXPECT_EQ(Build(config, options).json()["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ERRNO");

  // The deprecated path and unset_seccomp_profile.
  sc->clear_seccomp();
  options.unset_seccomp_profile = "runtime/default";
  EXPECT_TRUE(Build(config, options).json()["linux"].contains("seccomp"));
  options.unset_seccomp_profile = "unconfined";
  EXPECT_FALSE(Build(config, options).json()["linux"].contains("seccomp"));
  options.unset_seccomp_profile = "bogus";
  EXPECT_EQ(BuildPauseSpec(config, PauseImage(), options).error().code(), Code::kInvalidArgument);

  // Privileged: no seccomp at all, and (2.x) a read-write /sys.
  options.unset_seccomp_profile = "runtime/default";
  sc->set_privileged(true);
  Spec spec = Build(config, options);
  EXPECT_FALSE(spec.json()["linux"].contains("seccomp"));
  for (const Mount& m : spec.Mounts()) {
    if (m.destination == "/sys") {
      EXPECT_EQ(m.options, (std::vector<std::string>{"nosuid", "noexec", "nodev", "rw"}));
    }
  }
  options.flavor = CriFlavor::kContainerd16;
  for (const Mount& m : Build(config, options).Mounts()) {
    if (m.destination == "/sys") {
      EXPECT_EQ(m.options.back(), "ro");
    }
  }
}

TEST(PauseSpecTest, UserNamespace) {
  ::runtime::v1::PodSandboxConfig config = WebPod();
  auto* userns = config.mutable_linux()
                     ->mutable_security_context()
                     ->mutable_namespace_options()
                     ->mutable_userns_options();
  userns->set_mode(::runtime::v1::POD);
  auto* uid = userns->add_uids();
  uid->set_host_id(100000);
  uid->set_length(65536);
  auto* gid = userns->add_gids();
  gid->set_host_id(200000);
  gid->set_length(65536);
  Spec spec = Build(config, Options());
  const SandboxPaths paths = SandboxPathsFor(kDefaultCriRootDir, kDefaultCriStateDir, kId);
  EXPECT_EQ(spec.Namespaces().back(), (Namespace{"user", paths.pinned_user_namespace}));
  EXPECT_EQ(spec.json()["linux"]["uidMappings"],
            SpecJson::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}}));
  EXPECT_EQ(spec.json()["linux"]["gidMappings"][0]["hostID"], 200000);
  // No ping_group_range inside a pod user namespace.
  EXPECT_EQ(spec.Sysctls().at("net.ipv4.ping_group_range"), "1 1");
  config.mutable_linux()->mutable_sysctls()->clear();
  EXPECT_FALSE(Build(config, Options()).Sysctls().contains("net.ipv4.ping_group_range"));

  // Host network: the user namespace is not pinned, /sys becomes a bind.
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
      ::runtime::v1::NODE);
  spec = Build(config, Options());
  EXPECT_EQ(spec.Namespaces().back(), (Namespace{"user", ""}));
  EXPECT_EQ(spec.Mounts().back(),
            (Mount{"/sys", "bind", "/sys", {"rbind", "rro", "nosuid", "nodev", "noexec"}}));
  const auto destinations = Destinations(spec);
  EXPECT_EQ(std::count(destinations.begin(), destinations.end(), "/sys"), 1);

  // containerd 1.6 knows nothing of user namespaces.
  EXPECT_FALSE(HasNamespace(Build(config, Options(CriFlavor::kContainerd16)), "user"));

  // Bad configurations.
  userns->add_uids()->set_length(1);
  EXPECT_EQ(BuildPauseSpec(config, PauseImage(), Options()).error().code(), Code::kInvalidArgument);
  userns->mutable_uids()->RemoveLast();
  userns->set_mode(::runtime::v1::NODE);
  EXPECT_EQ(BuildPauseSpec(config, PauseImage(), Options()).error().code(), Code::kInvalidArgument);
  userns->clear_uids();
  userns->clear_gids();
  EXPECT_FALSE(HasNamespace(Build(config, Options()), "user"));
  userns->set_mode(::runtime::v1::CONTAINER);
  EXPECT_EQ(BuildPauseSpec(config, PauseImage(), Options()).error().code(), Code::kInvalidArgument);
}

TEST(PauseSpecTest, ParseImageConfig) {
  auto image = ParseImageConfig(
      R"({"architecture":"amd64","config":{"Env":["PATH=/bin"],"Entrypoint":["/pause"],)"
      R"("Cmd":null,"WorkingDir":"/","User":"65535:65535"},"rootfs":{"type":"layers"}})");
  ASSERT_TRUE(image.has_value()) << image.error().ToString();
  EXPECT_EQ(image->env, std::vector<std::string>{"PATH=/bin"});
  EXPECT_EQ(image->entrypoint, std::vector<std::string>{"/pause"});
  EXPECT_TRUE(image->cmd.empty());
  EXPECT_EQ(image->working_dir, "/");
  EXPECT_EQ(image->user, "65535:65535");
  auto bare = ParseImageConfig(R"({"Cmd":["/pause"]})");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->cmd, std::vector<std::string>{"/pause"});
  for (const char* bad : {"", "[]", R"({"config":{"Env":"x"}})", R"({"User":1})"}) {
    auto result = ParseImageConfig(bad);
    ASSERT_FALSE(result.has_value()) << bad;
    EXPECT_EQ(result.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(PauseSpecTest, ResultIsASpecTheShimReads) {
  Spec spec = Build(WebPod(), Options());
  auto reparsed = Spec::Parse(spec.Dump());
  ASSERT_TRUE(reparsed.has_value());
  EXPECT_EQ(reparsed->Annotation(kContainerType), "sandbox");
  EXPECT_EQ(reparsed->Namespaces().size(), 5u);
  EXPECT_EQ(BuildPauseSpec(WebPod(), PauseImage(), PauseSpecOptions{}).error().code(),
            Code::kInvalidArgument);  // no sandbox id
}

}  // namespace
}  // namespace hull::oci
