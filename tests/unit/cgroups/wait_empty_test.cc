// Manager::WaitEmptyAsync and ProcessesDir against fake trees: which
// directory a v1, hybrid or unified host is watched in, how the wait ends
// (populated 0 on v2; no cgroup.procs listing a process in the subtree on
// v1), at the deadline, and for a cgroup already gone. The test plays the
// kernel: it rewrites the files a kill would change.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "base/event_loop.h"
#include "cgroups/cgroups.h"
#include "tests/unit/cgroups/fake_host.h"

namespace hull::cgroups {
namespace {

using std::chrono::milliseconds;
using testing::FakeHost;

constexpr milliseconds kShort{150};
constexpr milliseconds kLong{5000};

class WaitEmptyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }

  Manager At(std::string_view path) {
    auto m = Manager::ForPath(path, host_.roots());
    EXPECT_TRUE(m.has_value()) << m.error().ToString();
    return *m;
  }
  // Starts the wait; the result lands in result_.
  AsyncOp Wait(const Manager& m, milliseconds timeout) {
    auto op = m.WaitEmptyAsync(*loop_, timeout, [this](Status s) { result_ = std::move(s); });
    EXPECT_TRUE(op.has_value()) << op.error().ToString();
    return op ? std::move(*op) : AsyncOp();
  }
  bool Finished(milliseconds within) {
    return loop_->RunUntil([&] { return result_.has_value(); }, within);
  }

  FakeHost host_;
  std::unique_ptr<EventLoop> loop_;
  std::optional<Status> result_;
};

TEST_F(WaitEmptyTest, UnifiedEndsWhenPopulatedTurnsZero) {
  host_.AddUnified();
  host_.Write("pod/ctr/cgroup.events", "populated 1\nfrozen 0\n");
  host_.Write("pod/ctr/cgroup.procs", "");  // the processes are in a child
  host_.Write("pod/ctr/sub/cgroup.procs", "41\n");
  AsyncOp op = Wait(At("/pod/ctr"), kLong);
  EXPECT_FALSE(Finished(kShort));
  // The "kernel" empties it: the file is rewritten in place (inotify fires).
  auto flip = loop_->AddTimer(
      milliseconds(10), [&] { host_.Write("pod/ctr/cgroup.events", "populated 0\nfrozen 0\n"); });
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Finished(kLong));
  EXPECT_TRUE(result_->ok()) << result_->ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kLong);
}

TEST_F(WaitEmptyTest, UnifiedAlreadyEmptyEndsOnALaterTurn) {
  host_.AddUnified();
  host_.Write("ctr/cgroup.events", "populated 0\nfrozen 0\n");
  AsyncOp op = Wait(At("/ctr"), kLong);
  EXPECT_FALSE(result_.has_value());  // never inside the call
  ASSERT_TRUE(Finished(kLong));
  EXPECT_TRUE(result_->ok());
}

TEST_F(WaitEmptyTest, EndsAtTheDeadlineWhileProcessesRemain) {
  host_.AddUnified();
  host_.Write("ctr/cgroup.events", "populated 1\nfrozen 0\n");
  AsyncOp op = Wait(At("/ctr"), kShort);
  ASSERT_TRUE(Finished(kLong));
  EXPECT_EQ(result_->code(), Code::kDeadlineExceeded);
}

TEST_F(WaitEmptyTest, ACgroupThatIsGoneIsEmpty) {
  host_.AddUnified();
  AsyncOp op = Wait(At("/never/was"), kLong);
  EXPECT_FALSE(result_.has_value());
  ASSERT_TRUE(Finished(kLong));
  EXPECT_TRUE(result_->ok());
}

TEST_F(WaitEmptyTest, V1ReadsTheSubtreesProcsInThePidsHierarchy) {
  host_.AddV1("memory", "memory");
  host_.AddV1("pids", "pids");
  host_.AddUnified("unified");  // hybrid: the cgroup2 tree is not looked at
  host_.Write("unified/ctr/cgroup.events", "populated 0\n");
  host_.Write("memory/ctr/cgroup.procs", "");
  host_.Write("pids/ctr/cgroup.procs", "");
  host_.Write("pids/ctr/nested/cgroup.procs", "7\n8\n");
  Manager m = At("/ctr");
  ASSERT_EQ(m.mode(), Mode::kHybrid);
  auto dir = m.ProcessesDir();
  ASSERT_TRUE(dir.has_value()) << dir.error().ToString();
  EXPECT_EQ(*dir, host_.cgroupfs() / "pids/ctr");

  AsyncOp op = Wait(m, kLong);
  EXPECT_FALSE(Finished(kShort)) << "two processes are left in a child cgroup";
  host_.Write("pids/ctr/nested/cgroup.procs", "8\n");
  EXPECT_FALSE(Finished(kShort));
  host_.Write("pids/ctr/nested/cgroup.procs", "");
  ASSERT_TRUE(Finished(kLong));
  EXPECT_TRUE(result_->ok()) << result_->ToString();
}

TEST_F(WaitEmptyTest, V1WithoutPidsUsesTheNextControllerNeverANameHierarchy) {
  host_.AddV1("systemd", "xattr,name=systemd");
  host_.AddV1("cpu,cpuacct", "cpu,cpuacct");
  host_.AddV1("blkio", "blkio");
  EXPECT_EQ(At("/ctr").ProcessesDir().value_or(""), host_.cgroupfs() / "cpu,cpuacct/ctr");

  FakeHost only_names;
  only_names.AddV1("systemd", "xattr,name=systemd");
  auto m = Manager::ForPath("/ctr", only_names.roots());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->ProcessesDir().error().code(), Code::kNotFound);
  EXPECT_EQ(m->WaitEmptyAsync(*loop_, kShort, [](Status) {}).error().code(), Code::kNotFound);
}

TEST_F(WaitEmptyTest, UnifiedWatchesTheCgroup2Directory) {
  host_.AddUnified();
  EXPECT_EQ(At("/a/b").ProcessesDir().value_or(""), host_.cgroupfs() / "a/b");
}

TEST_F(WaitEmptyTest, DroppingTheOpCancelsIt) {
  host_.AddUnified();
  host_.Write("ctr/cgroup.events", "populated 1\n");
  { AsyncOp op = Wait(At("/ctr"), kLong); }
  host_.Write("ctr/cgroup.events", "populated 0\n");
  EXPECT_FALSE(Finished(kShort * 2));
}

}  // namespace
}  // namespace hull::cgroups
