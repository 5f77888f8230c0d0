// What a confined server's spawner opens for it (shim/stdio/spawner_files.h):
// file:// logs and output files where logs belong, never a system file, a
// hidden one, a link or a program.
#include "shim/stdio/spawner_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace hull::shim::stdio {
namespace {

namespace fs = std::filesystem;

class SpawnerFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/hull-logfile-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Code Refusal(const std::string& path, bool create = true) {
    Result<UniqueFd> fd = OpenFileForServer(path, create);
    return fd ? Code::kOk : fd.error().code();
  }

  std::string dir_;
};

TEST_F(SpawnerFilesTest, OpensALogWhereLogsBelongAndMakesItsDirectories) {
  Result<UniqueFd> fd = OpenFileForServer(dir_ + "/pods/a/c.log", true);
  ASSERT_TRUE(fd) << fd.error().ToString();
  ASSERT_EQ(::write(fd->get(), "x\n", 2), 2);
  fd = OpenFileForServer(dir_ + "/pods/a/c.log", false);  // appends, exists
  ASSERT_TRUE(fd) << fd.error().ToString();
  ASSERT_EQ(::write(fd->get(), "y\n", 2), 2);
  std::ifstream in(dir_ + "/pods/a/c.log");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "x\ny\n");
  EXPECT_EQ(fs::status(dir_ + "/pods/a/c.log").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

TEST_F(SpawnerFilesTest, RefusesSystemTreesRelativeDotsAndHiddenNames) {
  EXPECT_EQ(Refusal("/etc/hull-test.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal("/usr/lib/hull/x.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal("/proc/sys/kernel/core_pattern", false), Code::kPermissionDenied);
  EXPECT_EQ(Refusal("/root/x.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal("relative.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/../etc/x.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/./x.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/.ssh/authorized_keys"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/"), Code::kPermissionDenied);
  EXPECT_FALSE(fs::exists("/etc/hull-test.log"));
  EXPECT_FALSE(fs::exists(dir_ + "/.ssh"));
}

TEST_F(SpawnerFilesTest, RefusesADirectoryThatLeadsIntoASystemTree) {
  fs::create_directory_symlink("/etc", dir_ + "/etc-link");
  EXPECT_EQ(Refusal(dir_ + "/etc-link/hull-test.log"), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/etc-link/hull-new-dir/x.log"), Code::kPermissionDenied);
  EXPECT_FALSE(fs::exists("/etc/hull-test.log"));
  EXPECT_FALSE(fs::exists("/etc/hull-new-dir"));
}

TEST_F(SpawnerFilesTest, RefusesLinksProgramsAndOtherKindsOfFile) {
  std::ofstream(dir_ + "/target") << "t";
  fs::create_symlink(dir_ + "/target", dir_ + "/symlink.log");
  EXPECT_EQ(Refusal(dir_ + "/symlink.log"), Code::kPermissionDenied);
  fs::create_hard_link(dir_ + "/target", dir_ + "/hardlink.log");
  EXPECT_EQ(Refusal(dir_ + "/hardlink.log"), Code::kPermissionDenied);
  std::ofstream(dir_ + "/program") << "#!/bin/sh\n";
  fs::permissions(dir_ + "/program", fs::perms::owner_all);
  EXPECT_EQ(Refusal(dir_ + "/program"), Code::kPermissionDenied);
  std::ofstream(dir_ + "/setid") << "";
  ASSERT_EQ(::chmod((dir_ + "/setid").c_str(), 02644), 0);
  EXPECT_EQ(Refusal(dir_ + "/setid"), Code::kPermissionDenied);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(Refusal(dir_ + "/fifo", false), Code::kPermissionDenied);
  EXPECT_EQ(Refusal(dir_ + "/missing.log", false), Code::kNotFound);
  std::ifstream in(dir_ + "/target");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "t");
}

TEST_F(SpawnerFilesTest, TheEntryAnswersWithTheDescriptorOrRefuses) {
  SpawnerEntry entry = LogFileSpawnerEntry();
  EXPECT_EQ(entry.name, "log-file");
  ASSERT_TRUE(entry.call);
  std::vector<UniqueFd> fds;
  Result<SpawnerReply> reply = entry.call("c" + dir_ + "/e.log", fds);
  ASSERT_TRUE(reply) << reply.error().ToString();
  ASSERT_EQ(reply->fds.size(), 1u);
  EXPECT_EQ(::write(reply->fds[0].get(), "z", 1), 1);
  EXPECT_EQ(fs::file_size(dir_ + "/e.log"), 1u);
  reply = entry.call("x" + dir_ + "/e.log", fds);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code(), Code::kPermissionDenied);
  reply = entry.call("", fds);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code(), Code::kPermissionDenied);
}

}  // namespace
}  // namespace hull::shim::stdio
