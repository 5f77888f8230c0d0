// Soak: N cycles of create/start (ctr run -d), exec, kill, delete through a
// private containerd, counting every 100 cycles what a leak would grow:
// processes, descriptors, mounts, cgroups, shim sockets and RSS. The test
// (100 cycles, in tools/test) fails if anything but RSS is above its count
// after the warm-up cycle. bench/soak runs it long, for hull and for the Go
// runc shim, and keeps the table (docs/benchmarks.md).
//
// Environment: HULL_SOAK_CYCLES (default 100), HULL_SOAK_RUNTIME (default
// io.containerd.hull.v2; io.containerd.runc.v2 is the Go shim),
// HULL_SOAK_REPORT (a file the per-100 rows are appended to, as markdown).
#include <cstdlib>

#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

struct Counts {
  size_t processes = 0;  // containerd, its shims and everything under them
  size_t fds = 0;        // open in those processes
  size_t mounts = 0;     // under the private containerd's directory
  size_t cgroups = 0;    // left by this test's containers
  size_t sockets = 0;    // shim sockets of deleted containers still on disk
  long rss_kib = 0;      // containerd + shims
};

long RssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

class SoakTest : public HullCtrTest {
 protected:
  std::string runtime_ = Env("HULL_SOAK_RUNTIME", kHull);
  std::string prefix_ = "soak" + std::to_string(::getpid()) + "-";
  std::vector<std::string> shim_sockets_;
  int lost_output_ = 0;  // execs that succeeded but whose output never came

  std::vector<pid_t> Tree() const {
    std::vector<pid_t> pids = ProcessesMatching(containerd_->dir());
    pids.push_back(containerd_->pid());
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    return pids;
  }

  Counts Count() const {
    Counts c;
    std::vector<pid_t> tree = Tree();
    c.processes = tree.size();
    for (pid_t p : tree) {
      c.fds += OpenFds(p).size();
      c.rss_kib += RssKib(p);
    }
    c.mounts = MountsUnder(containerd_->dir()).size();
    std::string cgroup_dir =
        CgroupV2() ? "/sys/fs/cgroup/default" : "/sys/fs/cgroup/memory/default";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cgroup_dir, ec)) {
      c.cgroups += entry.path().filename().string().starts_with(prefix_);
    }
    for (const std::string& s : shim_sockets_) c.sockets += fs::exists(s);
    return c;
  }

  // One cycle; false (with a failure recorded) if a step failed.
  bool Cycle(int i) {
    std::string id = prefix_ + std::to_string(i);
    std::vector<std::string> run = {"run", "--runtime", runtime_};
    if (runtime_ == kHull) run.insert(run.end(), {"--runtime-config-path", config_});
    run.insert(run.end(), {"-d", kBusybox, id, "sleep", "1000"});
    CommandResult r = containerd_->Ctr(run);
    if (!r.ok()) {
      ADD_FAILURE() << "cycle " << i << ": run: " << r.Describe();
      return false;
    }
    std::string address = ReadAddress(id);
    if (address.starts_with("unix://")) shim_sockets_.push_back(address.substr(7));
    r = Ctr({"task", "exec", "--exec-id", "e", id, "echo", "soak"});
    if (!r.ok()) {
      ADD_FAILURE() << "cycle " << i << ": exec: " << r.Describe();
      return false;
    }
    // Counted, not fatal here, so that the Go shim's bench run goes on (it
    // loses a short exec's output now and then); the test fails on it below.
    if (r.out != "soak\n") ++lost_output_;
    if (!Ctr({"task", "kill", "-s", "SIGKILL", id}).ok() || !WaitForStatus(id, "STOPPED")) {
      ADD_FAILURE() << "cycle " << i << ": kill";
      return false;
    }
    if (!Ctr({"task", "rm", id}).ok() || !Ctr({"container", "rm", id}).ok()) {
      ADD_FAILURE() << "cycle " << i << ": delete";
      return false;
    }
    return true;
  }

  std::string ReadAddress(const std::string& id) const {
    std::ifstream in(Bundle(id) + "/address");
    std::string address;
    std::getline(in, address);
    return address;
  }
};

std::string Row(int cycle, const Counts& c, int lost_output) {
  return "| " + std::to_string(cycle) + " | " + std::to_string(c.processes) + " | " +
         std::to_string(c.fds) + " | " + std::to_string(c.mounts) + " | " +
         std::to_string(c.cgroups) + " | " + std::to_string(c.sockets) + " | " +
         std::to_string(c.rss_kib) + " | " + std::to_string(lost_output) + " |";
}

TEST_P(SoakTest, CyclesLeakNothing) {
  const int cycles = std::atoi(Env("HULL_SOAK_CYCLES", "100").c_str());
  ASSERT_GT(cycles, 0);
  ASSERT_TRUE(Cycle(0));  // warm-up: containerd opens some descriptors lazily
  // Shims exit on their own after the delete: settle before counting.
  ASSERT_TRUE(WaitUntil([&] { return Shims().empty(); }, 20s));
  Counts base = Count();
  std::string report = "\n" + runtime_ + ", " + std::to_string(cycles) +
                       " cycles\n\n| cycle | processes | fds | mounts | cgroups | sockets | "
                       "RSS KiB | exec output lost |\n|---|---|---|---|---|---|---|---|\n" +
                       Row(0, base, lost_output_) + "\n";
  std::cout << report;
  Counts last = base;
  for (int i = 1; i <= cycles; ++i) {
    ASSERT_TRUE(Cycle(i));
    if (i % 100 == 0 || i == cycles) {
      WaitUntil([&] { return Shims().empty(); }, 20s);
      last = Count();
      std::string row = Row(i, last, lost_output_);
      std::cout << row << std::endl;
      report += row + "\n";
    }
  }
  if (std::string path = Env("HULL_SOAK_REPORT", ""); !path.empty()) {
    std::ofstream(path, std::ios::app) << report;
  }
  EXPECT_EQ(last.processes, base.processes);
  EXPECT_LE(last.fds, base.fds + 2);  // containerd's own lazily opened ones
  EXPECT_EQ(last.mounts, base.mounts);
  EXPECT_EQ(last.cgroups, 0u);
  EXPECT_EQ(last.sockets, 0u);
  EXPECT_EQ(lost_output_, 0);
}

INSTANTIATE_TEST_SUITE_P(Runc, SoakTest, ::testing::Values("runc"));

}  // namespace
}  // namespace hull::itest
