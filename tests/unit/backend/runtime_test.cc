// The backend against the real runc and crun, on a real EventLoop and Reaper:
// containers from a busybox rootfs in a temporary bundle, driven through
// create, start, exec, ps, pause/resume, update, kill, delete. Needs root and
// busybox-static (/bin/busybox); skips otherwise. Leaves nothing behind: each
// test checks that the runtime root and the container cgroups are gone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/spawn.h"
#include "base/spawner.h"
#include "google/protobuf/any.pb.h"
#include "io/containerd/cgroups/v1/metrics.pb.h"
#include "io/containerd/cgroups/v2/metrics.pb.h"
#include "runtime/backend.h"
#include "runtime/oci_cli/run_blocking.h"
#include "shim/backend/make_backend.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace oci_cli = runtime::oci_cli;

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr auto kDeadline = 30s;
constexpr const char* kNs = "hulltest";

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    ::hull::Status s_ = (expr);                             \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

bool OnPath(const std::string& name) {
  for (const char* dir :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    if (::access((std::string(dir) + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool HybridHostWithV2Controllers() {
  struct statfs st;
  if (::statfs("/sys/fs/cgroup", &st) != 0 || st.f_type != TMPFS_MAGIC) return false;
  if (::statfs("/sys/fs/cgroup/unified", &st) != 0 || st.f_type != CGROUP2_SUPER_MAGIC) {
    return false;
  }
  std::string controllers = ReadFile("/sys/fs/cgroup/unified/cgroup.controllers");
  return controllers.find_first_not_of(" \n") != std::string::npos;
}

// crun 1.8 refuses a cgroup v1-hybrid host whose cgroup2 mount has
// controllers ("cgroups in hybrid mode not supported, drop all controllers
// from cgroupv2"); this test host has hugetlb there. For the crun tests the
// cgroup2 mount is hidden behind a tmpfs in a private mount namespace of this
// test process, so crun (started from here) sees a legacy host. What crun
// writes into that tmpfs disappears with the process.
bool cgroup2_hidden = false;

std::string HideCgroup2FromThisProcess() {
  static std::string error = []() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare: ") + strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return std::string("make / private: ") + strerror(errno);
    }
    if (::mount("hull-test", "/sys/fs/cgroup/unified", "tmpfs", 0, "size=1m") != 0) {
      return std::string("mount tmpfs: ") + strerror(errno);
    }
    cgroup2_hidden = true;
    return "";
  }();
  return error;
}

// One container: its bundle, cgroup and backend.
struct Container {
  std::string id;
  std::string bundle;
  std::string cgroup;  // linux.cgroupsPath
  std::unique_ptr<Backend> backend;
  std::string pid_file() const { return bundle + "/init.pid"; }
};

class RuntimeTest : public ::testing::TestWithParam<const char*> {
 protected:
  hull::testing::TempDir tmp_{"hull-backend"};  // dir_ lives in it
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "running containers needs root";
    binary_ = GetParam();
    if (!OnPath(binary_)) GTEST_SKIP() << binary_ << " is not installed";
    if (!OnPath("runc") && !OnPath("crun")) GTEST_SKIP() << "no runtime to write a spec";
    if (::access("/bin/busybox", X_OK) != 0) GTEST_SKIP() << "needs busybox-static";
    if (binary_ == "crun" && HybridHostWithV2Controllers()) {
      std::string error = HideCgroup2FromThisProcess();
      if (!error.empty()) GTEST_SKIP() << "cannot give crun a legacy cgroup view: " << error;
    }
    // As the shim is: orphaned container processes come to us, and the
    // Reaper collects them.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    loop_ = std::move(*EventLoop::Create());
    reaper_ = std::move(*Reaper::Create(*loop_));
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    options_ = RuntimeOptions{.binary_name = binary_, .root = dir_ + "/root"};
  }

  void TearDown() override {
    if (!loop_) return;
    for (auto& c : containers_) {
      ForceDelete(options_, kNs, c.bundle, c.id).IgnoreError();
      c.backend.reset();
    }
    // Every container process we saw must be gone and reaped.
    for (auto& [pid, exit] : exits_) {
      if (!exit.has_value()) ::kill(pid, SIGKILL);
    }
    EXPECT_TRUE(loop_->RunUntil(
        [&] {
          return std::all_of(exits_.begin(), exits_.end(),
                             [](const auto& e) { return e.second.has_value(); });
        },
        kDeadline));
    // Nothing left: no container state, no cgroups.
    std::error_code ec;
    fs::path state = fs::path(options_.root) / kNs;
    if (fs::exists(state, ec)) {
      EXPECT_TRUE(fs::is_empty(state, ec)) << state;
    }
    for (auto& c : containers_) {
      for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
        // crun's directories in the tmpfs hiding cgroup2 are not cgroups.
        if (cgroup2_hidden && h.path() == "/sys/fs/cgroup/unified") continue;
        EXPECT_FALSE(fs::exists(h.path() / c.cgroup.substr(1), ec)) << h.path() << c.cgroup;
      }
    }
    containers_.clear();
    fs::remove_all(dir_, ec);
    reaper_.reset();
    loop_.reset();
  }

  // A container running `args` in its own bundle; config.json comes from
  // `runc spec` (or `crun spec`), adjusted.
  Container& NewContainer(const std::string& name, const std::vector<std::string>& args,
                          const std::function<void(json&)>& adjust = nullptr) {
    Container c;
    c.id = binary_ + "-" + name + "-" + std::to_string(::getpid());
    c.bundle = dir_ + "/" + c.id;
    c.cgroup = "/hull-backend-test-" + c.id;
    fs::create_directories(c.bundle + "/rootfs/bin");
    fs::copy_file("/bin/busybox", c.bundle + "/rootfs/bin/busybox");
    for (const char* applet : {"sh", "sleep", "echo", "cat"}) {
      fs::create_symlink("busybox", c.bundle + "/rootfs/bin/" + applet);
    }
    auto spec = OnPath("runc")
                    ? oci_cli::RunBlocking({"runc", "spec", "--bundle", c.bundle}, 10s)
                    : oci_cli::RunBlocking({"sh", "-c", "cd '" + c.bundle + "' && crun spec"}, 10s);
    EXPECT_TRUE(spec.has_value() && spec->ok());
    json config = json::parse(ReadFile(c.bundle + "/config.json"));
    config["process"]["terminal"] = false;
    config["process"]["args"] = args;
    config["linux"]["cgroupsPath"] = c.cgroup;
    if (adjust) adjust(config);
    std::ofstream(c.bundle + "/config.json") << config.dump(2);
    process_template_ = config["process"];

    auto backend = MakeBackend(*loop_, *reaper_, options_, kNs);
    EXPECT_TRUE(backend.has_value()) << backend.error().ToString();
    c.backend = std::move(*backend);
    containers_.push_back(std::move(c));
    return containers_.back();
  }

  Status Await(const std::function<void(Done)>& call) {
    std::optional<Status> result;
    call([&](Status s) { result = std::move(s); });
    if (!loop_->RunUntil([&] { return result.has_value(); }, kDeadline)) {
      return DeadlineExceededError("no answer from the backend");
    }
    return *result;
  }

  Result<std::vector<pid_t>> AwaitPs(Container& c) {
    std::optional<Result<std::vector<pid_t>>> result;
    c.backend->Ps(c.id, [&](Result<std::vector<pid_t>> r) { result = std::move(r); });
    if (!loop_->RunUntil([&] { return result.has_value(); }, kDeadline)) {
      return DeadlineExceededError("no answer from ps");
    }
    return *result;
  }

  pid_t ReadPid(const std::string& path) {
    std::string text = ReadFile(path);
    return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
  }

  // Collects `pid`'s exit through the Reaper.
  void WatchExit(pid_t pid) {
    exits_[pid];
    reaper_->Watch(pid,
                   [this, pid](int wait_status) { exits_[pid] = ExitStatusFromWait(wait_status); });
  }
  std::optional<int> AwaitExit(pid_t pid) {
    loop_->RunUntil([&] { return exits_[pid].has_value(); }, kDeadline);
    return exits_[pid];
  }

  // Reads `fd` on the loop until `want` has arrived (or EOF / deadline).
  std::string ReadUntil(int fd, const std::string& want) {
    std::string got;
    bool eof = false;
    EXPECT_TRUE(SetNonBlocking(fd).ok());
    EventHandle watch = loop_->WatchFd(fd, kReadable, [&](uint32_t) {
      char buf[256];
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      if (n == 0) eof = true;
    });
    loop_->RunUntil([&] { return eof || got.find(want) != std::string::npos; }, kDeadline);
    return got;
  }

  // A cgroup file of `c`: <v1 controller>/<path>/<v1 file> on v1 hosts,
  // <path>/<v2 file> on a unified host.
  std::string CgroupValue(const Container& c, const char* controller, const char* v1_file,
                          const char* v2_file) {
    fs::path v1 = fs::path("/sys/fs/cgroup") / controller / c.cgroup.substr(1) / v1_file;
    std::error_code ec;
    std::string value = fs::exists(v1, ec)
                            ? ReadFile(v1)
                            : ReadFile(fs::path("/sys/fs/cgroup") / c.cgroup.substr(1) / v2_file);
    while (!value.empty() && value.back() == '\n') value.pop_back();
    return value;
  }

  std::string WriteProcess(const Container& c, const std::string& name,
                           const std::vector<std::string>& args) {
    json process = process_template_;
    process["args"] = args;
    std::string path = c.bundle + "/" + name + ".json";
    std::ofstream(path) << process.dump();
    return path;
  }

  // Creates and starts `c` with /dev/null stdio; returns the init's pid.
  pid_t CreateAndStart(Container& c) {
    CreateRequest req{.id = c.id, .bundle = c.bundle, .pid_file = c.pid_file()};
    Status created = Await([&](Done d) { c.backend->Create(req, d); });
    EXPECT_TRUE(created.ok()) << created.ToString();
    pid_t pid = ReadPid(c.pid_file());
    if (pid > 0) WatchExit(pid);
    Status started = Await([&](Done d) { c.backend->Start(c.id, d); });
    EXPECT_TRUE(started.ok()) << started.ToString();
    return pid;
  }

  std::string binary_;
  std::string dir_;
  RuntimeOptions options_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Reaper> reaper_;
  std::deque<Container> containers_;
  std::map<pid_t, std::optional<int>> exits_;
  json process_template_;
};

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimeTest, ::testing::Values("runc", "crun"),
                         [](const auto& info) { return std::string(info.param); });

TEST_P(RuntimeTest, Lifecycle) {
  Container& c = NewContainer("life", {"sh", "-c", "echo hello; exec sleep 1000"});
  auto out = MakePipe();
  ASSERT_TRUE(out.has_value());

  // create: the container gets our pipe as stdout, and `done` comes when the
  // runtime exits although the container keeps that pipe open.
  CreateRequest req{.id = c.id,
                    .bundle = c.bundle,
                    .pid_file = c.pid_file(),
                    .stdio = {.stdout_fd = out->write.get()}};
  ASSERT_OK(Await([&](Done d) { c.backend->Create(req, d); }));
  out->write.reset();
  pid_t init = ReadPid(c.pid_file());
  ASSERT_GT(init, 0);
  EXPECT_EQ(::kill(init, 0), 0);
  WatchExit(init);

  ASSERT_OK(Await([&](Done d) { c.backend->Start(c.id, d); }));
  EXPECT_EQ(ReadUntil(out->read.get(), "hello\n"), "hello\n");

  // exec
  ExecRequest exec{.id = c.id,
                   .exec_id = "e1",
                   .process_json = WriteProcess(c, "e1", {"sleep", "1000"}),
                   .pid_file = c.bundle + "/e1.pid"};
  ASSERT_OK(Await([&](Done d) { c.backend->Exec(exec, d); }));
  pid_t exec_pid = ReadPid(exec.pid_file);
  ASSERT_GT(exec_pid, 0);
  EXPECT_EQ(::kill(exec_pid, 0), 0);
  WatchExit(exec_pid);

  // ps
  auto pids = AwaitPs(c);
  ASSERT_TRUE(pids.has_value()) << pids.error().ToString();
  EXPECT_NE(std::find(pids->begin(), pids->end(), init), pids->end());
  EXPECT_NE(std::find(pids->begin(), pids->end(), exec_pid), pids->end());

  // pause / resume
  ASSERT_OK(Await([&](Done d) { c.backend->Pause(c.id, d); }));
  EXPECT_EQ(CgroupValue(c, "freezer", "freezer.state", "cgroup.freeze"),
            fs::exists("/sys/fs/cgroup/freezer") ? "FROZEN" : "1");
  ASSERT_OK(Await([&](Done d) { c.backend->Resume(c.id, d); }));
  EXPECT_EQ(CgroupValue(c, "freezer", "freezer.state", "cgroup.freeze"),
            fs::exists("/sys/fs/cgroup/freezer") ? "THAWED" : "0");

  // update
  ASSERT_OK(Await([&](Done d) { c.backend->Update(c.id, R"({"pids":{"limit":42}})", d); }));
  EXPECT_EQ(CgroupValue(c, "pids", "pids.max", "pids.max"), "42");

  // kill: the init dies, and with it the pid namespace.
  ASSERT_OK(Await([&](Done d) { c.backend->Kill(c.id, SIGKILL, false, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
  EXPECT_EQ(AwaitExit(exec_pid), 128 + SIGKILL);
  Status again = Await([&](Done d) { c.backend->Kill(c.id, SIGKILL, false, d); });
  EXPECT_EQ(again.code(), Code::kNotFound) << again.ToString();

  // delete, twice: gone is gone.
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
  EXPECT_FALSE(fs::exists(fs::path(options_.root) / kNs / c.id));
}

// A terminal exec: the runtime sends the pty master to the console socket;
// its own stdio is not the container's, and `done` comes on its exit.
TEST_P(RuntimeTest, TerminalExecSendsThePtyToTheConsoleSocket) {
  Container& c = NewContainer("tty", {"sleep", "1000"});
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);

  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ASSERT_TRUE(listener.valid());
  sockaddr_un addr{.sun_family = AF_UNIX};
  const std::string socket_path = dir_ + "/console.sock";
  ASSERT_LT(socket_path.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);

  std::string process = WriteProcess(c, "tty", {"sh", "-c", "echo tty-ok; exec sleep 1000"});
  json p = json::parse(ReadFile(process));
  p["terminal"] = true;
  std::ofstream(process) << p.dump();
  ExecRequest exec{.id = c.id,
                   .exec_id = "tty",
                   .process_json = process,
                   .pid_file = c.bundle + "/tty.pid",
                   .stdio = {.console_socket = socket_path}};
  ASSERT_OK(Await([&](Done d) { c.backend->Exec(exec, d); }));
  pid_t exec_pid = ReadPid(exec.pid_file);
  ASSERT_GT(exec_pid, 0);
  WatchExit(exec_pid);

  // The runtime connected, sent the master and left; the connection waits.
  UniqueFd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(conn.valid()) << strerror(errno);
  char byte[256];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{.iov_base = byte, .iov_len = sizeof byte};
  msghdr msg{
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
  ASSERT_GT(::recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC), 0);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(cmsg, nullptr);
  ASSERT_EQ(cmsg->cmsg_type, SCM_RIGHTS);
  int master_fd;
  std::memcpy(&master_fd, CMSG_DATA(cmsg), sizeof master_fd);
  UniqueFd master(master_fd);
  EXPECT_NE(ReadUntil(master.get(), "tty-ok").find("tty-ok"), std::string::npos);

  ASSERT_OK(Await([&](Done d) { c.backend->Kill(c.id, SIGKILL, false, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
  EXPECT_TRUE(AwaitExit(exec_pid).has_value());
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
}

TEST_P(RuntimeTest, StateErrorsAreFailedPrecondition) {
  Container& c = NewContainer("state", {"sleep", "1000"});
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);
  Status start_again = Await([&](Done d) { c.backend->Start(c.id, d); });
  EXPECT_EQ(start_again.code(), Code::kFailedPrecondition) << start_again.ToString();
  Status delete_running = Await([&](Done d) { c.backend->Delete(c.id, false, d); });
  EXPECT_EQ(delete_running.code(), Code::kFailedPrecondition) << delete_running.ToString();
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, true, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
}

TEST_P(RuntimeTest, MissingContainerIsNotFound) {
  Container& c = NewContainer("missing", {"sleep", "1000"});
  for (auto call : std::vector<std::function<void(Done)>>{
           [&](Done d) { c.backend->Start(c.id, d); },
           [&](Done d) { c.backend->Kill(c.id, SIGTERM, false, d); },
           [&](Done d) { c.backend->Pause(c.id, d); },
           [&](Done d) { c.backend->Update(c.id, "{}", d); },
       }) {
    Status s = Await(call);
    EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  }
  auto pids = AwaitPs(c);
  ASSERT_FALSE(pids.has_value());
  EXPECT_EQ(pids.error().code(), Code::kNotFound) << pids.error().ToString();
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
}

TEST_P(RuntimeTest, CreateFailureCarriesTheRuntimeMessage) {
  Container& c = NewContainer("badargs", {"/bin/nonexistent-prog"});
  CreateRequest req{.id = c.id, .bundle = c.bundle, .pid_file = c.pid_file()};
  Status s = Await([&](Done d) { c.backend->Create(req, d); });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.code(), Code::kDeadlineExceeded);
  EXPECT_NE(s.message().find("nonexistent-prog"), std::string::npos) << s.ToString();
  EXPECT_EQ(s.message().rfind(binary_ + " create " + c.id + ": ", 0), 0u) << s.ToString();
}

TEST_P(RuntimeTest, DeleteOfACreatedContainerEndsItsInit) {
  Container& c = NewContainer("created", {"sleep", "1000"});
  CreateRequest req{.id = c.id, .bundle = c.bundle, .pid_file = c.pid_file()};
  ASSERT_OK(Await([&](Done d) { c.backend->Create(req, d); }));
  pid_t init = ReadPid(c.pid_file());
  ASSERT_GT(init, 0);
  WatchExit(init);
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
  EXPECT_TRUE(AwaitExit(init).has_value());
}

TEST_P(RuntimeTest, CheckpointWithoutCriuIsFailedPrecondition) {
  Container& c = NewContainer("ckpt", {"sleep", "1000"});
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);
  CheckpointRequest req{
      .id = c.id, .image_path = dir_ + "/ckpt-image", .work_path = dir_ + "/ckpt-work"};
  Status s = Await([&](Done d) { c.backend->Checkpoint(req, d); });
  // Where criu works and the runtime supports it, the dump succeeds and the
  // container keeps running (--leave-running); here it must say why not.
  if (!s.ok()) {
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  }
  EXPECT_EQ(::kill(init, 0), 0);
  ASSERT_OK(Await([&](Done d) { c.backend->Kill(c.id, SIGKILL, false, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, false, d); }));
}

TEST_P(RuntimeTest, CreateWithCheckpointRestoresAtStart) {
  Container& c = NewContainer("restore", {"sleep", "1000"});
  auto out = MakePipe();
  ASSERT_TRUE(out.has_value());
  CreateRequest req{.id = c.id,
                    .bundle = c.bundle,
                    .pid_file = c.pid_file(),
                    .stdio = {.stdout_fd = out->write.get()},
                    .checkpoint = dir_ + "/no-such-image"};
  ASSERT_OK(Await([&](Done d) { c.backend->Create(req, d); }));
  // Nothing ran yet; the backend holds its own copy of the stdio.
  EXPECT_FALSE(fs::exists(c.pid_file()));
  out->write.reset();
  Status s = Await([&](Done d) { c.backend->Start(c.id, d); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(binary_ + " restore " + c.id + ": ", 0), 0u) << s.ToString();
  // The restore is over: the backend let go of the stdout copy.
  EXPECT_EQ(ReadUntil(out->read.get(), "never"), "");
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, true, d); }));
}

TEST_P(RuntimeTest, ForceDeleteRemovesARunningContainer) {
  Container& c = NewContainer("force", {"sleep", "1000"});
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);
  ASSERT_OK(ForceDelete(options_, kNs, c.bundle, c.id));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
  EXPECT_FALSE(fs::exists(fs::path(options_.root) / kNs / c.id));
  ASSERT_OK(ForceDelete(options_, kNs, c.bundle, c.id));
  ASSERT_OK(ForceDelete(options_, kNs, dir_ + "/no-bundle", c.id));
}

TEST_P(RuntimeTest, StatsComeFromTheCgroup) {
  Container& c = NewContainer("stats", {"sleep", "1000"});
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);
  std::optional<Result<google::protobuf::Any>> stats;
  c.backend->Stats(c.id, init, [&](Result<google::protobuf::Any> r) { stats = std::move(r); });
  ASSERT_TRUE(loop_->RunUntil([&] { return stats.has_value(); }, kDeadline));
  ASSERT_TRUE(stats->has_value()) << stats->error().ToString();
  const google::protobuf::Any& any = **stats;
  uint64_t pids = 0;
  if (any.type_url() == "io.containerd.cgroups.v1.Metrics") {
    io::containerd::cgroups::v1::Metrics m;
    ASSERT_TRUE(m.ParseFromString(any.value()));
    pids = m.pids().current();
    EXPECT_GT(m.memory().usage().usage(), 0u);
  } else {
    ASSERT_EQ(any.type_url(), "io.containerd.cgroups.v2.Metrics");
    io::containerd::cgroups::v2::Metrics m;
    ASSERT_TRUE(m.ParseFromString(any.value()));
    pids = m.pids().current();
  }
  // The init; right after `start` runc's Go threads may still be counted.
  EXPECT_GE(pids, 1u);
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, true, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
}

TEST_P(RuntimeTest, OomKillIsReported) {
  Container& c = NewContainer("oom", {"sleep", "1000"}, [](json& config) {
    config["linux"]["resources"]["memory"]["limit"] = 32 << 20;
  });
  pid_t init = CreateAndStart(c);
  ASSERT_GT(init, 0);
  int ooms = 0;
  auto watch = c.backend->WatchOom(c.id, init, [&] { ++ooms; });
  ASSERT_TRUE(watch.has_value()) << watch.error().ToString();
  // A shell that doubles a string until the cgroup's limit kills it.
  ExecRequest hog{.id = c.id,
                  .exec_id = "hog",
                  .process_json = WriteProcess(c, "hog",
                                               {"sh", "-c",
                                                "a=0123456789abcdef; "
                                                "while :; do a=$a$a; done"}),
                  .pid_file = c.bundle + "/hog.pid"};
  ASSERT_OK(Await([&](Done d) { c.backend->Exec(hog, d); }));
  pid_t hog_pid = ReadPid(hog.pid_file);
  ASSERT_GT(hog_pid, 0);
  WatchExit(hog_pid);
  EXPECT_EQ(AwaitExit(hog_pid), 128 + SIGKILL);
  EXPECT_TRUE(loop_->RunUntil([&] { return ooms > 0; }, kDeadline));
  watch->Reset();
  ASSERT_OK(Await([&](Done d) { c.backend->Delete(c.id, true, d); }));
  EXPECT_EQ(AwaitExit(init), 128 + SIGKILL);
}

TEST(MakeBackendTest, UnknownBinaryIsNamed) {
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  auto reaper = Reaper::Create(**loop);
  ASSERT_TRUE(reaper.has_value());
  for (const char* binary : {"hull-no-such-runtime", "/nonexistent/bin/runc"}) {
    auto backend = MakeBackend(**loop, **reaper, RuntimeOptions{.binary_name = binary}, "default");
    ASSERT_FALSE(backend.has_value());
    EXPECT_EQ(backend.error().code(), Code::kNotFound);
    EXPECT_NE(backend.error().message().find(binary), std::string::npos)
        << backend.error().ToString();
  }
  auto empty = MakeBackend(**loop, **reaper, RuntimeOptions{.binary_name = ""}, "default");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), Code::kInvalidArgument);
}

// A confined server (its Reaper starts children through a spawner) makes
// the vm backend as an unconfined one does: its network, share and QEMU go
// through the spawner (docs/security.md, "VM pods confined").
TEST(MakeBackendTest, AConfinedServerMakesTheVmBackend) {
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.has_value());
  auto spawner = SpawnerClient::Start({});
  ASSERT_TRUE(spawner.has_value());
  auto confined = Reaper::CreateWithSpawner(**loop, **spawner, [](const Status&) {});
  ASSERT_TRUE(confined.has_value());
  auto backend = MakeBackend(**loop, **confined, RuntimeOptions{.binary_name = "vm"}, "default");
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  EXPECT_EQ((*backend)->name(), "vm");
  backend->reset();
  confined->reset();
  auto reaper = Reaper::Create(**loop);
  ASSERT_TRUE(reaper.has_value());
  EXPECT_TRUE(
      MakeBackend(**loop, **reaper, RuntimeOptions{.binary_name = "vm"}, "default").has_value());
  pid_t pid = (*spawner)->pid();
  spawner->reset();  // EOF: the spawner exits
  EXPECT_EQ(::waitpid(pid, nullptr, 0), pid);
}

// RunBlocking through a spawner (a confined server at its end, when its loop
// no longer runs): the spawner starts the call, its output is captured, and
// its exit comes from the spawner's exits channel.
TEST(RunBlockingTest, ThroughASpawnerTheExitComesFromIt) {
  auto spawner = SpawnerClient::Start({});
  ASSERT_TRUE(spawner.has_value()) << spawner.error().ToString();
  Result<CommandResult> r = oci_cli::RunBlocking(
      {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10s, spawner->get());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_status, 3);
  // Past its deadline the call is killed, and says so.
  r = oci_cli::RunBlocking({"/bin/sleep", "30"}, 200ms, spawner->get());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kDeadlineExceeded);
}

}  // namespace
}  // namespace hull::shim
