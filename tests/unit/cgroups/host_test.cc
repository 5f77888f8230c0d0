// Host layout detection, /proc/<pid>/cgroup parsing and path resolution.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using testing::FakeHost;

TEST(DetectHostTest, Hybrid) {
  FakeHost fake;
  fake.AddHybridLayout();
  auto host = DetectHost(fake.roots());
  ASSERT_TRUE(host.has_value()) << host.error().ToString();
  EXPECT_EQ(host->mode, Mode::kHybrid);
  EXPECT_EQ(ModeName(host->mode), "hybrid");
  ASSERT_TRUE(host->unified.has_value());
  EXPECT_EQ(host->unified->mount_point, fake.cgroupfs() / "unified");
  const Hierarchy* memory = host->FindV1("memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->mount_point, fake.cgroupfs() / "memory");
  EXPECT_EQ(memory->controllers, std::vector<std::string>{"memory"});
  const Hierarchy* systemd = host->FindV1("name=systemd");
  ASSERT_NE(systemd, nullptr);
  EXPECT_EQ(systemd->controllers, std::vector<std::string>{"name=systemd"});  // "xattr" dropped
  EXPECT_EQ(host->FindV1("net_cls"), nullptr);
}

TEST(DetectHostTest, Legacy) {
  FakeHost fake;
  fake.AddV1("cpu,cpuacct", "cpu,cpuacct,release_agent=/bin/true");
  fake.AddV1("memory", "memory");
  auto host = DetectHost(fake.roots());
  ASSERT_TRUE(host.has_value()) << host.error().ToString();
  EXPECT_EQ(host->mode, Mode::kLegacy);
  EXPECT_FALSE(host->unified.has_value());
  const Hierarchy* cpu = host->FindV1("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu, host->FindV1("cpuacct"));
  EXPECT_EQ(cpu->controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
}

TEST(DetectHostTest, Unified) {
  FakeHost fake;
  fake.AddUnified();
  auto host = DetectHost(fake.roots());
  ASSERT_TRUE(host.has_value()) << host.error().ToString();
  EXPECT_EQ(host->mode, Mode::kUnified);
  EXPECT_TRUE(host->v1.empty());
  EXPECT_EQ(host->unified->mount_point, fake.cgroupfs());
}

TEST(DetectHostTest, NoCgroupMountIsFailedPrecondition) {
  FakeHost fake;
  // A cgroup mount elsewhere (say, inside a container's rootfs) is not ours.
  fake.AddMountLine("40 22 0:40 / /run/ctr/rootfs/sys/fs/cgroup rw - cgroup2 cgroup2 rw");
  auto host = DetectHost(fake.roots());
  ASSERT_FALSE(host.has_value());
  EXPECT_EQ(host.error().code(), Code::kFailedPrecondition);
}

TEST(DetectHostTest, MissingMountinfoIsNotFound) {
  FakeHost fake;
  Roots roots = fake.roots();
  roots.proc /= "nonexistent";
  auto host = DetectHost(roots);
  ASSERT_FALSE(host.has_value());
  EXPECT_EQ(host.error().code(), Code::kNotFound);
}

TEST(DetectHostTest, MalformedMountinfoIsInvalidArgument) {
  // The parser is strict: a table read wrong is not used in part.
  FakeHost fake;
  fake.AddUnified();
  fake.AddMountLine("40 22 0:40 / /somewhere rw - cgroup2 cgroup2");
  auto host = DetectHost(fake.roots());
  ASSERT_FALSE(host.has_value());
  EXPECT_EQ(host.error().code(), Code::kInvalidArgument);
}

TEST(DetectHostTest, DecodesEscapedMountPoints) {
  FakeHost fake;
  fake.AddV1("my memory", "memory");  // mountinfo writes the space as \040
  auto host = DetectHost(fake.roots());
  ASSERT_TRUE(host.has_value()) << host.error().ToString();
  ASSERT_NE(host->FindV1("memory"), nullptr);
  EXPECT_EQ(host->FindV1("memory")->mount_point, fake.cgroupfs() / "my memory");
}

TEST(DetectHostTest, LaterMountOnSamePointWins) {
  FakeHost fake;
  fake.AddV1("memory", "memory");
  fake.AddV1("memory", "pids");  // mounted over it
  auto host = DetectHost(fake.roots());
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(host->FindV1("memory"), nullptr);
  EXPECT_NE(host->FindV1("pids"), nullptr);
}

TEST(ParseProcCgroupTest, HybridHost) {
  auto parsed = ParseProcCgroup(
      "12:pids:/kubepods/pod1/ctr\n"
      "4:cpu,cpuacct:/kubepods/pod1/ctr\n"
      "3:memory:/kubepods/pod1/ctr\n"
      "1:name=systemd:/system.slice/containerd.service\n"
      "0::/system.slice/containerd.service\n");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(parsed->v1.at("pids"), "/kubepods/pod1/ctr");
  EXPECT_EQ(parsed->v1.at("cpu"), "/kubepods/pod1/ctr");
  EXPECT_EQ(parsed->v1.at("cpuacct"), "/kubepods/pod1/ctr");
  EXPECT_EQ(parsed->v1.at("memory"), "/kubepods/pod1/ctr");
  EXPECT_EQ(parsed->v1.at("name=systemd"), "/system.slice/containerd.service");
  EXPECT_EQ(parsed->unified, "/system.slice/containerd.service");
}

TEST(ParseProcCgroupTest, UnifiedHost) {
  auto parsed = ParseProcCgroup("0::/\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_TRUE(parsed->v1.empty());
  EXPECT_EQ(parsed->unified, "/");
}

TEST(ParseProcCgroupTest, PathMayContainColons) {
  auto parsed = ParseProcCgroup("0::/system.slice/cri-containerd:abc.scope\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->unified, "/system.slice/cri-containerd:abc.scope");
}

TEST(ParseProcCgroupTest, RejectsDotDot) {
  for (const char* content : {"3:memory:/kubepods/../../etc\n", "0::/..\n", "3:memory:/a/./b\n",
                              "0::relative/path\n", "garbage\n", "3:memory\n"}) {
    auto parsed = ParseProcCgroup(content);
    ASSERT_FALSE(parsed.has_value()) << content;
    EXPECT_EQ(parsed.error().code(), Code::kInvalidArgument) << content;
  }
}

TEST(ReadProcessCgroupsTest, MissingPidIsNotFound) {
  FakeHost fake;
  auto parsed = ReadProcessCgroups(424242, fake.roots());
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code(), Code::kNotFound);
}

TEST(ManagerTest, ForPidResolvesEachHierarchy) {
  FakeHost fake;
  fake.AddHybridLayout();
  fake.SetProcCgroup(100,
                     "10:memory:/pod/ctr\n2:cpuacct:/pod/ctr\n1:cpu:/other\n0::/unified/path\n");
  auto m = Manager::ForPid(100, fake.roots());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->mode(), Mode::kHybrid);
  EXPECT_EQ(*m->Dir("memory"), fake.cgroupfs() / "memory/pod/ctr");
  EXPECT_EQ(*m->Dir("cpuacct"), fake.cgroupfs() / "cpuacct/pod/ctr");
  EXPECT_EQ(*m->Dir("cpu"), fake.cgroupfs() / "cpu/other");
  auto blkio = m->Dir("blkio");
  ASSERT_FALSE(blkio.has_value());
  EXPECT_EQ(blkio.error().code(), Code::kNotFound);
}

TEST(ManagerTest, ForPidStripsTheMountRoot) {
  FakeHost fake;
  // As inside a cgroup namespace-less container that bind-mounts its own
  // subtree: the mount shows /kubepods at its mount point.
  fake.AddV1("memory", "memory", "/kubepods");
  fake.AddV1("pids", "pids", "/kubepods");
  fake.SetProcCgroup(7, "5:memory:/kubepods/pod1\n4:pids:/system.slice\n0::/\n");
  auto m = Manager::ForPid(7, fake.roots());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(*m->Dir("memory"), fake.cgroupfs() / "memory/pod1");
  EXPECT_FALSE(m->Dir("pids").has_value());  // not visible through that mount
}

TEST(ManagerTest, ForPidRejectsDotDotFromProc) {
  FakeHost fake;
  fake.AddHybridLayout();
  fake.SetProcCgroup(100, "10:memory:/pod/../../../etc\n0::/\n");
  auto m = Manager::ForPid(100, fake.roots());
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), Code::kInvalidArgument);
}

TEST(ManagerTest, ForPathRejectsDotDot) {
  FakeHost fake;
  fake.AddHybridLayout();
  for (const char* path : {"/a/../b", "..", "/..", "relative"}) {
    auto m = Manager::ForPath(path, fake.roots());
    ASSERT_FALSE(m.has_value()) << path;
    EXPECT_EQ(m.error().code(), Code::kInvalidArgument) << path;
  }
}

TEST(ManagerTest, ForPathCoversEveryHierarchy) {
  FakeHost fake;
  fake.AddHybridLayout();
  auto m = Manager::ForPath("/hull/pod", fake.roots());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  for (const char* c : {"cpu", "cpuacct", "memory", "pids", "blkio", "hugetlb", "name=systemd"}) {
    auto dir = m->Dir(c);
    ASSERT_TRUE(dir.has_value()) << c;
  }
  EXPECT_EQ(*m->Dir("memory"), fake.cgroupfs() / "memory/hull/pod");
}

TEST(ManagerTest, UnifiedHostUsesTheUnifiedLine) {
  FakeHost fake;
  fake.AddUnified();
  fake.SetProcCgroup(9, "0::/kubepods/pod1/ctr\n");
  auto m = Manager::ForPid(9, fake.roots());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->mode(), Mode::kUnified);
  EXPECT_EQ(*m->Dir("memory"), fake.cgroupfs() / "kubepods/pod1/ctr");
}

TEST(ManagerTest, ProcessInNoMountedHierarchyIsNotFound) {
  FakeHost fake;
  fake.AddV1("memory", "memory");
  fake.SetProcCgroup(9, "3:pids:/a\n0::/\n");
  auto m = Manager::ForPid(9, fake.roots());
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), Code::kNotFound);
}

TEST(ManagerTest, SymlinkInsideTheTreeIsNotFollowed) {
  FakeHost fake;
  fake.AddV1("memory", "memory");
  fake.Write("memory/real/memory.usage_in_bytes", "4096\n");
  std::filesystem::create_directory_symlink(fake.cgroupfs() / "memory/real",
                                            fake.cgroupfs() / "memory/link");
  fake.SetProcCgroup(9, "3:memory:/link\n0::/\n");
  auto m = Manager::ForPid(9, fake.roots());
  ASSERT_TRUE(m.has_value());
  auto metrics = m->MetricsV1();
  ASSERT_FALSE(metrics.has_value());
  EXPECT_NE(metrics.error().code(), Code::kOk);
}

TEST(ValidateCgroupPathTest, Cases) {
  EXPECT_TRUE(internal::ValidateCgroupPath("/").ok());
  EXPECT_TRUE(internal::ValidateCgroupPath("/a/b..c/.d").ok());
  EXPECT_TRUE(internal::ValidateCgroupPath("//a//b/").ok());
  EXPECT_FALSE(internal::ValidateCgroupPath("").ok());
  EXPECT_FALSE(internal::ValidateCgroupPath("/a/..").ok());
  EXPECT_FALSE(internal::ValidateCgroupPath("/./a").ok());
}

}  // namespace
}  // namespace hull::cgroups
