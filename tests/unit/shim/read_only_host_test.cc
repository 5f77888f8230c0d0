// The confined server's read-only view of the host (shim/security/
// read_only_host.h), entered by a forked child of the test: the trees it
// names stay writable, everything else is read-only to it, and the test's
// own view is untouched. Root (a mount namespace needs CAP_SYS_ADMIN).
#include "shim/security/read_only_host.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace hull::shim {
namespace {

TEST(MountPointsTest, ReadsTheFifthFieldAndUnescapesIt) {
  const std::string mountinfo =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "23 22 0:5 / /proc rw,nosuid - proc proc rw\n"
      "24 22 0:40 /x /tmp/a\\040b\\134c rw - tmpfs tmpfs rw\n"
      "broken\n";
  EXPECT_EQ(MountPoints(mountinfo), (std::vector<std::string>{"/", "/proc", "/tmp/a b\\c"}));
}

// 0 when `path` can be opened for writing, else the errno.
int WriteErrno(const std::string& path, int flags = 0) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

TEST(ReadOnlyHostTest, OnlyTheNamedTreesStayWritable) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace)";
  char templ[] = "/tmp/hull-rohost-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::filesystem::create_directories(dir + "/w/sub");
  std::filesystem::create_directories(dir + "/r");
  std::ofstream(dir + "/r/f") << "x";
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir((dir + "/w").c_str()) != 0) _exit(90);
    Status s = SeeHostReadOnly(
        HostView{.writable = {dir + "/w", "/proc"}, .read_only = {"/proc/sys", "/nonexistent"}});
    if (!s.ok()) _exit(91);
    if (WriteErrno(dir + "/r/f") != EROFS) _exit(1);
    if (WriteErrno(dir + "/r/new", O_CREAT) != EROFS) _exit(2);
    if (WriteErrno("/etc/hostname") != EROFS) _exit(3);
    if (WriteErrno(dir + "/w/sub/new", O_CREAT) != 0) _exit(4);
    // The working directory is entered again through the writable bind.
    if (WriteErrno("relative", O_CREAT) != 0) _exit(5);
    if (WriteErrno("/proc/self/oom_score_adj") != 0) _exit(6);
    if (WriteErrno("/proc/sys/kernel/domainname") != EROFS) _exit(7);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The test's own view did not change.
  EXPECT_EQ(WriteErrno(dir + "/r/f"), 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/w/sub/new"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/w/relative"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/r/new"));
  std::filesystem::remove_all(dir);
}

TEST(ReadOnlyHostTest, AWritableTreeThatIsMissingFailsBeforeAnythingChanges) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace)";
  pid_t pid = ::fork();
  if (pid == 0) {
    char before[64] = {}, after[64] = {};
    if (::readlink("/proc/self/ns/mnt", before, sizeof before - 1) <= 0) _exit(90);
    Status s = SeeHostReadOnly(HostView{.writable = {"/nonexistent/hull"}});
    if (s.ok() || s.code() != Code::kNotFound) _exit(1);
    if (::readlink("/proc/self/ns/mnt", after, sizeof after - 1) <= 0) _exit(90);
    _exit(std::string(before) == after ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hull::shim
