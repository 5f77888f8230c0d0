// The cgroup v2 manager against a fake unified tree: what it writes where,
// how it waits on cgroup.events, and what it refuses. A plain directory is
// not cgroupfs (no files appear in a new directory, nothing reacts to a
// write), so each test lays out the files the kernel would show and plays
// the kernel's part itself; the real thing runs in tests/vm/.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/event_loop.h"
#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using std::chrono::milliseconds;
using testing::FakeHost;

constexpr milliseconds kShort{150};
constexpr milliseconds kLong{5000};

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ManagerV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.AddUnified();
    host_.Write("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma\n");
    host_.Write("cgroup.subtree_control", "");
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }

  Manager At(std::string_view path) {
    auto m = Manager::ForPath(path, host_.roots());
    EXPECT_TRUE(m.has_value()) << m.error().ToString();
    return *m;
  }
  std::string File(const std::filesystem::path& relative) {
    return ReadText(host_.cgroupfs() / relative);
  }
  // Empty interface files, as a fresh cgroup has them (writes here do not
  // truncate, as on cgroupfs, so they start empty).
  void Touch(const std::filesystem::path& dir, std::initializer_list<const char*> files) {
    for (const char* f : files) host_.Write(dir / f, "");
  }
  bool Exists(const std::filesystem::path& relative) {
    return std::filesystem::exists(host_.cgroupfs() / relative);
  }

  FakeHost host_;
  std::unique_ptr<EventLoop> loop_;
};

TEST_F(ManagerV2Test, CreateMakesParentsAndEnablesControllersInThem) {
  host_.Write("kubepods/cgroup.controllers", "cpu memory pids\n");
  host_.Write("kubepods/cgroup.subtree_control", "memory\n");
  Manager m = At("/kubepods/pod1");
  ASSERT_TRUE(m.Create().ok());
  EXPECT_TRUE(std::filesystem::is_directory(host_.cgroupfs() / "kubepods/pod1"));
  // The root had none enabled: all at once. kubepods had memory: the rest.
  EXPECT_EQ(File("cgroup.subtree_control"), "+cpuset +cpu +io +memory +hugetlb +pids +rdma");
  EXPECT_EQ(File("kubepods/cgroup.subtree_control"), "+cpu +pids");
  // Creating an existing cgroup is fine.
  EXPECT_TRUE(m.Create().ok());
}

TEST_F(ManagerV2Test, CreateAppliesLimitsAndChecksControllers) {
  host_.Write("pod/cgroup.controllers", "memory pids\n");
  Touch("pod", {"memory.max", "pids.max"});
  Manager m = At("/pod");
  Resources r;
  r.memory_max = 64 << 20;
  r.pids_max = 10;
  ASSERT_TRUE(m.Create(r).ok());
  EXPECT_EQ(File("pod/memory.max"), "67108864");
  EXPECT_EQ(File("pod/pids.max"), "10");

  r.cpu_weight = 100;  // cpu is not in pod/cgroup.controllers
  Status s = m.Create(r);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
}

TEST_F(ManagerV2Test, ApplyWritesEveryFile) {
  Touch("pod",
        {"cpu.weight", "cpu.max", "cpu.max.burst", "cpu.idle", "cpuset.cpus", "cpuset.mems",
         "memory.min", "memory.low", "memory.high", "memory.max", "memory.swap.max", "pids.max",
         "io.weight", "io.max", "hugetlb.2MB.max", "rdma.max", "memory.oom.group"});
  Manager m = At("/pod");
  Resources r;
  r.cpu_weight = 39;
  r.cpu_max = CpuMax{.quota = 50000, .period = 100000};
  r.cpu_max_burst = 1000;
  r.cpu_idle = 1;
  r.cpuset_cpus = "0-1";
  r.cpuset_mems = "0";
  r.memory_min = 1 << 20;
  r.memory_low = 2 << 20;
  r.memory_high = kUnlimited;
  r.memory_max = 8 << 20;
  r.memory_swap_max = 0;
  r.pids_max = 5;
  r.blkio_weight = 1000;
  r.io_max = {{8, 0, "rbps", 1024}, {8, 0, "wiops", kUnlimited}};
  r.hugetlb_max = {{"2MB", 4 << 20}};
  r.rdma_max = {{"mlx5_1", 3, std::nullopt}};
  r.unified = {{"memory.oom.group", "1"}, {"pids.max", "20"}};
  ASSERT_TRUE(m.Apply(r).ok());
  EXPECT_EQ(File("pod/cpu.weight"), "39");
  EXPECT_EQ(File("pod/cpu.max"), "50000 100000");
  EXPECT_EQ(File("pod/cpu.max.burst"), "1000");
  EXPECT_EQ(File("pod/cpu.idle"), "1");
  EXPECT_EQ(File("pod/cpuset.cpus"), "0-1");
  EXPECT_EQ(File("pod/cpuset.mems"), "0");
  EXPECT_EQ(File("pod/memory.min"), "1048576");
  EXPECT_EQ(File("pod/memory.low"), "2097152");
  EXPECT_EQ(File("pod/memory.high"), "max");
  EXPECT_EQ(File("pod/memory.max"), "8388608");
  EXPECT_EQ(File("pod/memory.swap.max"), "0");
  EXPECT_EQ(File("pod/io.weight"), "default 10000");  // no BFQ: io.weight's scale
  // One write per line; the fake keeps the last.
  EXPECT_EQ(File("pod/io.max"), "8:0 wiops=max");
  EXPECT_EQ(File("pod/hugetlb.2MB.max"), "4194304");
  EXPECT_EQ(File("pod/rdma.max"), "mlx5_1 hca_handle=3 hca_object=max");
  EXPECT_EQ(File("pod/memory.oom.group"), "1");
  EXPECT_EQ(File("pod/pids.max"), "20");  // unified is written last
}

TEST_F(ManagerV2Test, ApplyUsesBfqWhereTheKernelHasIt) {
  Touch("pod", {"io.bfq.weight"});
  Manager m = At("/pod");
  Resources r;
  r.blkio_weight = 300;
  ASSERT_TRUE(m.Apply(r).ok());
  EXPECT_EQ(File("pod/io.bfq.weight"), "300");
  EXPECT_FALSE(Exists("pod/io.weight"));
}

TEST_F(ManagerV2Test, ApplyErrorsNameTheFileExceptAbsentSwap) {
  // A directory in place of the file: the write fails (EISDIR), as a write
  // the kernel refuses would.
  host_.MakeCgroup("pod/pids.max");
  Manager m = At("/pod");
  Resources r;
  r.pids_max = 5;
  Status s = m.Apply(r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pids.max"), std::string::npos) << s.ToString();

  // No memory.swap.max (swap accounting off): "max" and "0" are true anyway.
  std::filesystem::remove(host_.cgroupfs() / "pod/pids.max");
  Resources swap;
  swap.memory_swap_max = 0;
  EXPECT_TRUE(m.Apply(swap).ok());
  swap.memory_swap_max = 1 << 20;
  EXPECT_EQ(m.Apply(swap).code(), Code::kNotFound);
}

TEST_F(ManagerV2Test, ProcessesEventsAndAddProcess) {
  host_.Write("pod/cgroup.procs", "12\n34\n");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  Manager m = At("/pod");
  EXPECT_EQ(m.Processes().value(), (std::vector<pid_t>{12, 34}));
  auto events = m.Events();
  ASSERT_TRUE(events.has_value());
  EXPECT_TRUE(events->populated);
  EXPECT_FALSE(events->frozen);
  host_.Write("pod/cgroup.procs", "");
  ASSERT_TRUE(m.AddProcess(56).ok());
  EXPECT_EQ(File("pod/cgroup.procs"), "56");
}

TEST_F(ManagerV2Test, KillWritesCgroupKill) {
  host_.Write("pod/cgroup.kill", "");
  Manager m = At("/pod");
  ASSERT_TRUE(m.Kill().ok());
  EXPECT_EQ(File("pod/cgroup.kill"), "1");
}

// Kernels before 5.14 have no cgroup.kill: every process listed in the
// subtree gets SIGKILL. A real child stands for the listed process.
TEST_F(ManagerV2Test, KillWithoutCgroupKillSignalsListedProcesses) {
  // Resolved before the fork: a failed assertion in At() must not leave a
  // paused child holding ctest's output pipe open.
  Manager m = At("/pod");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  host_.Write("pod/cgroup.procs", "");
  host_.Write("pod/sub/cgroup.procs", std::to_string(child) + "\n");
  Status s = m.Kill();
  int status = 0;
  if (!s.ok()) ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(ManagerV2Test, FreezeWaitsForFrozen) {
  host_.Write("pod/cgroup.freeze", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  Manager m = At("/pod");
  auto start = std::chrono::steady_clock::now();
  Status s = m.Freeze(kShort);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, kShort);
  EXPECT_EQ(File("pod/cgroup.freeze"), "1");

  host_.Write("pod/cgroup.events", "populated 1\nfrozen 1\n");
  EXPECT_TRUE(m.Freeze(kShort).ok());
  EXPECT_EQ(m.Thaw(kShort).code(), Code::kDeadlineExceeded);
  EXPECT_EQ(File("pod/cgroup.freeze"), "0");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  EXPECT_TRUE(m.Thaw(kShort).ok());
}

TEST_F(ManagerV2Test, FreezeWithoutFreezerIsUnimplemented) {
  host_.MakeCgroup("pod");
  EXPECT_EQ(At("/pod").Freeze(kShort).code(), Code::kUnimplemented);
}

TEST_F(ManagerV2Test, RemoveTakesOutTheWholeTreeDeepestFirst) {
  // Empty directories: what rmdir can take (a populated-0 cgroup holds only
  // kernel files, which do not count).
  host_.MakeCgroup("pod/c1");
  host_.MakeCgroup("pod/c2/sub");
  host_.MakeCgroup("other");
  Manager m = At("/pod");
  ASSERT_TRUE(m.Remove(kLong).ok());
  EXPECT_FALSE(Exists("pod"));
  EXPECT_TRUE(Exists("other"));
  // Gone already: fine.
  EXPECT_TRUE(m.Remove(kLong).ok());
  EXPECT_TRUE(At("/never/was").Remove(kLong).ok());
}

TEST_F(ManagerV2Test, RemoveKillsAndWaitsForPopulatedZero) {
  host_.Write("pod/cgroup.kill", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  Manager m = At("/pod");
  Status s = m.Remove(kShort);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_EQ(File("pod/cgroup.kill"), "1");
  EXPECT_TRUE(Exists("pod"));
}

TEST_F(ManagerV2Test, RemoveRefusesTheRoot) {
  EXPECT_EQ(At("/").Remove(kShort).code(), Code::kInvalidArgument);
}

TEST_F(ManagerV2Test, UnifiedNeedsNoMountinfo) {
  auto m = Manager::Unified("/pod", host_.cgroupfs());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->path(), "/pod");
  EXPECT_EQ(m->mode(), Mode::kUnified);
  ASSERT_TRUE(m->Create().ok());
  EXPECT_TRUE(Exists("pod"));
  EXPECT_EQ(Manager::Unified("pod", host_.cgroupfs()).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(Manager::Unified("/a/../b", host_.cgroupfs()).error().code(), Code::kInvalidArgument);
}

TEST_F(ManagerV2Test, RefusesSymlinkedComponents) {
  std::filesystem::create_directories(host_.cgroupfs().parent_path() / "elsewhere");
  std::filesystem::create_directory_symlink(host_.cgroupfs().parent_path() / "elsewhere",
                                            host_.cgroupfs() / "link");
  EXPECT_FALSE(At("/link/pod").Create().ok());
  EXPECT_FALSE(std::filesystem::exists(host_.cgroupfs().parent_path() / "elsewhere/pod"));
}

TEST(ManagerV1Test, V2CallsAreFailedPrecondition) {
  FakeHost host;
  host.AddV1("memory", "memory");
  host.AddUnified("unified");
  auto m = Manager::ForPath("/pod", host.roots());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->Create().code(), Code::kFailedPrecondition);
  EXPECT_EQ(m->Remove(kShort).code(), Code::kFailedPrecondition);
  EXPECT_EQ(m->Freeze(kShort).code(), Code::kFailedPrecondition);
  EXPECT_EQ(m->Kill().code(), Code::kFailedPrecondition);
}

// ---- on the loop -----------------------------------------------------------

TEST_F(ManagerV2Test, FreezeAsyncCompletesOnTheEventsChange) {
  host_.Write("pod/cgroup.freeze", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  std::optional<Status> result;
  auto op = At("/pod").FreezeAsync(*loop_, kLong, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value()) << op.error().ToString();
  EXPECT_EQ(File("pod/cgroup.freeze"), "1");
  EXPECT_FALSE(loop_->RunUntil([&] { return result.has_value(); }, kShort));
  // The "kernel" freezes: rewritten in place, as cgroupfs updates the file.
  auto flip = loop_->AddTimer(milliseconds(10),
                              [&] { host_.Write("pod/cgroup.events", "populated 1\nfrozen 1\n"); });
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kLong));
  EXPECT_TRUE(result->ok()) << result->ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kLong);
}

TEST_F(ManagerV2Test, ThawAsyncEndsAtTheDeadline) {
  host_.Write("pod/cgroup.freeze", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 1\n");
  std::optional<Status> result;
  auto op = At("/pod").ThawAsync(*loop_, kShort, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value());
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kLong));
  EXPECT_EQ(result->code(), Code::kDeadlineExceeded);
  EXPECT_EQ(File("pod/cgroup.freeze"), "0");
}

TEST_F(ManagerV2Test, RemoveAsyncWaitsThenRemoves) {
  host_.Write("pod/cgroup.kill", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  host_.MakeCgroup("pod/child");
  std::optional<Status> result;
  auto op = At("/pod").RemoveAsync(*loop_, kLong, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value()) << op.error().ToString();
  EXPECT_EQ(File("pod/cgroup.kill"), "1");
  EXPECT_FALSE(loop_->RunUntil([&] { return result.has_value(); }, kShort));
  EXPECT_TRUE(Exists("pod/child"));
  // The "kernel" empties the cgroup; the fake's files go too, so that
  // rmdir can succeed on a plain directory.
  std::filesystem::remove(host_.cgroupfs() / "pod/cgroup.kill");
  std::filesystem::remove(host_.cgroupfs() / "pod/cgroup.events");
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kLong));
  EXPECT_TRUE(result->ok()) << result->ToString();
  EXPECT_FALSE(Exists("pod"));
}

TEST_F(ManagerV2Test, RemoveAsyncOfNothingCompletesLater) {
  std::optional<Status> result;
  auto op = At("/absent").RemoveAsync(*loop_, kLong, [&](Status s) { result = s; });
  ASSERT_TRUE(op.has_value());
  EXPECT_FALSE(result.has_value());  // never inside the call
  ASSERT_TRUE(loop_->RunUntil([&] { return result.has_value(); }, kLong));
  EXPECT_TRUE(result->ok());
}

TEST_F(ManagerV2Test, DroppingTheOpCancelsIt) {
  host_.Write("pod/cgroup.freeze", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 0\n");
  bool called = false;
  {
    auto op = At("/pod").FreezeAsync(*loop_, kShort, [&](Status) { called = true; });
    ASSERT_TRUE(op.has_value());
  }
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 1\n");
  EXPECT_FALSE(loop_->RunUntil([&] { return called; }, kShort * 2));
}

TEST_F(ManagerV2Test, TheOpMayBeDroppedInsideDone) {
  host_.Write("pod/cgroup.freeze", "");
  host_.Write("pod/cgroup.events", "populated 1\nfrozen 1\n");
  AsyncOp op;
  int calls = 0;
  auto started = At("/pod").FreezeAsync(*loop_, kLong, [&](Status) {
    ++calls;
    op.Reset();
  });
  ASSERT_TRUE(started.has_value());
  op = std::move(*started);
  ASSERT_TRUE(loop_->RunUntil([&] { return calls > 0; }, kLong));
  EXPECT_FALSE(op.active());
  EXPECT_FALSE(loop_->RunUntil([&] { return calls > 1; }, kShort));
}

}  // namespace
}  // namespace hull::cgroups
