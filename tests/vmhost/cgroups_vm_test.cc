// The cgroup v2 manager against a real kernel: limits that bite (OOM kill
// seen by the watch, pids.max, cpu.max throttling), freeze and thaw, kill
// and removal. Needs root on a cgroup v2 host with the cpu, memory and pids
// controllers: tools/vmhost's guest (ctest runs it there, label "vm"). Skips
// elsewhere, saying why, unless HULL_VM_TEST_REQUIRE=1 (set by the ctest
// hook), which turns every skip into a failure: a run that tested nothing
// must not pass.
//
// Each test works below its own /hull-vm-<pid>-<n> cgroup and removes it at
// the end; the processes it starts are its children, killed and reaped by
// their handles whatever happens.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "base/event_loop.h"
#include "cgroups/cgroups.h"

namespace hull::cgroups {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Generous: everything runs under TCG on a shared machine.
constexpr milliseconds kWait = seconds(30);

bool Required() {
  const char* v = std::getenv("HULL_VM_TEST_REQUIRE");
  return v != nullptr && std::string(v) == "1";
}

// Why this host cannot run these tests; empty if it can.
std::string SkipReason() {
  if (::geteuid() != 0) return "needs root";
  auto host = DetectHost();
  if (!host) return "no cgroup filesystem: " + host.error().ToString();
  if (host->mode != Mode::kUnified) {
    return "not a cgroup v2 host (" + std::string(ModeName(host->mode)) +
           "); run through tools/vmhost";
  }
  std::ifstream in("/sys/fs/cgroup/cgroup.controllers");
  std::string controllers((std::istreambuf_iterator<char>(in)), {});
  for (const char* c : {"cpu", "memory", "pids"}) {
    if (controllers.find(c) == std::string::npos) {
      return std::string("cgroup2 root lacks the ") + c + " controller";
    }
  }
  return "";
}

#define SKIP_UNLESS_REAL_CGROUP2()                                       \
  do {                                                                   \
    if (std::string reason = SkipReason(); !reason.empty()) {            \
      if (Required()) FAIL() << "HULL_VM_TEST_REQUIRE=1 but " << reason; \
      GTEST_SKIP() << reason;                                            \
    }                                                                    \
  } while (0)

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout = kWait) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// A forked child running `body` inside a cgroup. It waits on a pipe until
// the parent has moved it in, so `body` runs entirely under the limits.
// Dropping the handle kills and reaps it.
class Child {
 public:
  Child(const Manager& cgroup, std::function<int()> body) {
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(120);
      ::_exit(body());
    }
    ::close(go[0]);
    if (pid_ > 0) {
      moved_ = cgroup.AddProcess(pid_);
      if (!moved_.ok()) ::kill(pid_, SIGKILL);
    }
    (void)!::write(go[1], "g", 1);
    ::close(go[1]);
  }
  ~Child() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int status;
      ::waitpid(pid_, &status, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  const Status& moved() const { return moved_; }

  // The wait status once it has ended (reaping it), else nullopt.
  std::optional<int> Poll() {
    if (status_) return status_;
    int status;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_;
  }
  std::optional<int> Wait(milliseconds timeout = kWait) {
    WaitUntil([&] { return Poll().has_value(); }, timeout);
    return status_;
  }

 private:
  pid_t pid_ = -1;
  Status moved_ = InternalError("not started");
  std::optional<int> status_;
};

// User + system CPU time of `pid` in clock ticks, from /proc/<pid>/stat.
uint64_t CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  uint64_t utime = 0, stime = 0;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return utime + stime;
}

std::string ReadCgroupFile(const Manager& m, const std::string& file) {
  std::ifstream in("/sys/fs/cgroup" + m.path() + "/" + file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

int BusyLoop() {
  volatile uint64_t x = 0;
  for (;;) x = x + 1;
}

// Charges some memory to the cgroup (a forked child's existing pages stay
// charged where they were), then spins.
int TouchMemoryThenBusyLoop() {
  constexpr size_t kSize = 4u << 20;
  char* p = static_cast<char*>(
      ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 2;
  for (size_t i = 0; i < kSize; i += 4096) p[i] = 1;
  return BusyLoop();
}

class VmCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNLESS_REAL_CGROUP2();
    static int n = 0;
    auto base =
        Manager::Unified("/hull-vm-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
    ASSERT_TRUE(base.has_value()) << base.error().ToString();
    base_ = std::move(*base);
    Status created = base_->Create();
    ASSERT_TRUE(created.ok()) << created.ToString();
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }
  void TearDown() override {
    if (!base_) return;
    Status removed = base_->Remove(kWait);
    EXPECT_TRUE(removed.ok()) << removed.ToString();
  }

  // A cgroup below this test's, created with `resources`.
  Manager Sub(const std::string& name, const Resources& resources = {}) {
    auto m = Manager::Unified(base_->path() + "/" + name);
    EXPECT_TRUE(m.has_value());
    Status created = m->Create(resources);
    EXPECT_TRUE(created.ok()) << created.ToString();
    return *m;
  }

  std::optional<Manager> base_;
  std::unique_ptr<EventLoop> loop_;
};

TEST_F(VmCgroupTest, MemoryMaxLeadsToAnOomKillTheWatchReports) {
  Resources r;
  r.memory_max = 32 << 20;
  r.memory_swap_max = 0;
  Manager m = Sub("oom", r);
  EXPECT_EQ(ReadCgroupFile(m, "memory.max"), std::to_string(32 << 20));
  int ooms = 0;
  auto watch = m.WatchOom(*loop_, [&] { ++ooms; });
  ASSERT_TRUE(watch.has_value()) << watch.error().ToString();

  Child hog(m, [] {
    constexpr size_t kSize = 256u << 20;
    char* p = static_cast<char*>(
        ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return 2;
    for (size_t i = 0; i < kSize; i += 4096) p[i] = 1;
    return 0;  // not reached under the limit
  });
  ASSERT_TRUE(hog.moved().ok()) << hog.moved().ToString();
  // The watch fires on the loop; the child's end is not a loop event.
  ASSERT_TRUE(loop_->RunUntil([&] { return ooms > 0; }, kWait)) << "the watch did not fire";
  auto status = hog.Wait();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  EXPECT_EQ(ooms, 1);
  EXPECT_GE(m.OomKillCount().value_or(0), 1u);
  auto metrics = m.MetricsV2();
  ASSERT_TRUE(metrics.has_value()) << metrics.error().ToString();
  EXPECT_GE(metrics->memory_events().oom_kill(), 1u);
  EXPECT_EQ(metrics->memory().usage_limit(), uint64_t{32 << 20});
}

TEST_F(VmCgroupTest, PidsMaxStopsForks) {
  Resources r;
  r.pids_max = 5;
  Manager m = Sub("pids", r);
  // The child itself is one of the five: four forks succeed, then EAGAIN.
  Child forker(m, [] {
    int made = 0;
    for (int i = 0; i < 20; ++i) {
      pid_t p = ::fork();
      if (p == 0) {
        ::pause();
        ::_exit(0);
      }
      if (p < 0) return errno == EAGAIN ? 100 + made : 99;
      ++made;
    }
    return made;  // never stopped: the limit did nothing
  });
  ASSERT_TRUE(forker.moved().ok()) << forker.moved().ToString();
  auto status = forker.Wait();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 104) << "100 + forks before EAGAIN";
  auto metrics = m.MetricsV2();
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->pids().limit(), 5u);
  EXPECT_EQ(metrics->pids().current(), 4u);  // the orphaned grandchildren
}

TEST_F(VmCgroupTest, CpuMaxThrottles) {
  Resources r;
  r.cpu_max = CpuMax{.quota = 10000, .period = 100000};  // 10% of a CPU
  Manager m = Sub("cpu", r);
  EXPECT_EQ(ReadCgroupFile(m, "cpu.max"), "10000 100000");
  Child busy(m, BusyLoop);
  ASSERT_TRUE(busy.moved().ok());
  // throttled_usec grows when a throttled period ends, so it may lag
  // nr_throttled by one period.
  v2::CPUStat cpu;
  EXPECT_TRUE(WaitUntil([&] {
    auto metrics = m.MetricsV2();
    if (metrics) cpu = metrics->cpu();
    return cpu.nr_throttled() > 0 && cpu.throttled_usec() > 0;
  })) << "nr_throttled "
      << cpu.nr_throttled() << ", throttled_usec " << cpu.throttled_usec();
  EXPECT_GT(cpu.nr_periods(), 0u);
  EXPECT_GT(cpu.usage_usec(), 0u);
}

TEST_F(VmCgroupTest, FreezeStopsABusyProcessAndThawResumesIt) {
  Manager m = Sub("freeze");
  Child busy(m, BusyLoop);
  ASSERT_TRUE(busy.moved().ok());
  ASSERT_TRUE(WaitUntil([&] { return CpuTicks(busy.pid()) > 0; }));

  Status frozen = m.Freeze(kWait);
  ASSERT_TRUE(frozen.ok()) << frozen.ToString();
  EXPECT_TRUE(m.Events().value().frozen);
  uint64_t before = CpuTicks(busy.pid());
  // A quiet period to show nothing runs: 50 ticks of a busy loop if it did.
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(CpuTicks(busy.pid()), before);

  Status thawed = m.Thaw(kWait);
  ASSERT_TRUE(thawed.ok()) << thawed.ToString();
  EXPECT_FALSE(m.Events().value().frozen);
  EXPECT_TRUE(WaitUntil([&] { return CpuTicks(busy.pid()) > before; }));
}

TEST_F(VmCgroupTest, RemoveKillsAFrozenCgroup) {
  Manager m = Sub("frozen-remove");
  Child busy(m, BusyLoop);
  ASSERT_TRUE(busy.moved().ok());
  ASSERT_TRUE(m.Freeze(kWait).ok());
  Status removed = m.Remove(kWait);
  ASSERT_TRUE(removed.ok()) << removed.ToString();
  auto status = busy.Wait();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup" + m.path()));
}

TEST_F(VmCgroupTest, FreezeAndThawOnTheLoop) {
  Manager m = Sub("freeze-async");
  Child busy(m, BusyLoop);
  ASSERT_TRUE(busy.moved().ok());
  std::optional<Status> result;
  auto op = m.FreezeAsync(*loop_, kWait, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value()) << op.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kWait));
  ASSERT_TRUE(result->ok()) << result->ToString();
  EXPECT_TRUE(m.Events().value().frozen);
  result.reset();
  op = m.ThawAsync(*loop_, kWait, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kWait));
  ASSERT_TRUE(result->ok()) << result->ToString();
  EXPECT_FALSE(m.Events().value().frozen);
}

TEST_F(VmCgroupTest, CgroupKillEmptiesTheSubtree) {
  // Processes live in leaves only: "kill" has controllers enabled for its
  // children, so the kernel keeps processes out of it.
  Manager m = Sub("kill");
  Manager leaf = Sub("kill/leaf");
  Manager inner = Sub("kill/inner/deeper");
  auto sleeper = [] {
    ::pause();
    return 0;
  };
  Child a(leaf, sleeper);
  Child b(leaf, sleeper);
  Child c(inner, sleeper);
  ASSERT_TRUE(a.moved().ok() && b.moved().ok() && c.moved().ok());
  ASSERT_TRUE(m.Events().value().populated);
  ASSERT_TRUE(m.Kill().ok());
  EXPECT_TRUE(WaitUntil([&] { return !m.Events().value().populated; }));
  for (Child* child : {&a, &b, &c}) {
    auto status = child->Wait();
    ASSERT_TRUE(status.has_value());
    ASSERT_TRUE(WIFSIGNALED(*status));
    EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  }
  EXPECT_TRUE(leaf.Processes().value().empty());
}

TEST_F(VmCgroupTest, RemoveLeavesNothing) {
  Resources r;
  r.memory_max = 64 << 20;
  r.pids_max = 100;
  Manager pod = Sub("pod", r);
  Manager c1 = Sub("pod/c1");
  Manager c2 = Sub("pod/c2/deeper");
  Child a(c1, BusyLoop);
  Child b(c2, []() -> int {
    // A process that forks as it goes: removal must still win.
    for (;;) {
      pid_t p = ::fork();
      if (p == 0) ::_exit(0);
      if (p > 0) ::waitpid(p, nullptr, 0);
    }
  });
  ASSERT_TRUE(a.moved().ok() && b.moved().ok());
  Status removed = pod.Remove(kWait);
  ASSERT_TRUE(removed.ok()) << removed.ToString();
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup" + pod.path()));
  EXPECT_TRUE(a.Wait().has_value());
  EXPECT_TRUE(b.Wait().has_value());
  EXPECT_TRUE(pod.Remove(kWait).ok());  // again: nothing there
}

TEST_F(VmCgroupTest, RemoveOnTheLoop) {
  Manager pod = Sub("pod-async");
  Manager c1 = Sub("pod-async/c1");
  Child a(c1, BusyLoop);
  ASSERT_TRUE(a.moved().ok());
  std::optional<Status> result;
  auto op = pod.RemoveAsync(*loop_, kWait, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value()) << op.error().ToString();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kWait));
  ASSERT_TRUE(result->ok()) << result->ToString();
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup" + pod.path()));
  auto status = a.Wait();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
}

TEST_F(VmCgroupTest, OciResourcesReachTheKernel) {
  auto r = ParseResources(std::string_view(R"({
    "memory": {"limit": 67108864, "reservation": 33554432, "swap": 100663296},
    "cpu": {"shares": 1024, "quota": 50000, "period": 100000, "cpus": "0", "mems": "0"},
    "pids": {"limit": 32},
    "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}],
    "unified": {"memory.high": "50331648"}
  })"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  Manager m = Sub("oci", *r);
  EXPECT_EQ(ReadCgroupFile(m, "memory.max"), "67108864");
  EXPECT_EQ(ReadCgroupFile(m, "memory.low"), "33554432");
  EXPECT_EQ(ReadCgroupFile(m, "memory.swap.max"), "33554432");
  EXPECT_EQ(ReadCgroupFile(m, "memory.high"), "50331648");
  EXPECT_EQ(ReadCgroupFile(m, "cpu.weight"), "39");
  EXPECT_EQ(ReadCgroupFile(m, "cpu.max"), "50000 100000");
  EXPECT_EQ(ReadCgroupFile(m, "cpuset.cpus"), "0");
  EXPECT_EQ(ReadCgroupFile(m, "cpuset.mems"), "0");
  EXPECT_EQ(ReadCgroupFile(m, "pids.max"), "32");
  EXPECT_EQ(ReadCgroupFile(m, "hugetlb.2MB.max"), "4194304");

  // An update: unlimited memory (swap follows), fewer pids.
  auto update =
      ParseResources(std::string_view(R"({"memory": {"limit": -1}, "pids": {"limit": 8}})"));
  ASSERT_TRUE(update.has_value());
  ASSERT_TRUE(m.Apply(*update).ok());
  EXPECT_EQ(ReadCgroupFile(m, "memory.max"), "max");
  EXPECT_EQ(ReadCgroupFile(m, "memory.swap.max"), "max");
  EXPECT_EQ(ReadCgroupFile(m, "pids.max"), "8");
}

TEST_F(VmCgroupTest, MetricsHaveEveryV2Section) {
  Manager m = Sub("metrics");
  Child busy(m, TouchMemoryThenBusyLoop);
  ASSERT_TRUE(busy.moved().ok());
  // The counters trail the process a little (rstat is flushed lazily).
  ASSERT_TRUE(WaitUntil([&] {
    auto metrics = m.MetricsV2();
    return metrics && metrics->cpu().usage_usec() > 0 && metrics->memory().usage() >= (4u << 20);
  })) << "no CPU or memory use seen in the cgroup";
  auto any = m.Metrics();
  ASSERT_TRUE(any.has_value()) << any.error().ToString();
  EXPECT_EQ(any->type_url(), kV2MetricsTypeUrl);
  v2::Metrics metrics;
  ASSERT_TRUE(metrics.ParseFromString(any->value()));
  EXPECT_EQ(metrics.pids().current(), 1u);
  EXPECT_GT(metrics.cpu().usage_usec(), 0u);
  EXPECT_TRUE(metrics.cpu().has_psi());
  EXPECT_GE(metrics.memory().usage(), 4u << 20);
  EXPECT_GT(metrics.memory().anon(), 0u);
  EXPECT_TRUE(metrics.memory().has_psi());
  EXPECT_TRUE(metrics.has_memory_events());
  EXPECT_TRUE(metrics.io().has_psi());
}

TEST(VmCgroupSystemdPathTest, ExpandedPathsCanBeCreated) {
  SKIP_UNLESS_REAL_CGROUP2();
  auto path = CgroupPathFromOci("hullvm-a.slice:hull:c" + std::to_string(::getpid()), true);
  ASSERT_TRUE(path.has_value());
  auto m = Manager::Unified(*path);
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->Create().ok());
  EXPECT_TRUE(std::filesystem::is_directory("/sys/fs/cgroup/hullvm.slice/hullvm-a.slice/hull-c" +
                                            std::to_string(::getpid()) + ".scope"));
  ASSERT_TRUE(m->Remove(kWait).ok());
  auto top = Manager::Unified("/hullvm.slice");
  ASSERT_TRUE(top.has_value());
  ASSERT_TRUE(top->Remove(kWait).ok());
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/hullvm.slice"));
}

}  // namespace
}  // namespace hull::cgroups
