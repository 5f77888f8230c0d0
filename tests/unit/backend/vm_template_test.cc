// The vm backend's template cache (shim/backend/vm/vm_template.h): the
// shape key, finding a template and refusing a damaged one, the build lock,
// eviction past the bound. On a directory in /dev/shm (tmpfs, as the cache
// must be). The clones themselves are tested against QEMU in
// tests/integration/cri_vm_pod_test.cc.
#include "shim/backend/vm/vm_template.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;

class TemplateCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/dev/shm/hull-template-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = std::string(tmpl) + "/cache";
  }
  void TearDown() override { fs::remove_all(fs::path(root_).parent_path()); }

  // Builds `key`'s template with `ram_bytes` of RAM written.
  Template Build(TemplateCache& cache, const std::string& key, size_t ram_bytes) {
    auto build = cache.Begin(key);
    EXPECT_TRUE(build && *build) << (build ? "locked" : build.error().ToString());
    std::ofstream((*build)->ram()) << std::string(ram_bytes, 'r');
    std::ofstream((*build)->state()) << "device state";
    auto t = cache.Commit(std::move(**build), "2400000", "02:68:75:6c:6c:01");
    EXPECT_TRUE(t) << t.error().ToString();
    return *t;
  }

  std::string root_;
};

TEST(TemplateKeyTest, EveryPartOfTheShapeCounts) {
  GuestAssets assets{.qemu = "/bin/true", .kernel = "/bin/sh", .initramfs = "/bin/ls"};
  std::string key = TemplateKey(assets, VmOptions{}, 1, 376, true);
  EXPECT_EQ(key, TemplateKey(assets, VmOptions{}, 1, 376, true));
  EXPECT_NE(key, TemplateKey(assets, VmOptions{}, 2, 376, true));
  EXPECT_NE(key, TemplateKey(assets, VmOptions{}, 1, 378, true));
  EXPECT_NE(key, TemplateKey(assets, VmOptions{}, 1, 376, false));
  EXPECT_NE(key, TemplateKey(assets, VmOptions{.kernel_args = "x"}, 1, 376, true));
  EXPECT_NE(key, TemplateKey(assets, VmOptions{.tcg_tb_size_mib = 64}, 1, 376, true));
  GuestAssets other = assets;
  other.kernel = "/bin/cat";
  EXPECT_NE(key, TemplateKey(other, VmOptions{}, 1, 376, true));
}

TEST_F(TemplateCacheTest, BuildThenFind) {
  TemplateCache cache(root_, 64);
  auto none = cache.Find("shape");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  Template built = Build(cache, "shape", 4096);
  auto found = cache.Find("shape");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->ram, built.ram);
  EXPECT_EQ((*found)->tsc_khz, "2400000");
  EXPECT_EQ((*found)->mac, "02:68:75:6c:6c:01");
  EXPECT_FALSE(fs::exists(built.dir + "/qmp.sock"));
  EXPECT_FALSE(*cache.Find("another shape"));
}

TEST_F(TemplateCacheTest, ADamagedTemplateIsRemoved) {
  TemplateCache cache(root_, 64);
  Template t = Build(cache, "shape", 4096);
  std::ofstream(t.state) << "corrupted";
  auto found = cache.Find("shape");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(t.dir));
  EXPECT_FALSE(*cache.Find("shape"));  // a miss now: built anew

  t = Build(cache, "shape", 4096);
  fs::remove(t.ram);
  EXPECT_FALSE(cache.Find("shape"));
  EXPECT_FALSE(fs::exists(t.dir));
}

TEST_F(TemplateCacheTest, OneBuilderAShape) {
  TemplateCache cache(root_, 64);
  auto first = cache.Begin("shape");
  ASSERT_TRUE(first && *first);
  auto second = cache.Begin("shape");
  ASSERT_TRUE(second);
  EXPECT_FALSE(*second);  // another builds it: the caller cold-boots
  auto other = cache.Begin("another shape");
  ASSERT_TRUE(other && *other);
  first->reset();  // the builder died: its lock went with it
  auto again = cache.Begin("shape");
  ASSERT_TRUE(again && *again);
}

TEST_F(TemplateCacheTest, TheOldestGoPastTheBound) {
  TemplateCache cache(root_, 1);  // 1 MiB
  Template a = Build(cache, "a", 400 * 1024);
  Template b = Build(cache, "b", 400 * 1024);
  ASSERT_TRUE(fs::exists(a.dir));
  ASSERT_TRUE(fs::exists(b.dir));
  // a used last: b is the oldest when c comes.
  fs::last_write_time(b.dir + "/template.json",
                      fs::last_write_time(b.dir + "/template.json") - std::chrono::seconds(10));
  ASSERT_TRUE(*cache.Find("a"));
  Template c = Build(cache, "c", 400 * 1024);
  EXPECT_TRUE(fs::exists(a.dir));
  EXPECT_FALSE(fs::exists(b.dir));
  EXPECT_TRUE(fs::exists(c.dir));
}

TEST_F(TemplateCacheTest, RefusesARootNotOnTmpfs) {
  char tmpl[] = "/var/tmp/hull-template-test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  struct statfs sfs;
  ASSERT_EQ(::statfs(tmpl, &sfs), 0);
  if (sfs.f_type == TMPFS_MAGIC) {
    fs::remove_all(tmpl);
    GTEST_SKIP() << "/var/tmp is tmpfs here";
  }
  TemplateCache cache(tmpl, 64);
  auto build = cache.Begin("shape");
  fs::remove_all(tmpl);
  ASSERT_FALSE(build);
  EXPECT_EQ(build.error().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace hull::shim::vm
