// The confined server's filter and capabilities (shim/security/confine.h),
// applied to a forked child of the test: what the server does still works,
// what it never does fails with EPERM. Root (the capability drop needs it).
#include "shim/security/confine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace hull::shim {
namespace {

// Runs `body` in a forked, confined child; its exit code is the number of
// the first check that failed (0: all held), 100 when confining failed.
int InConfinedChild(int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!ConfineServer().ok()) _exit(100);
    _exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(ConfineTest, TheServersOwnCallsWorkAndTheRestIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (capabilities)";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' runtime makes syscalls of its own the server's list lacks";
#endif
  int failed = InConfinedChild([]() -> int {
    // What the server does: files, sockets, pipes, signals to itself.
    int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return 2;
    buf[n] = '\0';
    std::string status(buf);
    if (status.find("Name:\thull-confined") == std::string::npos) return 3;
    if (status.find("Seccomp:\t2") == std::string::npos) return 4;
    if (status.find("CapEff:\t0000000000000") == std::string::npos) return 5;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return 6;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return 7;
    if (::kill(::getpid(), 0) != 0) return 8;
    // What it never does.
    errno = 0;
    if (::mount("none", "/mnt", "tmpfs", 0, nullptr) == 0 || errno != EPERM) return 10;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    if (::execve("/bin/true", argv, nullptr) == 0 || errno != EPERM) return 11;
    if (::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) != -1 || errno != EPERM) return 12;
    if (::unshare(CLONE_NEWNS) == 0 || errno != EPERM) return 13;
    if (::syscall(SYS_ptrace, 0, 0, 0, 0) != -1 || errno != EPERM) return 14;
    if (::mprotect(buf, 0, PROT_READ) == 0 || errno != EPERM) return 15;
    if (::setuid(0) == 0 || errno != EPERM) return 16;
    return 0;
  });
  EXPECT_EQ(failed, 0);
}

}  // namespace
}  // namespace hull::shim
