// VM pods from template clones through CRI (docs/vm.md, "Template
// clones"; the fixture: cri_vm_pod_fixture.h): the first pod of a shape
// builds the template, later ones are clones; a damaged template ends in a
// cold boot that works.
#include "tests/integration/cri_vm_pod_fixture.h"

namespace hull::itest {
namespace {

// Template clones (docs/vm.md): the first pod of a shape builds its
// template and is its first clone, the second is a clone too. Each has its
// own hostname, MAC, IP, boot id, random bytes and a wall clock set from
// the host's; exec, logs, stats, an OOM kill and teardown work; after
// removal only the template cache is left.
TEST_P(CriVmPodTest, TwoPodsOfOneShapeTheSecondAClone) {
  UseTemplates(true);
  fs::remove_all(kTemplateRoot, ec_);
  const json config_a = PodConfig("clone-a");
  const std::string a = RunPod(config_a);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(BootOf(a), "template+clone");
  const json config_b = PodConfig("clone-b");
  const std::string b = RunPod(config_b);
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(BootOf(b), "clone");
  // Both at the pod's size: the template's shape is the pod's exactly. A
  // clone's translation cache is [vm] clone_tcg_tb_size_mib (16), not the
  // template's 32.
  for (const std::string& pod : {a, b}) {
    std::vector<pid_t> qemus = Qemus(pod);
    ASSERT_EQ(qemus.size(), 1u);
    EXPECT_NE(Cmdline(qemus[0]).find("-smp 2,maxcpus=2 -m 376 "), std::string::npos);
    EXPECT_NE(Cmdline(qemus[0]).find(" -accel tcg,thread=multi,tb-size=16 "), std::string::npos)
        << Cmdline(qemus[0]);
  }
  const std::string ca = StartContainer(a, config_a, "one");
  const std::string cb = StartContainer(b, config_b, "one");
  ASSERT_FALSE(ca.empty());
  ASSERT_FALSE(cb.empty());

  struct Guest {
    std::string hostname, boot_id, random, mac, ip;
    long clock = 0;
  };
  auto look = [&](const std::string& container) {
    Guest g;
    struct timeval before, after;
    ::gettimeofday(&before, nullptr);
    CriReply r = Exec(container, {"sh", "-c",
                                  "date +%s; hostname; cat /proc/sys/kernel/random/boot_id; "
                                  "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; echo; "
                                  "cat /sys/class/net/eth0/address; "
                                  "ip -4 -o addr show eth0 | awk '{print $4}'"});
    ::gettimeofday(&after, nullptr);
    EXPECT_TRUE(r.ok) << r.error;
    std::istringstream out(DecodeBase64(r.body.value("stdout", "")));
    out >> g.clock >> g.hostname >> g.boot_id >> g.random >> g.mac >> g.ip;
    // The guest's clock is the host's (to the second `date` shows).
    EXPECT_GE(g.clock, before.tv_sec - 1) << container;
    EXPECT_LE(g.clock, after.tv_sec + 1) << container;
    return g;
  };
  Guest ga = look(ca), gb = look(cb);
  EXPECT_EQ(ga.hostname, "clone-a");
  EXPECT_EQ(gb.hostname, "clone-b");
  EXPECT_EQ(ga.random.size(), 32u);
  for (auto [x, y] : {std::pair{ga.boot_id, gb.boot_id},
                      {ga.random, gb.random},
                      {ga.mac, gb.mac},
                      {ga.ip, gb.ip}}) {
    EXPECT_FALSE(x.empty());
    EXPECT_NE(x, y);
  }
  // The guest's eth0 has the pod's MAC (not the template's).
  EXPECT_NE(ga.mac, "02:68:75:6c:6c:01");
  EXPECT_NE(gb.mac, "02:68:75:6c:6c:01");

  CriReply stats = cri_->Call("ContainerStats", {{"container_id", cb}});
  ASSERT_TRUE(stats.ok) << stats.error;
  EXPECT_GT(U64(stats.body["stats"]["memory"]["working_set_bytes"]["value"]), 0u);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadText(containerd_->dir() + "/pods/clone-b/one.log").find(" stdout F one-out\n") !=
               std::string::npos;
      },
      30s));

  // An OOM kill in the clone reaches CRI. One read(2) fills dd's 64 MiB
  // buffer against the 32 MiB limit, so no user code runs (and refaults
  // busybox's pages) while the guest reclaims: a pipe into tail made the
  // guest's reclaim thrash for over 120 s under TCG in CI before the kill.
  json oom_config = {{"metadata", {{"name", "oom"}}},
                     {"image", {{"image", kBusybox}}},
                     {"command", {"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"}},
                     {"log_path", "oom.log"},
                     {"linux", {{"resources", {{"memory_limit_in_bytes", 32 * 1024 * 1024}}}}}};
  CriReply created = cri_->Call(
      "CreateContainer",
      {{"pod_sandbox_id", b}, {"config", oom_config}, {"sandbox_config", config_b}}, kCriTimeout);
  ASSERT_TRUE(created.ok) << created.error;
  const std::string oom = created.body.value("container_id", "");
  ASSERT_TRUE(cri_->Call("StartContainer", {{"container_id", oom}}, kCriTimeout).ok);
  EXPECT_TRUE(WaitUntil([&] { return ContainerState(oom).first == "CONTAINER_EXITED"; }, 120s));
  CriReply oom_status = cri_->Call("ContainerStatus", {{"container_id", oom}});
  ASSERT_TRUE(oom_status.ok) << oom_status.error;
  EXPECT_EQ(oom_status.body["status"].value("reason", ""), "OOMKilled") << oom_status.body.dump();

  const std::string socket_a = ShimSocket(a), socket_b = ShimSocket(b);
  CriReply stop = cri_->Call("StopPodSandbox", {{"pod_sandbox_id", a}}, kCriTimeout);
  ASSERT_TRUE(stop.ok) << stop.error;
  ASSERT_TRUE(cri_->Call("RemovePodSandbox", {{"pod_sandbox_id", a}}, kCriTimeout).ok);
  EXPECT_TRUE(WaitUntil([&] { return Qemus(a).empty(); }, 60s));
  RemovePodAndCheckNothingLeft(b, socket_b);
  EXPECT_FALSE(fs::exists(socket_a));
  EXPECT_FALSE(fs::exists(Bundle(a)));
  EXPECT_EQ(VmRunDirs(), std::vector<std::string>{});
  // Left: the one template (its RAM, state and record) and its lock.
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(kTemplateRoot, ec_)) {
    left.push_back(entry.path().extension() == ".lock" ? "lock" : "template");
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"lock", "template"}));
  fs::remove_all(kTemplateRoot, ec_);
}

// A template whose files were deleted, then one whose RAM was corrupted:
// the next pod of the shape cold-boots (and rebuilds the template) and
// works.
TEST_P(CriVmPodTest, ADamagedTemplateEndsInAColdBootThatWorks) {
  UseTemplates(true);
  fs::remove_all(kTemplateRoot, ec_);
  auto run_and_check = [&](const std::string& name, const std::string& boot) {
    const json config = PodConfig(name);
    const std::string pod = RunPod(config);
    ASSERT_FALSE(pod.empty());
    EXPECT_EQ(BootOf(pod), boot) << name;
    const std::string c = StartContainer(pod, config, "one");
    ASSERT_FALSE(c.empty());
    CriReply r = Exec(c, {"hostname"});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(DecodeBase64(r.body.value("stdout", "")), name + "\n");
    RemovePodAndCheckNothingLeft(pod, ShimSocket(pod));
  };
  auto template_dir = [&] {
    for (const auto& entry : fs::directory_iterator(kTemplateRoot, ec_)) {
      if (entry.is_directory() && entry.path().extension().empty()) return entry.path().string();
    }
    return std::string();
  };
  run_and_check("tmpl-first", "template+clone");
  std::string dir = template_dir();
  ASSERT_FALSE(dir.empty());
  // Deleted: found missing, built anew.
  fs::remove(dir + "/state");
  run_and_check("tmpl-deleted", "template+clone");
  // Corrupted RAM (the same size, all zeros): the clone fails, the pod
  // cold-boots, the template is gone.
  dir = template_dir();
  ASSERT_FALSE(dir.empty());
  const auto size = fs::file_size(dir + "/ram");
  fs::resize_file(dir + "/ram", 0);
  fs::resize_file(dir + "/ram", size);
  run_and_check("tmpl-corrupted", "cold");
  EXPECT_TRUE(template_dir().empty());
  fs::remove_all(kTemplateRoot, ec_);
}

INSTANTIATE_TEST_SUITE_P(Containerd, CriVmPodTest,
                         ::testing::Values(Containerd{"v1_6", false}, Containerd{"v2", true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hull::itest
