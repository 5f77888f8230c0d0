// Real mounts, as root, in a private mount namespace of the test process:
// bind ro, overlay (also with options longer than a page), undo on failure,
// targets resolved inside the root, recursive unmount. Skipped otherwise.

#include "shim/mount/mount.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/mountinfo.h"
#include "tests/support/privileged.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

using hull::testing::MountsBelow;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MountTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-mount"};  // root_ lives in it
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (mount(2))";
    // A mount namespace of our own whose mounts propagate nowhere.
    if (::unshare(CLONE_NEWNS) != 0) GTEST_SKIP() << "cannot unshare the mount namespace";
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
    // A tmpfs underneath, so overlay upper/work dirs are on a filesystem
    // overlay accepts whatever /tmp is.
    ASSERT_EQ(::mount("tmpfs", root_.c_str(), "tmpfs", 0, "mode=0755"), 0);
    target_ = root_ / "bundle" / "rootfs";
    fs::create_directories(target_);
  }

  void TearDown() override {
    if (root_.empty()) return;
    EXPECT_TRUE(UnmountAll(root_.string()).ok());
    // The tmpfs on root_ itself, if still there: the directory lives on the
    // host's /tmp and must go with it (it was left behind, empty, before).
    ::umount2(root_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(root_, ec);
    EXPECT_FALSE(fs::exists(root_)) << root_;
  }

  fs::path MakeDir(const std::string& name, const std::string& file = "",
                   const std::string& content = "") {
    fs::path dir = root_ / name;
    fs::create_directories(dir);
    if (!file.empty()) std::ofstream(dir / file) << content;
    return dir;
  }

  fs::path root_;
  fs::path target_;
};

TEST_F(MountTest, BindReadOnly) {
  fs::path src = MakeDir("src", "hello", "world");
  std::vector<Mount> mounts = {{"bind", src.string(), "", {"rbind", "ro"}}};
  Status s = MountAll(mounts, target_.string());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Slurp(target_ / "hello"), "world");
  struct statvfs st;
  ASSERT_EQ(::statvfs(target_.c_str(), &st), 0);
  EXPECT_TRUE(st.f_flag & ST_RDONLY);
  EXPECT_LT(::open((target_ / "new").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644), 0);
  EXPECT_EQ(errno, EROFS);

  ASSERT_TRUE(UnmountAll(target_.string()).ok());
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
  EXPECT_FALSE(fs::exists(target_ / "hello"));
  // Idempotent, also for a path that is gone.
  EXPECT_TRUE(UnmountAll(target_.string()).ok());
  EXPECT_TRUE(UnmountAll((root_ / "missing").string()).ok());
}

TEST_F(MountTest, BindNosuidNodevAppliedByRemount) {
  fs::path src = MakeDir("src2", "f", "x");
  std::vector<Mount> mounts = {{"bind", src.string(), "", {"bind", "nosuid", "nodev", "noexec"}}};
  ASSERT_TRUE(MountAll(mounts, target_.string()).ok());
  struct statvfs st;
  ASSERT_EQ(::statvfs(target_.c_str(), &st), 0);
  EXPECT_TRUE(st.f_flag & ST_NOSUID);
  EXPECT_TRUE(st.f_flag & ST_NODEV);
  EXPECT_TRUE(st.f_flag & ST_NOEXEC);
  EXPECT_FALSE(st.f_flag & ST_RDONLY);
}

TEST_F(MountTest, Overlay) {
  fs::path l1 = MakeDir("l1", "a", "from l1");
  fs::path l2 = MakeDir("l2", "b", "from l2");
  fs::path upper = MakeDir("upper");
  fs::path work = MakeDir("work");
  std::vector<Mount> mounts = {{"overlay",
                                "overlay",
                                "",
                                {"index=off", "lowerdir=" + l2.string() + ":" + l1.string(),
                                 "upperdir=" + upper.string(), "workdir=" + work.string()}}};
  Status s = MountAll(mounts, target_.string());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Slurp(target_ / "a"), "from l1");
  EXPECT_EQ(Slurp(target_ / "b"), "from l2");
  std::ofstream(target_ / "c") << "new";
  EXPECT_EQ(Slurp(upper / "c"), "new");
  ASSERT_TRUE(UnmountAll(target_.string()).ok());
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST_F(MountTest, OverlayOptionsLongerThanAPage) {
  // 40 layers, ~110 bytes each: more than a page as absolute paths, well
  // under one relative to their common parent.
  std::vector<std::string> layers;
  for (int i = 0; i < 40; ++i) {
    std::string name = std::to_string(1000 + i) + std::string(90, 'x');
    layers.push_back(
        MakeDir("snapshots/" + name + "/fs", "f" + std::to_string(i), "layer").string());
  }
  std::string lowerdir = "lowerdir=";
  for (size_t i = 0; i < layers.size(); ++i) lowerdir += (i ? ":" : "") + layers[i];
  ASSERT_GT(lowerdir.size(), static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  fs::path upper = MakeDir("up");
  fs::path work = MakeDir("wk");
  std::vector<Mount> mounts = {
      {"overlay",
       "overlay",
       "",
       {lowerdir, "upperdir=" + upper.string(), "workdir=" + work.string()}}};
  std::string cwd_before = fs::current_path();
  Status s = MountAll(mounts, target_.string());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(fs::current_path(), cwd_before);
  EXPECT_EQ(Slurp(target_ / "f0"), "layer");
  EXPECT_EQ(Slurp(target_ / "f39"), "layer");
}

TEST_F(MountTest, OptionsThatCannotBeShortenedAreInvalid) {
  // Two lowerdirs with nothing in common but "/": no relative form helps.
  std::string lowerdir = "lowerdir=/" + std::string(2100, 'a') + ":/" + std::string(2100, 'b');
  std::vector<Mount> mounts = {{"overlay", "overlay", "", {lowerdir}}};
  Status s = MountAll(mounts, target_.string());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST_F(MountTest, FailureUndoesEverything) {
  fs::path src = MakeDir("src3", "keep", "x");
  fs::create_directories(src / "sub");
  std::vector<Mount> mounts = {
      {"bind", src.string(), "", {"rbind"}},
      {"tmpfs", "tmpfs", "sub", {"size=1m"}},  // on rootfs/sub, inside the bind
      {"bind", (root_ / "no-such-source").string(), "", {"rbind"}},
  };
  Status s = MountAll(mounts, target_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
  EXPECT_FALSE(fs::exists(target_ / "keep"));
}

TEST_F(MountTest, LaterTargetsAreFoundInsideEarlierMounts) {
  fs::path src = MakeDir("src5", "top", "x");
  fs::create_directories(src / "sub");
  std::vector<Mount> mounts = {{"bind", src.string(), "", {"rbind", "ro"}},
                               {"tmpfs", "tmpfs", "sub", {"size=1m", "mode=0700"}}};
  Status s = MountAll(mounts, target_.string());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(MountsBelow(target_.string()),
            (std::vector<std::string>{target_.string(), (target_ / "sub").string()}));
  // The tmpfs is writable although the bind under it is read-only.
  std::ofstream(target_ / "sub" / "f") << "ok";
  EXPECT_EQ(Slurp(target_ / "sub" / "f"), "ok");
  EXPECT_FALSE(fs::exists(src / "sub" / "f"));
  ASSERT_TRUE(UnmountAll(target_.string()).ok());
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST_F(MountTest, TargetsResolveInsideTheRoot) {
  fs::path outside = MakeDir("outside");
  fs::path src = MakeDir("src4");
  fs::create_symlink(outside, src / "escape");  // absolute: means <rootfs>/<outside> inside
  std::vector<Mount> mounts = {{"bind", src.string(), "", {"rbind"}},
                               {"tmpfs", "tmpfs", "escape", {}}};
  Status s = MountAll(mounts, target_.string());
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(MountsBelow(outside.string()).empty());
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST_F(MountTest, EmptyListMountsNothing) {
  ASSERT_TRUE(MountAll({}, target_.string()).ok());
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST_F(MountTest, UnmountAllTakesStackedAndNestedMounts) {
  ASSERT_EQ(::mount("tmpfs", target_.c_str(), "tmpfs", 0, nullptr), 0);
  fs::create_directories(target_ / "a" / "b");
  ASSERT_EQ(::mount("tmpfs", (target_ / "a").c_str(), "tmpfs", 0, nullptr), 0);
  fs::create_directories(target_ / "a" / "b");
  ASSERT_EQ(::mount("tmpfs", (target_ / "a" / "b").c_str(), "tmpfs", 0, nullptr), 0);
  ASSERT_EQ(::mount("tmpfs", target_.c_str(), "tmpfs", 0, nullptr), 0);  // stacked on top
  ASSERT_EQ(MountsBelow(target_.string()).size(), 4u);
  // Keep one busy: a descriptor inside makes plain umount fail with EBUSY.
  int busy = ::open(target_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(busy, 0);
  Status s = UnmountAll(target_.string());
  ::close(busy);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(MountsBelow(target_.string()).empty());
}

TEST(UnmountAllTest, RefusesRoot) {
  EXPECT_EQ(UnmountAll("/").code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace hull::shim
