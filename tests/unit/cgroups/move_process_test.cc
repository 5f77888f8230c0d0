// MoveProcess: cgroup.procs written on every hierarchy that has the cgroup,
// against a FakeHost laid out like /sys/fs/cgroup.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

namespace fs = std::filesystem;
using testing::FakeHost;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MoveProcessTest, Unified) {
  FakeHost fake;
  fake.AddUnified();
  fake.Write("system.slice/shims/cgroup.procs", "");
  ASSERT_TRUE(MoveProcess(1234, "/system.slice/shims", fake.roots()).ok());
  EXPECT_EQ(Slurp(fake.cgroupfs() / "system.slice/shims/cgroup.procs"), "1234");
}

TEST(MoveProcessTest, V1EveryHierarchyThatHasThePath) {
  FakeHost fake;
  fake.AddV1("cpu", "cpu");
  fake.AddV1("memory", "memory");
  fake.AddV1("pids", "pids");  // no "shims" here: skipped
  fake.Write("cpu/shims/cgroup.procs", "");
  fake.Write("memory/shims/cgroup.procs", "");
  // Not a cgroup filesystem, though it has the directory.
  fake.AddMountLine("60 22 0:60 / " + (fake.cgroupfs() / "tmp").string() + " rw - tmpfs tmpfs rw");
  fake.Write("tmp/shims/cgroup.procs", "");
  ASSERT_TRUE(MoveProcess(42, "shims", fake.roots()).ok());  // relative: from the root
  EXPECT_EQ(Slurp(fake.cgroupfs() / "cpu/shims/cgroup.procs"), "42");
  EXPECT_EQ(Slurp(fake.cgroupfs() / "memory/shims/cgroup.procs"), "42");
  EXPECT_FALSE(fs::exists(fake.cgroupfs() / "pids/shims"));
  EXPECT_EQ(Slurp(fake.cgroupfs() / "tmp/shims/cgroup.procs"), "");
}

TEST(MoveProcessTest, HybridWritesV1AndTheCgroup2Mount) {
  FakeHost fake;
  fake.AddV1("memory", "memory");
  fake.AddUnified("unified");
  fake.Write("memory/shims/cgroup.procs", "");
  fake.Write("unified/shims/cgroup.procs", "");
  ASSERT_TRUE(MoveProcess(7, "/shims", fake.roots()).ok());
  EXPECT_EQ(Slurp(fake.cgroupfs() / "memory/shims/cgroup.procs"), "7");
  EXPECT_EQ(Slurp(fake.cgroupfs() / "unified/shims/cgroup.procs"), "7");
}

TEST(MoveProcessTest, CgroupMountOutsideCgroupfsIsNotTouched) {
  FakeHost fake;
  fake.AddUnified();
  // Say, the host's hierarchy bind-mounted into a container's rootfs.
  const fs::path elsewhere = fake.roots().proc.parent_path() / "ctr/sys/fs/cgroup";
  fake.AddMountLine("60 22 0:60 / " + elsewhere.string() + " rw - cgroup2 cgroup2 rw");
  FakeHost::WriteAt(elsewhere / "shims/cgroup.procs", "");
  EXPECT_EQ(MoveProcess(42, "/shims", fake.roots()).code(), Code::kNotFound);
  EXPECT_EQ(Slurp(elsewhere / "shims/cgroup.procs"), "");
}

TEST(MoveProcessTest, MissingEverywhereIsNotFound) {
  FakeHost fake;
  fake.AddV1("cpu", "cpu");
  EXPECT_EQ(MoveProcess(42, "/nope", fake.roots()).code(), Code::kNotFound);
}

TEST(MoveProcessTest, DotAndDotDotAreInvalidArgument) {
  FakeHost fake;
  fake.AddUnified();
  fake.Write("etc/cgroup.procs", "");
  EXPECT_EQ(MoveProcess(42, "/../etc", fake.roots()).code(), Code::kInvalidArgument);
  EXPECT_EQ(MoveProcess(42, "/./etc", fake.roots()).code(), Code::kInvalidArgument);
  EXPECT_EQ(MoveProcess(42, "a/../etc", fake.roots()).code(), Code::kInvalidArgument);
  EXPECT_EQ(Slurp(fake.cgroupfs() / "etc/cgroup.procs"), "");
}

TEST(MoveProcessTest, SymlinkInThePathIsNotFollowed) {
  FakeHost fake;
  fake.AddUnified();
  fake.Write("real/cgroup.procs", "");
  fs::create_directory_symlink(fake.cgroupfs() / "real", fake.cgroupfs() / "link");
  EXPECT_FALSE(MoveProcess(42, "/link", fake.roots()).ok());
  EXPECT_EQ(Slurp(fake.cgroupfs() / "real/cgroup.procs"), "");
}

TEST(MoveProcessTest, MalformedMountinfoIsAnError) {
  FakeHost fake;
  fake.AddUnified();
  fake.Write("shims/cgroup.procs", "");
  fake.AddMountLine("short line");
  EXPECT_EQ(MoveProcess(42, "/shims", fake.roots()).code(), Code::kInvalidArgument);
  EXPECT_EQ(Slurp(fake.cgroupfs() / "shims/cgroup.procs"), "");
}

}  // namespace
}  // namespace hull::cgroups
