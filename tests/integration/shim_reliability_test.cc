// hull under a careless or hostile host, through real containerd and runc:
// a log disk that fills, a containerd that stays down for a minute while a
// container exits, a flood of connections past the shim's descriptor limit.
// runc only: none of this depends on the runtime.
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <thread>

#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

using ReliabilityTest = HullCtrTest;

std::string Unique(const std::string& name) {
  return name + "-" + std::to_string(::getpid());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST_P(ReliabilityTest, FullLogDiskIsReportedAndTheContainerRunsOn) {
  std::string mnt = containerd_->dir() + "/tinylog";
  fs::create_directories(mnt);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k"), 0) << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};

  std::string id = Unique("fill");
  // 1 MiB into a 64 KiB disk; then the container marks that it got past it.
  ASSERT_TRUE(Run({"-d", "--log-uri", "file://" + mnt + "/c.log"}, id,
                  {"sh", "-c", "head -c 1048576 /dev/zero; touch /wrote; sleep 1000"})
                  .ok());
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::string log = ReadAll(containerd_->log_path());
        return log.find("container " + id + ": stdout:") != std::string::npos &&
               log.find("errno " + std::to_string(ENOSPC)) != std::string::npos;
      },
      20s))
      << containerd_->LogTail(30);
  // The writer was never blocked: it got past the 1 MiB, and the task serves.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Ctr({"task", "exec", "--exec-id", "x1", id, "ls", "/wrote"}).ok();
      },
      20s));
  EXPECT_EQ(Task(id).second, "RUNNING");
  RemoveContainer(id);
}

TEST_P(ReliabilityTest, ExitSurvivesAMinuteLongContainerdOutage) {
  std::string id = Unique("outage");
  ASSERT_TRUE(Run({"-d"}, id, {"sleep", "1000"}).ok());
  pid_t pid = Task(id).first;
  ASSERT_GT(pid, 0);
  size_t log_before = ReadAll(containerd_->log_path()).size();

  containerd_->Kill();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);  // the container exits while containerd is away
  // The outage itself is the scenario (not an ordering wait): a minute, three
  // times the old retry budget of ~21 s.
  std::this_thread::sleep_for(60s);
  std::string error;
  ASSERT_TRUE(containerd_->Restart(&error)) << error;

  // containerd received the shim's /tasks/exit after it came back.
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::string log = ReadAll(containerd_->log_path()).substr(log_before);
        return log.find("topic=/tasks/exit") != std::string::npos;
      },
      30s))
      << containerd_->LogTail(40);
  EXPECT_TRUE(WaitForStatus(id, "STOPPED"));
  CommandResult rm = Ctr({"task", "rm", id});
  EXPECT_NE(rm.err.find("exit code 137"), std::string::npos) << rm.Describe();
  Ctr({"container", "rm", id});
}

// Connects to the shim's socket (a unix path from <bundle>/address).
UniqueFd ConnectUnix(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return UniqueFd();
  std::memcpy(addr.sun_path, path.data(), path.size());
  timeval tv{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return UniqueFd();
  return fd;
}

TEST_P(ReliabilityTest, ConnectionFloodPastTheShimsDescriptorsLeavesContainerdWorking) {
  std::string id = Unique("flood");
  ASSERT_TRUE(Run({"-d"}, id, {"sleep", "1000"}).ok());
  std::vector<pid_t> shims = Shims();
  ASSERT_EQ(shims.size(), 1u);
  // Lower the running shim's descriptor limit below its connection cap (256),
  // so the flood reaches EMFILE as it did at 20,000 without a cap.
  constexpr rlim_t kShimFds = 200;
  // The soft limit only: the exec's spec sets its own RLIMIT_NOFILE, which
  // runc cannot raise above a lowered hard limit.
  rlimit limit{};
  ASSERT_EQ(::prlimit(shims[0], RLIMIT_NOFILE, nullptr, &limit), 0) << std::strerror(errno);
  limit.rlim_cur = kShimFds;
  ASSERT_EQ(::prlimit(shims[0], RLIMIT_NOFILE, &limit, nullptr), 0) << std::strerror(errno);
  std::string address = ReadAll(Bundle(id) + "/address");
  while (!address.empty() && address.back() == '\n') address.pop_back();
  ASSERT_TRUE(address.starts_with("unix://")) << address;

  constexpr int kFlood = 500;
  std::vector<UniqueFd> held;
  for (int i = 0; i < kFlood; ++i) {
    UniqueFd fd = ConnectUnix(address.substr(7));
    ASSERT_TRUE(fd) << "connect " << i << ": " << std::strerror(errno);
    held.push_back(std::move(fd));
  }
  // All held open: exec still works, and a restarted containerd reconnects.
  CommandResult exec = Ctr({"task", "exec", "--exec-id", "x1", id, "echo", "ok"});
  EXPECT_EQ(exec.out, "ok\n") << exec.Describe();
  std::string error;
  ASSERT_TRUE(containerd_->Restart(&error)) << error;
  EXPECT_EQ(Task(id).second, "RUNNING");
  exec = Ctr({"task", "exec", "--exec-id", "x2", id, "echo", "again"});
  EXPECT_EQ(exec.out, "again\n") << exec.Describe();
  EXPECT_EQ(Shims(), shims);
  std::string log = ReadAll(containerd_->log_path());
  EXPECT_NE(log.find("closed the idlest connection"), std::string::npos);
  held.clear();
  RemoveContainer(id);
}

INSTANTIATE_TEST_SUITE_P(Runc, ReliabilityTest, ::testing::Values("runc"));

}  // namespace
}  // namespace hull::itest
