// The readers against this host's real cgroups. The metrics test needs only
// a v1 cpuacct and memory hierarchy; the OOM test needs root and a writable
// v1 memory hierarchy, and skips (saying why) otherwise. It creates one
// memory cgroup below the test's own and removes it again. The emptying
// test (root; v1, hybrid or unified) does the same where WaitEmptyAsync
// looks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "cgroups/cgroups.h"

namespace hull::cgroups {
namespace {

using std::chrono::milliseconds;

TEST(RealHostTest, V1MetricsOfThisProcess) {
  auto host = DetectHost();
  if (!host) GTEST_SKIP() << "no cgroup filesystem: " << host.error().ToString();
  if (host->mode == Mode::kUnified) GTEST_SKIP() << "host is cgroup v2 only, no v1 to read";
  if (host->FindV1("cpuacct") == nullptr || host->FindV1("memory") == nullptr) {
    GTEST_SKIP() << "host has no v1 cpuacct or memory hierarchy";
  }
  auto any = MetricsForPid(::getpid());
  ASSERT_TRUE(any.has_value()) << any.error().ToString();
  EXPECT_EQ(any->type_url(), "io.containerd.cgroups.v1.Metrics");
  v1::Metrics metrics;
  ASSERT_TRUE(metrics.ParseFromString(any->value()));
  EXPECT_GT(metrics.cpu().usage().total(), 0u);
  EXPECT_GT(metrics.memory().usage().usage(), 0u);
  EXPECT_GT(metrics.cpu().usage().per_cpu_size(), 0);
}

Status WriteFile(const std::filesystem::path& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path.string());
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return ErrnoError("write", path.string());
  }
  return Status::Ok();
}

// Owns the test cgroup and the child in it: kills and reaps the child, then
// removes the directory, so nothing is left behind even when a check fails.
class TempMemoryCgroup {
 public:
  explicit TempMemoryCgroup(std::filesystem::path path) : path_(std::move(path)) {}
  ~TempMemoryCgroup() {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    // The kernel may take a moment to let go of a cgroup whose last task
    // just exited.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::rmdir(path_.c_str()) != 0 && errno == EBUSY &&
           std::chrono::steady_clock::now() < deadline) {
      ::usleep(10000);
    }
    EXPECT_FALSE(std::filesystem::exists(path_)) << "left behind: " << path_;
  }
  const std::filesystem::path& path() const { return path_; }
  void set_child(pid_t pid) { child_ = pid; }
  // The child's wait status, once; the destructor then has nothing to reap.
  int Reap() {
    int status = 0;
    ::waitpid(child_, &status, 0);
    child_ = -1;
    return status;
  }

 private:
  std::filesystem::path path_;
  pid_t child_ = -1;
};

TEST(RealHostTest, V1OomWatchSeesAKill) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a memory cgroup";
  auto host = DetectHost();
  if (!host) GTEST_SKIP() << "no cgroup filesystem: " << host.error().ToString();
  if (host->mode == Mode::kUnified) {
    GTEST_SKIP() << "host is cgroup v2 only; the v2 watch is tested on a fake tree";
  }
  auto self = Manager::ForPid(::getpid());
  ASSERT_TRUE(self.has_value()) << self.error().ToString();
  auto own = self->Dir("memory");
  if (!own) GTEST_SKIP() << "no v1 memory cgroup: " << own.error().ToString();

  // Below the test's own memory cgroup, so the child stays inside whatever
  // limits the test runs under.
  std::filesystem::path path = *own / ("hull-oom-test-" + std::to_string(::getpid()));
  if (::mkdir(path.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create " << path << ": " << std::strerror(errno);
  }
  TempMemoryCgroup cgroup(path);
  ASSERT_TRUE(WriteFile(path / "memory.limit_in_bytes", "8388608").ok());
  // Without swap accounting the child could swap instead of dying.
  if (std::filesystem::exists(path / "memory.memsw.limit_in_bytes")) {
    ASSERT_TRUE(WriteFile(path / "memory.memsw.limit_in_bytes", "8388608").ok());
  }

  auto go = MakePipe();
  ASSERT_TRUE(go.has_value());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Waits to be moved into the cgroup, then touches 64 MiB.
    char byte;
    if (::read(go->read.get(), &byte, 1) != 1) ::_exit(2);
    constexpr size_t kSize = 64 << 20;
    void* mem = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) ::_exit(3);
    auto* p = static_cast<volatile char*>(mem);
    for (size_t i = 0; i < kSize; i += 4096) p[i] = 1;
    ::_exit(0);
  }
  cgroup.set_child(child);
  go->read.reset();
  ASSERT_TRUE(WriteFile(path / "cgroup.procs", std::to_string(child)).ok());

  auto manager = Manager::ForPid(child);
  ASSERT_TRUE(manager.has_value()) << manager.error().ToString();
  ASSERT_EQ(*manager->Dir("memory"), path);
  auto before = manager->OomKillCount();
  ASSERT_TRUE(before.has_value()) << before.error().ToString();

  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  int fired = 0;
  auto watch = manager->WatchOom(**loop, [&] { ++fired; });
  ASSERT_TRUE(watch.has_value()) << watch.error().ToString();

  ASSERT_EQ(::write(go->write.get(), "x", 1), 1);
  EXPECT_TRUE((*loop)->RunUntil([&] { return fired > 0; }, milliseconds(20000)));
  int status = cgroup.Reap();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
  auto after = manager->OomKillCount();
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  EXPECT_GT(*after, *before);
  EXPECT_EQ(fired, 1);
  watch->Reset();
}

// What kill --all waits on: a child and its own child in a cgroup, killed;
// the wait ends while the child is still an unreaped zombie (the kernel
// lists no exited process in cgroup.procs, and v2's populated drops).
TEST(RealHostTest, WaitEmptyAsyncEndsWhenTheLastProcessDies) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a cgroup";
  auto self = Manager::ForPid(::getpid());
  if (!self) GTEST_SKIP() << "no cgroup filesystem: " << self.error().ToString();
  auto own = self->ProcessesDir();
  if (!own) GTEST_SKIP() << "no cgroup to watch: " << own.error().ToString();
  std::filesystem::path path = *own / ("hull-wait-test-" + std::to_string(::getpid()));
  if (::mkdir(path.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create " << path << ": " << std::strerror(errno);
  }
  TempMemoryCgroup cgroup(path);

  auto go = MakePipe();
  auto told = MakePipe();
  ASSERT_TRUE(go.has_value() && told.has_value());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Once moved, forks a grandchild (in the cgroup too) and says its pid.
    char byte;
    if (::read(go->read.get(), &byte, 1) != 1) ::_exit(2);
    pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::pause();
      ::_exit(0);
    }
    if (::write(told->write.get(), &grandchild, sizeof grandchild) != sizeof grandchild) ::_exit(3);
    ::pause();
    ::_exit(0);
  }
  cgroup.set_child(child);
  ASSERT_TRUE(WriteFile(path / "cgroup.procs", std::to_string(child)).ok());
  ASSERT_EQ(::write(go->write.get(), "x", 1), 1);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(told->read.get(), &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));

  auto manager = Manager::ForPid(child);
  ASSERT_TRUE(manager.has_value()) << manager.error().ToString();
  ASSERT_EQ(*manager->ProcessesDir(), path);
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  std::optional<Status> result;
  auto op = manager->WaitEmptyAsync(**loop, milliseconds(20000),
                                    [&](Status s) { result = std::move(s); });
  ASSERT_TRUE(op.has_value()) << op.error().ToString();
  EXPECT_FALSE((*loop)->RunUntil([&] { return result.has_value(); }, milliseconds(200)));

  ::kill(child, SIGKILL);
  EXPECT_FALSE((*loop)->RunUntil([&] { return result.has_value(); }, milliseconds(200)))
      << "the grandchild still lives";
  ::kill(grandchild, SIGKILL);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*loop)->RunUntil([&] { return result.has_value(); }, milliseconds(20000)));
  EXPECT_TRUE(result->ok()) << result->ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  int status = cgroup.Reap();  // a zombie until now
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
}

}  // namespace
}  // namespace hull::cgroups
