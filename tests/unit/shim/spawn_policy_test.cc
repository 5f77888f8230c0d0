// What a confined server's spawner agrees to start (shim/security/
// spawn_policy.h): the command lines the pod's own backend builds, and the
// logging binaries the configuration lists; nothing else. Argvs are made by
// the same ArgvBuilder the backend uses. No root needed.
#include "shim/security/spawn_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shim/backend/vm/qemu_command.h"
#include "shim/backend/vm/qemu_filter.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/backend/vm/vm_template.h"
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
    policy_.emplace(MakeSpawnPolicy(config, "k8s.io", {bundles_.string()}, "/nonexistent/hull"));
    ASSERT_TRUE(policy_->runtime_error.ok()) << policy_->runtime_error.ToString();
  }

  // The policy of a vm server of pod1 with `options` and `assets`; `pod` and
  // `run` are that pod's paths (with the share helper's descriptors when
  // `assets` name one).
  SpawnPolicy VmPolicy(const VmOptions& options, const vm::GuestAssets& assets) {
    fs::create_directories(bundles_ / "pod1");
    SpawnPolicy policy = *policy_;
    policy.qemu = vm::QemuRule{.assets = assets,
                               .jail = vm::QemuJail(options, {}),
                               .pod = vm::ReadVmPod((bundles_ / "pod1").string())};
    pod = vm::VmPaths{.agent_socket = run + "/agent.sock",
                      .console_log = run + "/vm-console.log",
                      .share_dir = run + "/share"};
    if (!assets.share_helper.empty()) {
      pod.agent_fd = vm::kAgentFd;
      pod.console_fd = vm::kConsoleFd;
      pod.share_fd = vm::kShareFd;
    }
    return policy;
  }
  const std::string run = std::string(vm::kRunRoot) + "/pod1";
  vm::VmPaths pod;

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

// The files a runtime writes or reads for the server: hull's names in one of
// the pod's bundles only (runc writes a pid file as root wherever it is told).
TEST_F(SpawnPolicyTest, PidAndProcessFilesOnlyInThePodsBundles) {
  const ArgvBuilder c1 = Container("c1");
  const std::string bundle = (bundles_ / "c1").string();
  runtime::ExecRequest exec{.id = "c1",
                            .exec_id = "e1",
                            .process_json = bundle + "/e1.process.json",
                            .pid_file = bundle + "/e1.pid"};
  std::ofstream(bundle + "/config.json") << R"({"process":{"args":["sleep"]}})";
  std::ofstream(exec.process_json) << R"({"args":["true"]})";
  EXPECT_TRUE(Check(c1.Exec(exec)).ok()) << Check(c1.Exec(exec)).ToString();
  const std::string link = (bundles_ / "link").string();
  for (auto [process, pid] : {std::pair<std::string, std::string>{exec.process_json, "/etc/passwd"},
                              {exec.process_json, "/etc/x.pid"},
                              {exec.process_json, link + "/e1.pid"},
                              {exec.process_json, bundle + "/config.json"},
                              {exec.process_json, bundle + "/.pid"},
                              {exec.process_json, "e1.pid"},
                              {"/etc/shadow", exec.pid_file},
                              {bundle + "/e1.json", exec.pid_file}}) {
    runtime::ExecRequest bad = exec;
    bad.process_json = process;
    bad.pid_file = pid;
    EXPECT_EQ(Check(c1.Exec(bad)).code(), Code::kPermissionDenied) << process << " " << pid;
  }
  Argv create = c1.Create({.id = "c1", .bundle = bundle, .pid_file = "/etc/passwd"});
  EXPECT_EQ(Check(create).code(), Code::kPermissionDenied);
}

// An exec is bounded by its container's own process (config.json, which is
// containerd's): containerd's copy of it passes; more capabilities, no
// no-new-privileges, another AppArmor profile, or another container's
// bundle do not.
TEST_F(SpawnPolicyTest, AnExecIsBoundedByItsContainersProcess) {
  const ArgvBuilder c1 = Container("c1");
  const std::string bundle = (bundles_ / "c1").string();
  std::ofstream(bundle + "/config.json") << R"({"process":{"args":["sleep"],
      "capabilities":{"bounding":["CAP_CHOWN","CAP_KILL"],"effective":["CAP_CHOWN"]},
      "noNewPrivileges":true,"apparmorProfile":"cri-default"}})";
  runtime::ExecRequest exec{.id = "c1",
                            .exec_id = "e1",
                            .process_json = bundle + "/e1.process.json",
                            .pid_file = bundle + "/e1.pid"};
  auto check = [&](const std::string& process, const std::string& id = "c1") {
    std::ofstream(exec.process_json, std::ios::trunc) << process;
    runtime::ExecRequest req = exec;
    req.id = id;
    return Check(c1.Exec(req));
  };
  const std::string same = R"({"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_KILL"],
      "effective":["CAP_KILL"],"permitted":["CAP_CHOWN"]},"noNewPrivileges":true,
      "apparmorProfile":"cri-default"})";
  EXPECT_TRUE(check(same).ok()) << check(same).ToString();
  for (const std::string& process :
       {std::string(R"({"capabilities":{"effective":["CAP_SYS_ADMIN"]},"noNewPrivileges":true,
               "apparmorProfile":"cri-default"})"),
        std::string(R"({"capabilities":{"ambient":["CAP_SYS_MODULE"]},"noNewPrivileges":true,
               "apparmorProfile":"cri-default"})"),
        std::string(R"({"noNewPrivileges":false,"apparmorProfile":"cri-default"})"),
        std::string(R"({"noNewPrivileges":true})"),
        std::string(R"({"noNewPrivileges":true,"apparmorProfile":"unconfined"})"),
        std::string(R"({"capabilities":{"effective":"CAP_SYS_ADMIN"},"noNewPrivileges":true,
               "apparmorProfile":"cri-default"})"),
        std::string("not json"), std::string("[]")}) {
    Status s = check(process);
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << process << ": " << s.ToString();
  }
  // c1's process file for an exec in another container.
  fs::create_directories(bundles_ / "c2");
  EXPECT_EQ(check(same, "c2").code(), Code::kPermissionDenied);
  // A container whose spec cannot be read.
  fs::remove(bundle + "/config.json");
  EXPECT_EQ(check(same).code(), Code::kPermissionDenied);
}

// criu's image and work paths (as root it dumps there, and restores a
// process from what is there): never in a tree the server writes, nor
// reached through a symlink into one.
TEST_F(SpawnPolicyTest, CheckpointImagesAreNeverWhereTheServerWrites) {
  const fs::path writable = fs::canonical(tmp_.path()) / "hull-run";
  const fs::path outside = fs::canonical(tmp_.path()) / "checkpoints";
  fs::create_directories(writable / "tmp");
  fs::create_directories(outside);
  fs::create_directory_symlink(writable / "tmp", outside / "into");
  SpawnPolicy policy = *policy_;
  policy.server_writable = {writable.string(), "/proc"};
  const ArgvBuilder c1 = Container("c1");
  const std::string bundle = (bundles_ / "c1").string();
  auto checkpoint = [&](const std::string& image, const std::string& work = "",
                        const std::string& parent = "") {
    return CheckSpawn(policy, SpawnOptions{.argv = c1.Checkpoint({.id = "c1",
                                                                  .image_path = image,
                                                                  .work_path = work,
                                                                  .parent_path = parent})});
  };
  EXPECT_TRUE(checkpoint((outside / "cp1").string()).ok())
      << checkpoint((outside / "cp1").string()).ToString();
  EXPECT_TRUE(checkpoint((outside / "cp2").string(), "", "../cp1").ok());
  for (auto [image, work, parent] : {std::tuple<std::string, std::string, std::string>{
                                         (writable / "tmp" / "cp").string(), "", ""},
                                     {(outside / "into" / "cp").string(), "", ""},
                                     {writable.string(), "", ""},
                                     {(outside / "cp").string(), (writable / "work").string(), ""},
                                     {(outside / "cp").string(), "", "../../hull-run/tmp"},
                                     {"/proc", "", ""},
                                     {"relative/cp", "", ""}}) {
    EXPECT_EQ(checkpoint(image, work, parent).code(), Code::kPermissionDenied)
        << image << " " << work << " " << parent;
  }
  runtime::CreateRequest restore{.id = "c1",
                                 .bundle = bundle,
                                 .pid_file = bundle + "/init.pid",
                                 .checkpoint = (writable / "tmp" / "cp").string()};
  EXPECT_EQ(CheckSpawn(policy, SpawnOptions{.argv = c1.Restore(restore)}).code(),
            Code::kPermissionDenied);
  restore.checkpoint = (outside / "cp1").string();
  EXPECT_TRUE(CheckSpawn(policy, SpawnOptions{.argv = c1.Restore(restore)}).ok());
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

// A Sandbox API pod's runsc sandbox is created in the server's own bundle's
// hull-sandbox (runtime/oci_cli/sandbox_bundle.h): that bundle, and its
// log.json, pass; another directory below a bundle does not.
TEST_F(SpawnPolicyTest, TheSandboxApiPodsOwnBundlePasses) {
  const fs::path sandbox = bundles_ / "c1" / "hull-sandbox";
  fs::create_directories(sandbox);
  fs::create_directories(bundles_ / "c1" / "other");
  auto create_in = [&](const fs::path& dir) {
    runtime::oci_cli::RuntimeConfig config = policy_->runtime->config();
    config.log_path = (dir / "log.json").string();
    return ArgvBuilder(policy_->runtime->flavour(), config)
        .Create({.id = "s", .bundle = dir.string(), .pid_file = (dir / "init.pid").string()});
  };
  // The shape SandboxContainerSpec gives it.
  const std::string pause = R"({"process":{"args":["/pause"],"cwd":"/"},
      "root":{"path":"rootfs","readonly":true},
      "mounts":[{"destination":"/proc","type":"proc","source":"proc"}],
      "linux":{"namespaces":[{"type":"pid"}]}})";
  std::ofstream(sandbox / "config.json") << pause;
  EXPECT_EQ(Check(create_in(sandbox)).code(), Code::kPermissionDenied);  // not named yet
  policy_->sandbox_bundle = sandbox.string();
  EXPECT_TRUE(Check(create_in(sandbox)).ok()) << Check(create_in(sandbox)).ToString();
  EXPECT_EQ(Check(create_in(bundles_ / "c1" / "other")).code(), Code::kPermissionDenied);
  // The server writes that spec: anything but the pause's shape is refused.
  for (const std::string& spec :
       {std::string(R"({"process":{"args":["/bin/sh"]},"root":{"path":"rootfs"}})"),
        std::string(R"({"process":{"args":["/pause"]},"root":{"path":"/"}})"),
        std::string(R"({"process":{"args":["/pause"]},"root":{"path":"rootfs"},
               "mounts":[{"destination":"/host","type":"bind","source":"/"}]})"),
        std::string(R"({"process":{"args":["/pause"]},"root":{"path":"rootfs"},
               "mounts":[{"destination":"/host","type":"none","source":"/","options":["rbind"]}]})"),
        std::string(R"({"process":{"args":["/pause"]},"root":{"path":"rootfs"},
               "hooks":{"createRuntime":[{"path":"/bin/sh"}]}})"),
        std::string(R"({"process":{"args":["/pause"]},"root":{"path":"rootfs"},
               "linux":{"devices":[{"path":"/dev/sda","type":"b","major":8,"minor":0}]}})"),
        std::string("[]")}) {
    std::ofstream(sandbox / "config.json", std::ios::trunc) << spec;
    EXPECT_EQ(Check(create_in(sandbox)).code(), Code::kPermissionDenied) << spec;
  }
}

TEST_F(SpawnPolicyTest, AVmPodStartsNoOciRuntime) {
  ShimConfig config;
  config.runtime.binary_name = "vm";
  SpawnPolicy vm = MakeSpawnPolicy(config, "k8s.io", {bundles_.string()}, "/nonexistent/hull");
  EXPECT_FALSE(vm.runtime.has_value());
  EXPECT_EQ(CheckSpawn(vm, SpawnOptions{.argv = {"/bin/true", "--version"}}).code(),
            Code::kPermissionDenied);
}

// A vm pod's QEMU (vm_spawner.h): the command lines QemuArgv makes for a
// pod of the policy's bundles (a cold boot, a template VM, a clone), with
// the configured assets and jail, pass; anything that would give QEMU
// another file, device, helper or less of a jail is refused.
TEST_F(SpawnPolicyTest, QemuStartsOnlyAsTheVmBackendMakesIt) {
  VmOptions options{.share_helper = ""};  // [vm] jail = true, QEMU serves the share
  const vm::GuestAssets assets{
      .qemu = "/usr/bin/qemu-system-x86_64", .kernel = "/g/vmlinuz", .initramfs = "/g/initrd"};
  SpawnPolicy policy = VmPolicy(options, assets);
  const std::string tmpl = std::string(vm::kTemplateRoot) + "/abc.build";
  const vm::VmPaths template_vm{.agent_socket = tmpl + "/agent.sock",
                                .console_log = tmpl + "/console.log",
                                .share_dir = tmpl + "/share"};
  const vm::GuestNic nic{.fd = 3, .mac = "02:00:00:00:00:01"};
  auto spawn = [&](Argv argv) {
    return SpawnOptions{.argv = std::move(argv),
                        .fds = {{1, 1}, {2, 2}},
                        .parent_death_signal = 9,
                        .jail = vm::QemuJail(options, {assets.qemu, run})};
  };
  const Argv cold = vm::QemuArgv(assets, options, 2, 376, pod, "2000000", nic, {});
  const Argv template_argv = vm::QemuArgv(
      assets, options, 2, 376, template_vm, "2000000", vm::GuestNic{.fd = -1, .mac = nic.mac},
      vm::GuestRam{.file = tmpl + "/ram", .share = true, .qmp_socket = tmpl + "/qmp.sock"});
  const Argv clone = vm::QemuArgv(assets, options, 2, 376, pod, "2000000", nic,
                                  vm::GuestRam{.file = std::string(vm::kTemplateRoot) + "/abc/ram",
                                               .incoming = true,
                                               .qmp_socket = run + "/qmp.sock"});
  for (const Argv& argv : {cold, template_argv, clone}) {
    Status allowed = CheckSpawn(policy, spawn(argv));
    EXPECT_TRUE(allowed.ok()) << allowed.ToString();
  }

  auto refused = [&](SpawnOptions options, std::string_view why) {
    Status s = CheckSpawn(policy, options);
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << why << ": " << s.ToString();
  };
  auto with = [&](std::string_view option, std::string value) {
    Argv argv = cold;
    argv.insert(argv.end(), {std::string(option), std::move(value)});
    return spawn(argv);
  };
  auto replaced = [&](std::string_view from, std::string_view to) {
    Argv argv = cold;
    for (std::string& arg : argv) {
      if (size_t at = arg.find(from); at != std::string::npos) arg.replace(at, from.size(), to);
    }
    return spawn(argv);
  };
  refused(with("-drive", "file=/etc/shadow,format=raw"), "a host file as a disk");
  refused(with("-virtfs", "local,path=/,mount_tag=root,security_model=none"), "the host's root");
  refused(with("-netdev", "tap,id=n1,script=/tmp/x.sh"), "a script QEMU would run");
  refused(with("-device", "vfio-pci,host=00:02.0"), "a host device");
  refused(with("-chardev", "file,id=c2,path=/etc/cron.d/x"), "a host file to write");
  refused(with("-chardev", "file,id=c2,path=" + (bundles_ / "pod1" / "vm-console.log").string()),
          "a console log in the pod's bundle (the spawner's to write, never QEMU's)");
  refused(with("-object", "memory-backend-file,id=r2,size=1M,mem-path=/etc/passwd"),
          "host RAM file");
  refused(with("-machine", "memory-backend=ram0,dump-guest-core=on"), "a machine property");
  refused(replaced("/g/vmlinuz", "/tmp/other-kernel"), "another kernel");
  refused(replaced(run + "/share", "/"), "the host's root as the share");
  refused(replaced("pod1", "c1"), "another pod's run directory and console");
  refused(replaced("pod1/share", "pod1/share/../../.."), "a share that climbs out");
  SpawnOptions unjailed = spawn(cold);
  unjailed.jail.reset();
  refused(unjailed, "no jail while [vm] jail is on");
  SpawnOptions more_caps = spawn(cold);
  more_caps.jail->capabilities |= uint64_t{1} << 21;  // CAP_SYS_ADMIN
  refused(more_caps, "a capability the jail never keeps");
  Argv no_sandbox = cold;
  no_sandbox.erase(std::find(no_sandbox.begin(), no_sandbox.end(), "-sandbox"), no_sandbox.end());
  refused(spawn(no_sandbox), "without QEMU's own seccomp sandbox");
  SpawnOptions env = spawn(cold);
  env.env = std::vector<std::string>{"LD_PRELOAD=/tmp/x.so"};
  refused(env, "an environment of the server's");
  SpawnOptions as_user = spawn(cold);
  as_user.jail->uid = 1000;
  refused(as_user, "a user while QEMU serves its share as root");
}

// With the share helper (the default), QEMU is a user of its own made from
// the spawner's pid, with no capability, and is handed descriptors; the
// helper starts only on a share of the pod or of a template.
TEST_F(SpawnPolicyTest, QemuWithAUserOfItsOwnGetsDescriptorsAndItsHelper) {
  VmOptions options;
  const vm::GuestAssets assets{.qemu = "/usr/bin/qemu-system-x86_64",
                               .kernel = "/g/vmlinuz",
                               .initramfs = "/g/initrd",
                               .share_helper = "/usr/lib/qemu/virtfs-proxy-helper"};
  SpawnPolicy policy = VmPolicy(options, assets);
  // The check runs in the spawner: its own pid makes the uid.
  const std::string ram = std::string(vm::kTemplateRoot) + "/abc/ram";
  auto spawn = [&](Argv argv) {
    SpawnOptions spawn{.argv = std::move(argv),
                       .fds = {{1, 1}, {2, 2}},
                       .parent_death_signal = 9,
                       .jail = vm::QemuJail(options, {assets.qemu, run}, ::getpid())};
    vm::RootQemuJail(*spawn.jail, run + "/jail", assets, options, ram);
    return spawn;
  };
  const Argv clone = vm::QemuArgv(assets, options, 2, 376, pod, "2000000", std::nullopt,
                                  vm::GuestRam{.file = std::string(vm::kTemplateRoot) + "/abc/ram",
                                               .incoming = true,
                                               .qmp_socket = run + "/qmp.sock",
                                               .qmp_fd = vm::kQmpFd});
  Status allowed = CheckSpawn(policy, spawn(clone));
  EXPECT_TRUE(allowed.ok()) << allowed.ToString();
  auto refused = [&](SpawnOptions options, std::string_view why) {
    Status s = CheckSpawn(policy, options);
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << why << ": " << s.ToString();
  };
  SpawnOptions other_uid = spawn(clone);
  other_uid.jail->uid += 1;
  refused(other_uid, "another pod's uid");
  SpawnOptions root = spawn(clone);
  root.jail->uid = 0;
  refused(root, "root");
  SpawnOptions group = spawn(clone);
  group.jail->groups = {0};
  refused(group, "root's group");
  // Its root: its run directory's jail, holding only its own files.
  SpawnOptions host_root = spawn(clone);
  host_root.jail->root.clear();
  refused(host_root, "the host's root");
  SpawnOptions other_root = spawn(clone);
  other_root.jail->root = std::string(vm::kRunRoot) + "/c1/jail";
  refused(other_root, "another pod's jail directory");
  SpawnOptions more = spawn(clone);
  more.jail->binds.push_back({.path = "/etc"});
  refused(more, "the host's /etc in its root");
  SpawnOptions writable = spawn(clone);
  writable.jail->binds.front().writable = true;
  refused(writable, "/usr writable");
  SpawnOptions link = spawn(clone);
  link.jail->links.emplace_back("/etc", "/run");
  refused(link, "a link of the server's choosing");
  SpawnOptions no_filter = spawn(clone);
  no_filter.jail->seccomp.clear();
  refused(no_filter, "without hull's seccomp filter");
  SpawnOptions other_filter = spawn(clone);
  other_filter.jail->seccomp.pop_back();
  refused(other_filter, "another filter");
  // Paths QEMU would open itself: its user could not, and must not be asked.
  const vm::VmPaths with_paths{
      .agent_socket = pod.agent_socket, .console_log = pod.console_log, .share_dir = pod.share_dir};
  refused(spawn(vm::QemuArgv(assets, options, 2, 376, with_paths, "2000000")),
          "a share QEMU would serve itself");
  Argv qmp_path = clone;
  qmp_path.insert(qmp_path.end(), {"-qmp", "unix:" + run + "/qmp.sock,server=on,wait=off"});
  refused(spawn(qmp_path), "a QMP socket by path");
  Argv other_fd = clone;
  for (std::string& arg : other_fd) {
    if (arg == "proxy,id=pod,sock_fd=5") arg = "proxy,id=pod,socket=/run/x.sock";
  }
  refused(spawn(other_fd), "a helper socket by path");

  // The helper: on the pod's share (or a template's), nothing else, in its
  // own jail.
  auto helper = [&](const std::string& share) {
    return SpawnOptions{.argv = vm::ShareHelperArgv(assets, share),
                        .fds = {{vm::kShareHelperFd, 1}, {1, 1}, {2, 2}},
                        .parent_death_signal = 9,
                        .jail = vm::ShareHelperJail(options)};
  };
  ASSERT_TRUE(helper(run + "/share").jail.has_value());
  SpawnOptions unjailed = helper(run + "/share");
  unjailed.jail.reset();
  refused(unjailed, "a helper without its jail");
  SpawnOptions all_caps = helper(run + "/share");
  all_caps.jail->capabilities = ~uint64_t{0};
  refused(all_caps, "a helper with every capability");
  SpawnOptions helper_filter = helper(run + "/share");
  helper_filter.jail->seccomp = *vm::QemuJailFilter();
  refused(helper_filter, "QEMU's filter, which refuses the helper's chroot");
  SpawnOptions helper_user = helper(run + "/share");
  helper_user.jail->uid = 1000;
  refused(helper_user, "a helper as another user");
  for (const std::string& share :
       {run + "/share", std::string(vm::kTemplateRoot) + "/abc.build/share"}) {
    allowed = CheckSpawn(policy, helper(share));
    EXPECT_TRUE(allowed.ok()) << share << ": " << allowed.ToString();
  }
  refused(helper("/"), "the host's root");
  refused(helper(std::string(vm::kRunRoot) + "/c1/share"), "another pod's share");
  refused(helper(run + "/share/../../.."), "a share that climbs out");
  SpawnOptions extra = helper(run + "/share");
  extra.argv.insert(extra.argv.end(), {"-u", "0"});
  refused(extra, "other options");
  SpawnOptions fds = helper(run + "/share");
  fds.fds.push_back({9, 1});
  refused(fds, "another descriptor");
}

}  // namespace
}  // namespace hull::shim
