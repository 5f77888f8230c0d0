// hull's shim driven directly over its ttrpc socket, the way containerd
// drives it, with real runc underneath. containerd is replaced only where it
// is the peer: a recording Events server on TTRPC_ADDRESS. This checks what
// ctr cannot show: the exact status code of every wrong call, and the exact
// order of the events the shim forwards.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "containerd/events/task.pb.h"
#include "containerd/services/events/ttrpc/v1/events.pb.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/empty.pb.h"
#include "tests/integration/harness/harness.h"
#include "ttrpc/client.h"
#include "ttrpc/server.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
namespace tv2 = containerd::task::v2;
using namespace std::chrono_literals;
using google::protobuf::Empty;

constexpr char kTask[] = "containerd.task.v2.Task";

class ShimDirectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    if (HullShimDir().empty()) GTEST_SKIP() << "containerd-shim-hull-v2 is not built";
    char tmpl[] = "/tmp/hull-direct-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_ = std::move(*EventLoop::Create());
    // The recording events server, where containerd's ttrpc socket would be.
    events_server_ = std::make_unique<ttrpc::Server>(*loop_);
    events_server_->RegisterUnary<containerd::services::events::ttrpc::v1::ForwardRequest, Empty>(
        "containerd.services.events.ttrpc.v1.Events", "Forward",
        [this](const ttrpc::CallContext&, containerd::services::events::ttrpc::v1::ForwardRequest r,
               ttrpc::TypedResponder<Empty> out) {
          events_.push_back(r.envelope());
          out.Reply(Empty());
        });
    ASSERT_TRUE(events_server_->Listen(dir_ + "/containerd.sock.ttrpc").ok());
  }

  void TearDown() override {
    if (client_) client_.reset();
    // Kill whatever the shim left (a test that failed midway) and clean up.
    for (const auto& id : ids_) {
      RunCommand({"runc", "--root", "/run/containerd/runc/hulldirect", "delete", "--force", id});
    }
    for (pid_t p : ProcessesMatching(dir_)) ::kill(p, SIGKILL);
    if (!address_.empty()) ::unlink(address_.substr(7).c_str());
    std::error_code ec;
    fs::remove("/run/containerd/runc/hulldirect", ec);  // only if empty
    events_server_.reset();
    loop_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A bundle whose rootfs is busybox and whose process runs `args`.
  std::string MakeBundle(const std::string& id, const std::vector<std::string>& args) {
    std::string bundle = dir_ + "/" + id;
    fs::create_directories(bundle + "/rootfs/bin");
    fs::copy_file("/bin/busybox", bundle + "/rootfs/bin/busybox");
    for (const char* applet : {"sh", "sleep", "true", "echo", "head"}) {
      fs::create_symlink("busybox", bundle + "/rootfs/bin/" + applet);
    }
    CommandResult spec = RunCommand({"sh", "-c", "cd " + bundle + " && runc spec"});
    EXPECT_TRUE(spec.ok()) << spec.Describe();
    std::ifstream in(bundle + "/config.json");
    std::string json((std::istreambuf_iterator<char>(in)), {});
    std::string quoted;
    for (const auto& a : args) quoted += (quoted.empty() ? "\"" : ", \"") + a + "\"";
    auto pos = json.find("\"sh\"");
    json.replace(pos, 4, quoted);
    json.replace(json.find("\"terminal\": true"), 16, "\"terminal\": false");
    std::ofstream(bundle + "/config.json") << json;
    ::mkfifo((bundle + "/log").c_str(), 0700);
    ids_.push_back(id);
    return bundle;
  }

  // Runs the shim's `start` in `bundle` the way containerd does and connects.
  void StartShim(const std::string& id, const std::string& bundle,
                 const std::string& hull_config = "") {
    // containerd keeps the log FIFO open for reading; so do we.
    log_reader_.reset(::open((bundle + "/log").c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    std::string shim = HullShimDir() + "/containerd-shim-hull-v2";
    CommandResult r = RunCommand(
        {"sh", "-c",
         "cd " + bundle + " && exec " + shim + " -namespace hulldirect -address " + dir_ +
             "/containerd.sock -publish-binary /usr/bin/containerd -id " + id + " start"},
        30s, "",
        {"TTRPC_ADDRESS=" + dir_ + "/containerd.sock.ttrpc",
         "HULL_CONFIG=" + (hull_config.empty() ? dir_ + "/no-such-config.toml" : hull_config)});
    ASSERT_TRUE(r.ok()) << r.Describe();
    ASSERT_EQ(r.err, "");
    address_ = r.out;
    auto client = ttrpc::Client::Connect(*loop_, address_);
    ASSERT_TRUE(client.has_value()) << client.error().ToString();
    client_ = std::move(*client);
  }

  template <typename Resp, typename Req>
  Result<Resp> Call(const std::string& method, const Req& request) {
    std::optional<Result<Resp>> result;
    ttrpc::CallOptions options;
    options.deadline = loop_->Now() + 20s;
    options.metadata.emplace_back("containerd-namespace-ttrpc", "hulldirect");
    client_->CallUnary<Resp>(kTask, method, request, options,
                             [&](Result<Resp> r) { result = std::move(r); });
    loop_->RunUntil([&] { return result.has_value(); }, 30s);
    if (!result) return DeadlineExceededError("no answer");
    return *result;
  }

  Code CodeOf(const Status& s) { return s.code(); }

  tv2::CreateTaskRequest CreateRequest(const std::string& id, const std::string& bundle) {
    tv2::CreateTaskRequest r;
    r.set_id(id);
    r.set_bundle(bundle);
    return r;
  }

  // Waits (running the loop, so Forward calls are answered) for an event.
  bool WaitForTopic(const std::string& topic, size_t count = 1) {
    return loop_->RunUntil(
        [&] {
          size_t n = 0;
          for (const auto& e : events_) n += e.topic() == topic;
          return n >= count;
        },
        20s);
  }

  std::vector<std::string> Topics() const {
    std::vector<std::string> topics;
    for (const auto& e : events_) {
      std::string t = e.topic();
      if (t == "/tasks/exit") {
        containerd::events::TaskExit exit;
        exit.ParseFromString(e.event().value());
        t += ":" + exit.id();
      }
      topics.push_back(t);
    }
    return topics;
  }

  std::string dir_;
  std::string address_;
  UniqueFd log_reader_;
  std::vector<std::string> ids_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ttrpc::Server> events_server_;
  std::unique_ptr<ttrpc::Client> client_;
  std::vector<containerd::services::events::ttrpc::v1::Envelope> events_;
};

TEST_F(ShimDirectTest, MalformedConfigJsonIsInvalidArgumentAndLeaksNothing) {
  std::string bundle = MakeBundle("bad", {"true"});
  StartShim("bad", bundle);
  std::ofstream(bundle + "/config.json") << "{ this is not json";
  auto r = Call<tv2::CreateTaskResponse>("Create", CreateRequest("bad", bundle));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << r.error().ToString();
  // The shim still answers, holds no container, and shuts down cleanly.
  tv2::StateRequest state;
  state.set_id("bad");
  EXPECT_EQ(Call<tv2::StateResponse>("State", state).error().code(), Code::kNotFound);
  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
  EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(dir_).empty(); }, 10s));
  EXPECT_FALSE(fs::exists(address_.substr(7)));
  EXPECT_TRUE(MountsUnder(dir_).empty());
}

TEST_F(ShimDirectTest, WrongCallsGetTheRightCodesAndEventsComeInOrder) {
  std::string bundle = MakeBundle("c1", {"sleep", "100"});
  StartShim("c1", bundle);
  auto created = Call<tv2::CreateTaskResponse>("Create", CreateRequest("c1", bundle));
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  EXPECT_GT(created->pid(), 0u);

  // Create again: AlreadyExists. Unknown container: NotFound.
  EXPECT_EQ(Call<tv2::CreateTaskResponse>("Create", CreateRequest("c1", bundle)).error().code(),
            Code::kAlreadyExists);
  tv2::StartRequest start;
  start.set_id("nope");
  EXPECT_EQ(Call<tv2::StartResponse>("Start", start).error().code(), Code::kNotFound);
  // Resume of a created container: FailedPrecondition.
  tv2::ResumeRequest resume;
  resume.set_id("c1");
  EXPECT_EQ(Call<Empty>("Resume", resume).error().code(), Code::kFailedPrecondition);

  start.set_id("c1");
  auto started = Call<tv2::StartResponse>("Start", start);
  ASSERT_TRUE(started.has_value()) << started.error().ToString();
  EXPECT_EQ(started->pid(), created->pid());
  // Start twice: FailedPrecondition. Delete while running: FailedPrecondition.
  EXPECT_EQ(Call<tv2::StartResponse>("Start", start).error().code(), Code::kFailedPrecondition);
  tv2::DeleteRequest del;
  del.set_id("c1");
  EXPECT_EQ(Call<tv2::DeleteResponse>("Delete", del).error().code(), Code::kFailedPrecondition);

  // Execs: duplicate id, kill before start, wait on unknown exec.
  tv2::ExecProcessRequest exec;
  exec.set_id("c1");
  exec.set_exec_id("e1");
  exec.mutable_spec()->set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Process");
  // What containerd's clients send: the container's process (runc spec's
  // no-new-privileges included) with other args.
  exec.mutable_spec()->set_value(
      R"({"args":["sleep","100"],"cwd":"/","env":["PATH=/bin"],"noNewPrivileges":true})");
  ASSERT_TRUE(Call<Empty>("Exec", exec).has_value());
  EXPECT_EQ(Call<Empty>("Exec", exec).error().code(), Code::kAlreadyExists);
  tv2::KillRequest kill;
  kill.set_id("c1");
  kill.set_exec_id("e1");
  kill.set_signal(SIGKILL);
  EXPECT_EQ(Call<Empty>("Kill", kill).error().code(), Code::kFailedPrecondition);
  tv2::WaitRequest wait_unknown;
  wait_unknown.set_id("c1");
  wait_unknown.set_exec_id("nope");
  EXPECT_EQ(Call<tv2::WaitResponse>("Wait", wait_unknown).error().code(), Code::kNotFound);
  tv2::ExecProcessRequest bad_exec = exec;
  bad_exec.set_exec_id("e2");
  bad_exec.mutable_spec()->set_value("not json");
  EXPECT_EQ(Call<Empty>("Exec", bad_exec).error().code(), Code::kInvalidArgument);

  start.set_exec_id("e1");
  auto exec_started = Call<tv2::StartResponse>("Start", start);
  ASSERT_TRUE(exec_started.has_value()) << exec_started.error().ToString();

  // Kill the init while the exec runs: the exec's exit must come first.
  kill.set_exec_id("");
  ASSERT_TRUE(Call<Empty>("Kill", kill).has_value());
  tv2::WaitRequest wait;
  wait.set_id("c1");
  auto waited = Call<tv2::WaitResponse>("Wait", wait);
  ASSERT_TRUE(waited.has_value()) << waited.error().ToString();
  EXPECT_EQ(waited->exit_status(), 137u);
  // Kill after exit: NotFound. Update after exit: FailedPrecondition.
  EXPECT_EQ(Call<Empty>("Kill", kill).error().code(), Code::kNotFound);
  tv2::UpdateTaskRequest update;
  update.set_id("c1");
  update.mutable_resources()->set_value("{}");
  EXPECT_EQ(Call<Empty>("Update", update).error().code(), Code::kFailedPrecondition);

  del.set_exec_id("e1");
  auto exec_deleted = Call<tv2::DeleteResponse>("Delete", del);
  ASSERT_TRUE(exec_deleted.has_value()) << exec_deleted.error().ToString();
  EXPECT_EQ(exec_deleted->exit_status(), 137u);
  del.set_exec_id("");
  auto deleted = Call<tv2::DeleteResponse>("Delete", del);
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_EQ(deleted->exit_status(), 137u);
  EXPECT_EQ(Call<tv2::DeleteResponse>("Delete", del).error().code(), Code::kNotFound);

  ASSERT_TRUE(WaitForTopic("/tasks/delete"));
  std::vector<std::string> expected = {"/tasks/create",       "/tasks/start",   "/tasks/exec-added",
                                       "/tasks/exec-started", "/tasks/exit:e1", "/tasks/exit:c1",
                                       "/tasks/delete"};
  EXPECT_EQ(Topics(), expected);
  for (const auto& e : events_) {
    EXPECT_EQ(e.namespace_(), "hulldirect");
    EXPECT_GT(e.timestamp().seconds(), 0);
    EXPECT_TRUE(e.event().type_url().starts_with("containerd.events.Task")) << e.event().type_url();
  }

  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
  EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(dir_).empty(); }, 10s));
  EXPECT_FALSE(fs::exists(address_.substr(7)));
}

// A Kill whose runtime call is still running when the init's exit has led
// to Delete (CRI does that at once, on the exit event) is still answered:
// the container is dropped, the Kill's answer is not. It is NotFound
// ("container deleted"), which CRI's StopContainer takes as stopped.
// runc stands behind a wrapper whose `kill` answers 2 s after the signal.
// An exec with more privilege than its container (a capability outside its
// bounding set, or without its no-new-privileges) is refused by the
// confined server's spawner (issue 26), and the container runs on; a copy of
// the container's process runs.
TEST_F(ShimDirectTest, AnExecWithMoreThanItsContainerIsRefused) {
  std::string bundle = MakeBundle("c1", {"sleep", "100"});
  StartShim("c1", bundle);
  ASSERT_TRUE(Call<tv2::CreateTaskResponse>("Create", CreateRequest("c1", bundle)).has_value());
  tv2::StartRequest start;
  start.set_id("c1");
  ASSERT_TRUE(Call<tv2::StartResponse>("Start", start).has_value());
  auto exec = [&](const std::string& exec_id, const std::string& process) {
    tv2::ExecProcessRequest req;
    req.set_id("c1");
    req.set_exec_id(exec_id);
    req.mutable_spec()->set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Process");
    req.mutable_spec()->set_value(process);
    EXPECT_TRUE(Call<Empty>("Exec", req).has_value());
    start.set_exec_id(exec_id);
    return Call<tv2::StartResponse>("Start", start);
  };
  for (auto [exec_id, process] :
       {std::pair<std::string, std::string>{"module",
                                            R"({"args":["true"],"cwd":"/","noNewPrivileges":true,
                "capabilities":{"effective":["CAP_SYS_MODULE"],"bounding":["CAP_SYS_MODULE"]}})"},
        {"nnp", R"({"args":["true"],"cwd":"/","noNewPrivileges":false})"}}) {
    auto refused = exec(exec_id, process);
    ASSERT_FALSE(refused.has_value()) << exec_id;
    EXPECT_EQ(refused.error().code(), Code::kPermissionDenied) << refused.error().ToString();
  }
  auto ran = exec("copy", R"({"args":["true"],"cwd":"/","env":["PATH=/bin"],"noNewPrivileges":true,
      "capabilities":{"bounding":["CAP_KILL"],"effective":["CAP_KILL"],"permitted":["CAP_KILL"]}})");
  ASSERT_TRUE(ran.has_value()) << ran.error().ToString();
  EXPECT_GT(ran->pid(), 0u);
  tv2::DeleteRequest del;
  del.set_id("c1");
  for (const char* exec_id : {"module", "nnp", "copy"}) {
    del.set_exec_id(exec_id);
    static_cast<void>(Call<tv2::DeleteResponse>("Delete", del));  // any answer
  }
  del.set_exec_id("");

  tv2::KillRequest kill;
  kill.set_id("c1");
  kill.set_signal(SIGKILL);
  ASSERT_TRUE(Call<Empty>("Kill", kill).has_value());
  tv2::WaitRequest wait;
  wait.set_id("c1");
  ASSERT_TRUE(Call<tv2::WaitResponse>("Wait", wait).has_value());
  ASSERT_TRUE(Call<tv2::DeleteResponse>("Delete", del).has_value());
  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
}

TEST_F(ShimDirectTest, KillStillRunningWhenTheContainerIsDeletedIsAnswered) {
  const std::string wrapper = dir_ + "/runc-slowkill";
  std::ofstream(wrapper)
      << "#!/bin/sh\n"
         "for a; do\n"
         "  if [ \"$a\" = kill ]; then runc \"$@\"; rc=$?; sleep 2; exit $rc; fi\n"
         "done\n"
         "exec runc \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string config = dir_ + "/hull.toml";
  std::ofstream(config) << "runtime = \"" << wrapper << "\"\nroot = \"" << dir_ << "/runc-root\"\n";

  std::string bundle = MakeBundle("victim", {"sleep", "100"});
  StartShim("victim", bundle, config);
  ASSERT_TRUE(Call<tv2::CreateTaskResponse>("Create", CreateRequest("victim", bundle)).has_value());
  tv2::StartRequest start;
  start.set_id("victim");
  ASSERT_TRUE(Call<tv2::StartResponse>("Start", start).has_value());

  tv2::KillRequest kill;
  kill.set_id("victim");
  kill.set_signal(SIGKILL);
  std::optional<Result<Empty>> killed;
  ttrpc::CallOptions options;
  options.deadline = loop_->Now() + 20s;
  options.metadata.emplace_back("containerd-namespace-ttrpc", "hulldirect");
  client_->CallUnary<Empty>(kTask, "Kill", kill, options,
                            [&](Result<Empty> r) { killed = std::move(r); });
  ASSERT_TRUE(WaitForTopic("/tasks/exit"));
  EXPECT_FALSE(killed.has_value()) << "the wrapper's kill should still be running";
  tv2::DeleteRequest del;
  del.set_id("victim");
  auto deleted = Call<tv2::DeleteResponse>("Delete", del);
  ASSERT_TRUE(deleted.has_value()) << deleted.error().ToString();
  EXPECT_EQ(deleted->exit_status(), 137u);
  loop_->RunUntil([&] { return killed.has_value(); }, 10s);
  ASSERT_TRUE(killed.has_value()) << "Kill never answered";
  ASSERT_FALSE(killed->has_value());
  EXPECT_EQ(killed->error().code(), Code::kNotFound) << killed->error().ToString();
  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
}

TEST_F(ShimDirectTest, ShortLivedInitExitsAfterItsStartEvent) {
  std::string bundle = MakeBundle("quick", {"true"});
  StartShim("quick", bundle);
  ASSERT_TRUE(Call<tv2::CreateTaskResponse>("Create", CreateRequest("quick", bundle)).has_value());
  tv2::StartRequest start;
  start.set_id("quick");
  ASSERT_TRUE(Call<tv2::StartResponse>("Start", start).has_value());
  tv2::WaitRequest wait;
  wait.set_id("quick");
  auto waited = Call<tv2::WaitResponse>("Wait", wait);
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->exit_status(), 0u);
  ASSERT_TRUE(WaitForTopic("/tasks/exit"));
  std::vector<std::string> expected = {"/tasks/create", "/tasks/start", "/tasks/exit:quick"};
  EXPECT_EQ(Topics(), expected);
  tv2::DeleteRequest del;
  del.set_id("quick");
  ASSERT_TRUE(Call<tv2::DeleteResponse>("Delete", del).has_value());
  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
}

// The terminal's case of a failing log sink (the pipe case is in
// shim_reliability_test): a 64 KiB tmpfs under a file:// stdout fills, the
// shim logs the container, the stream and the errno once, and keeps draining
// the pty, so the process is never blocked. Direct, since ctr cannot ask
// for a terminal with a log URI.
TEST_F(ShimDirectTest, TerminalOutputToAFullLogDiskIsReportedAndTheContainerRunsOn) {
  std::string mnt = dir_ + "/tinylog";
  fs::create_directories(mnt);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k"), 0) << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};

  // 1 MiB onto the terminal, then the init becomes `sleep`: its comm says
  // it got past the full disk.
  std::string bundle =
      MakeBundle("tty", {"sh", "-c", "head -c 1048576 /dev/zero; exec sleep 1000"});
  {
    std::ifstream in(bundle + "/config.json");
    std::string json((std::istreambuf_iterator<char>(in)), {});
    json.replace(json.find("\"terminal\": false"), 17, "\"terminal\": true");
    std::ofstream(bundle + "/config.json") << json;
  }
  StartShim("tty", bundle);
  tv2::CreateTaskRequest create = CreateRequest("tty", bundle);
  create.set_terminal(true);
  create.set_stdout("file://" + mnt + "/c.log");
  auto created = Call<tv2::CreateTaskResponse>("Create", create);
  ASSERT_TRUE(created.has_value()) << created.error().ToString();
  tv2::StartRequest start;
  start.set_id("tty");
  ASSERT_TRUE(Call<tv2::StartResponse>("Start", start).has_value());

  std::string log;
  auto read_log = [&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(log_reader_.get(), buf, sizeof buf)) > 0;) log.append(buf, n);
  };
  // The loop wakes for its own events only: look every 100 ms.
  auto poll_until = [&](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!loop_->RunUntil(done, 100ms)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
  };
  EXPECT_TRUE(poll_until([&] {
    read_log();
    return log.find("container tty: terminal:") != std::string::npos &&
           log.find("errno " + std::to_string(ENOSPC)) != std::string::npos;
  })) << log;
  const std::string comm = "/proc/" + std::to_string(created->pid()) + "/comm";
  EXPECT_TRUE(poll_until([&] {
    std::ifstream in(comm);
    std::string name;
    in >> name;
    return name == "sleep";
  }));
  read_log();
  // Once per stream, not once per write.
  size_t first = log.find("container tty: terminal:");
  EXPECT_EQ(log.find("container tty: terminal:", first + 1), std::string::npos) << log;

  tv2::KillRequest kill;
  kill.set_id("tty");
  kill.set_signal(SIGKILL);
  ASSERT_TRUE(Call<Empty>("Kill", kill).has_value());
  tv2::WaitRequest wait;
  wait.set_id("tty");
  ASSERT_TRUE(Call<tv2::WaitResponse>("Wait", wait).has_value());
  tv2::DeleteRequest del;
  del.set_id("tty");
  ASSERT_TRUE(Call<tv2::DeleteResponse>("Delete", del).has_value());
  EXPECT_TRUE(Call<Empty>("Shutdown", tv2::ShutdownRequest()).has_value());
}

}  // namespace
}  // namespace hull::itest
