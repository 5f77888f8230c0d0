// Placing the server: OOM score against a fake /proc, the sched-core prctl.
// (The shim_cgroup move is cgroups::MoveProcess, tested in tests/unit/cgroups.)

#include "shim/cli/placement.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Touch(const fs::path& path, const std::string& content = "") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << content;
}

class PlacementTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-placement"};  // root_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
  }

  fs::path root_;
};

TEST_F(PlacementTest, OomScoreIsParentsPlusOneClamped) {
  struct Case {
    std::string parent;
    std::string want;
  };
  for (const Case& c :
       {Case{"0\n", "1"}, Case{"-999\n", "-998"}, Case{"1000\n", "1000"}, Case{"-1000", "-999"}}) {
    Touch(root_ / "10/oom_score_adj", c.parent);
    Touch(root_ / "20/oom_score_adj", "");
    ASSERT_TRUE(AdjustOomScore(20, 10, root_.string()).ok());
    EXPECT_EQ(Slurp(root_ / "20/oom_score_adj"), c.want) << c.parent;
  }
}

TEST_F(PlacementTest, OomScoreErrors) {
  EXPECT_EQ(AdjustOomScore(20, 10, root_.string()).code(), Code::kNotFound);
  Touch(root_ / "10/oom_score_adj", "zero");
  EXPECT_FALSE(AdjustOomScore(20, 10, root_.string()).ok());
}

TEST(SchedCoreTest, CreateSucceedsOrIsUnsupported) {
  // In a child with its own process group, so the cookie touches nothing else.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::_exit(CreateSchedCoreCookie().ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hull::shim
