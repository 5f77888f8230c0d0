// hull-agent's container calls in a real QEMU micro-VM (TCG): one guest,
// booted once, whose 9p share holds a busybox root filesystem the test makes
// from the host's static busybox; the test talks to the agent as the vm
// backend does (hull's ttrpc client on the virtio-serial port's socket) and
// runs containers with the guest's crun: output read back, exit codes, exec
// with stdout/stderr and stdin, a terminal with a resize, signals, pause and
// resume, stats, update, an OOM kill reported before its exit, the
// processes listed, removal, bad requests, and nothing left in the guest.
// Label integration; RESOURCE_LOCK hull_agent_vm (one guest at a time).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/agent_vm_guest.h"

namespace hull::itest {
namespace {

using nlohmann::json;

constexpr char kSharePath[] = "/run/hull/pod";  // where the guest mounts the share
// Per call; long-polls are asked again on DeadlineExceeded.
constexpr auto kCall = 60s;

// A busybox root filesystem: the static busybox and the applets used here.
Status MakeRootfs(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"bin", "proc", "dev", "sys", "tmp", "etc", "mnt/run", "mnt/cg"}) {
    fs::create_directories(dir + "/" + sub, ec);
    if (ec) return InternalError("mkdir " + dir + "/" + sub + ": " + ec.message());
  }
  fs::copy_file("/bin/busybox", dir + "/bin/busybox", ec);
  if (ec) return InternalError("copy /bin/busybox: " + ec.message());
  for (const char* applet :
       {"sh", "echo", "cat", "sleep", "dd", "stty", "ls", "uname", "tr", "true", "head", "grep"}) {
    fs::create_symlink("busybox", dir + "/bin/" + applet, ec);
    if (ec) return InternalError(std::string("symlink ") + applet + ": " + ec.message());
  }
  return Status::Ok();
}

// A runtime-spec config.json for the busybox root filesystem, read-only
// (every container of the test shares it), with what containerd's default
// spec has (capabilities, rlimits, the device cgroup, masked and read-only
// paths, mqueue and cgroup mounts) and a seccomp filter.
json Spec(std::vector<std::string> args, bool terminal = false) {
  json mounts = json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"},
       {"type", "devpts"},
       {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
      {{"destination", "/dev/shm"},
       {"type", "tmpfs"},
       {"source", "shm"},
       {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
      {{"destination", "/sys"},
       {"type", "sysfs"},
       {"source", "sysfs"},
       {"options", {"nosuid", "noexec", "nodev", "ro"}}},
      {{"destination", "/dev/mqueue"},
       {"type", "mqueue"},
       {"source", "mqueue"},
       {"options", {"nosuid", "noexec", "nodev"}}},
      {{"destination", "/sys/fs/cgroup"},
       {"type", "cgroup"},
       {"source", "cgroup"},
       {"options", {"nosuid", "noexec", "nodev", "relatime", "ro"}}},
  });
  json caps = {"CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
               "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
               "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
               "CAP_KILL",    "CAP_AUDIT_WRITE"};
  json devices = json::array({{{"allow", false}, {"access", "rwm"}}});
  for (int minor : {3, 5, 7, 8, 9}) {  // null, zero, full, random, urandom
    devices.push_back(
        {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", minor}, {"access", "rwm"}});
  }
  devices.push_back(
      {{"allow", true}, {"type", "c"}, {"major", 5}, {"minor", 0}, {"access", "rwm"}});
  devices.push_back({{"allow", true}, {"type", "c"}, {"major", 136}, {"access", "rwm"}});
  devices.push_back(
      {{"allow", true}, {"type", "c"}, {"major", 5}, {"minor", 2}, {"access", "rwm"}});
  return json{
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", terminal},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", args},
        {"env", {"PATH=/bin", "TERM=xterm"}},
        {"cwd", "/"},
        {"noNewPrivileges", true},
        {"capabilities",
         {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"inheritable", caps}}},
        {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
        // What the host's spec carries and the guest has no use for: the
        // agent drops it.
        {"apparmorProfile", "cri-containerd.apparmor.d"}}},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "c"},
      {"mounts", mounts},
      {"linux",
       {{"cgroupsPath", "/host/path/the/agent/replaces"},
        {"resources", {{"devices", devices}}},
        {"maskedPaths", {"/proc/kcore", "/proc/keys", "/sys/firmware"}},
        {"readonlyPaths", {"/proc/bus", "/proc/sys", "/proc/sysrq-trigger"}},
        {"seccomp",
         {{"defaultAction", "SCMP_ACT_ALLOW"},
          {"architectures", {"SCMP_ARCH_X86_64"}},
          {"syscalls", {{{"names", {"syslog", "kexec_load"}}, {"action", "SCMP_ACT_ERRNO"}}}}}},
        {"namespaces",
         {{{"type", "pid"}},
          {{"type", "ipc"}},
          {{"type", "uts"}},
          {{"type", "mount"}},
          {{"type", "network"}, {"path", "/proc/1/ns/net"}}}}}},
  };
}

pb::Stdio Streams(bool in, bool out, bool err, bool terminal = false) {
  pb::Stdio s;
  s.set_stdin(in);
  s.set_stdout(out);
  s.set_stderr(err);
  s.set_terminal(terminal);
  return s;
}

class AgentContainersVmTest : public GuestImageTest {
 protected:
  void SetUp() override {
    GuestImageTest::SetUp();
    if (IsSkipped()) return;
    if (::access("/bin/busybox", X_OK) != 0) GTEST_SKIP() << "no /bin/busybox (busybox-static)";
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
    share_ = fs::temp_directory_path() / "hull-agent-ct.XXXXXX";
    ASSERT_NE(::mkdtemp(share_.data()), nullptr);
    Status made = MakeRootfs(share_ + "/rootfs");
    ASSERT_TRUE(made.ok()) << made.ToString();
  }

  void TearDown() override {
    client_.reset();
    guest_.reset();
    if (!share_.empty()) {
      std::error_code ec;
      fs::remove_all(share_, ec);
    }
  }

  template <typename Resp, typename Req>
  Result<Resp> Call(const char* method, const Req& req) {
    return client_->CallUnarySync<Resp>(kAgent, method, req, Within(kCall));
  }

  Result<uint32_t> Create(const std::string& id, const json& spec, const pb::Stdio& stdio) {
    pb::CreateContainerRequest req;
    req.set_container_id(id);
    req.set_bundle(kSharePath);
    req.set_spec_json(spec.dump());
    *req.mutable_stdio() = stdio;
    auto resp = Call<pb::CreateContainerResponse>("CreateContainer", req);
    if (!resp) return resp.error();
    return resp->pid();
  }

  Status Simple(const char* method, const std::string& id) {
    // Every request with only a container id has it as field 1.
    pb::StartContainerRequest req;
    req.set_container_id(id);
    auto resp = client_->CallSync(kAgent, method, req.SerializeAsString(), Within(kCall));
    return resp ? Status::Ok() : resp.error();
  }

  Result<pb::ExecProcessResponse> Exec(const std::string& id, const std::string& exec_id,
                                       const json& process, const pb::Stdio& stdio) {
    pb::ExecProcessRequest req;
    req.set_container_id(id);
    req.set_exec_id(exec_id);
    req.set_process_json(process.dump());
    *req.mutable_stdio() = stdio;
    return Call<pb::ExecProcessResponse>("ExecProcess", req);
  }

  Status Signal(const std::string& id, const std::string& exec_id, int signal, bool all = false) {
    pb::SignalProcessRequest req;
    req.set_container_id(id);
    req.set_exec_id(exec_id);
    req.set_signal(static_cast<uint32_t>(signal));
    req.set_all(all);
    auto resp = Call<pb::SignalProcessResponse>("SignalProcess", req);
    return resp ? Status::Ok() : resp.error();
  }

  Result<pb::WaitProcessResponse> Wait(const std::string& id, const std::string& exec_id = "") {
    pb::WaitProcessRequest req;
    req.set_container_id(id);
    req.set_exec_id(exec_id);
    for (auto until = Clock::now() + 180s;;) {
      auto resp = Call<pb::WaitProcessResponse>("WaitProcess", req);
      if (resp || resp.error().code() != Code::kDeadlineExceeded || Clock::now() > until) {
        return resp;
      }
    }
  }

  // Everything the stream gives until EOF (long-polls asked again).
  Result<std::string> ReadAll(const std::string& id, const std::string& exec_id, bool err,
                              uint32_t max_bytes = 0) {
    pb::ReadStreamRequest req;
    req.set_container_id(id);
    req.set_exec_id(exec_id);
    req.set_max_bytes(max_bytes);
    std::string all;
    for (auto until = Clock::now() + 180s;;) {
      auto resp = Call<pb::ReadStreamResponse>(err ? "ReadStderr" : "ReadStdout", req);
      if (!resp) {
        if (resp.error().code() == Code::kDeadlineExceeded && Clock::now() < until) continue;
        return resp.error().WithContext("read so far: " + all);
      }
      if (max_bytes != 0) {
        EXPECT_LE(resp->data().size(), max_bytes);
      }
      if (resp->eof()) return all;
      EXPECT_FALSE(resp->data().empty()) << "a reply without data must be EOF";
      all += resp->data();
    }
  }

  std::string Diagnostics() { return guest_ ? guest_->Diagnostics() : ""; }

  std::unique_ptr<EventLoop> loop_;
  std::string share_;
  std::unique_ptr<Guest> guest_;
  std::unique_ptr<ttrpc::Client> client_;
};

TEST_F(AgentContainersVmTest, ContainersRunWithCrunInTheGuest) {
  guest_ = Guest::Boot(*image_, share_);
  client_ = guest_->Connect(*loop_);
  ASSERT_NE(client_, nullptr);
  auto hello = Hello(*client_, kBootDeadline);
  ASSERT_TRUE(hello.has_value()) << hello.error().ToString() << "\n" << Diagnostics();
  pb::CreateSandboxRequest sandbox;
  sandbox.set_sandbox_id("pod");
  sandbox.set_share_tag("hullpod");
  sandbox.set_share_path(kSharePath);
  auto created = Call<pb::CreateSandboxResponse>("CreateSandbox", sandbox);
  ASSERT_TRUE(created.has_value()) << created.error().ToString();

  {
    SCOPED_TRACE("a container's output, exit code and removal");
    auto start = Clock::now();
    auto pid =
        Create("out", Spec({"sh", "-c", "echo hello-from-guest; uname -r; echo oops >&2; exit 7"}),
               Streams(false, true, true));
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString() << "\n" << Diagnostics();
    EXPECT_GT(*pid, 1u);
    Status started = Simple("StartContainer", "out");
    ASSERT_TRUE(started.ok()) << started.ToString();
    std::cout << "[ crun     ] create + start in the guest: "
              << std::chrono::duration<double>(Clock::now() - start).count() << " s\n";
    auto out = ReadAll("out", "", false);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    // The guest's kernel, not the host's.
    EXPECT_EQ(*out, "hello-from-guest\n" + image_->release + "\n");
    auto err = ReadAll("out", "", true);
    ASSERT_TRUE(err.has_value()) << err.error().ToString();
    EXPECT_EQ(*err, "oops\n");
    auto waited = Wait("out");
    ASSERT_TRUE(waited.has_value()) << waited.error().ToString();
    EXPECT_EQ(waited->exit_status(), 7u);
    EXPECT_GT(waited->exited_at_unix_nano(), 0);
    // Stopped: it cannot start, be signalled or paused again.
    EXPECT_EQ(Simple("StartContainer", "out").code(), Code::kFailedPrecondition);
    EXPECT_EQ(Signal("out", "", SIGKILL).code(), Code::kNotFound);
    EXPECT_EQ(Simple("PauseContainer", "out").code(), Code::kFailedPrecondition);
    ASSERT_TRUE(Simple("RemoveContainer", "out").ok());
    EXPECT_EQ(Simple("RemoveContainer", "out").code(), Code::kNotFound);
  }

  {
    SCOPED_TRACE("bad requests");
    auto bad = Create("../x", Spec({"true"}), Streams(false, false, false));
    EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
    pb::CreateContainerRequest req;
    req.set_container_id("bad");
    req.set_bundle(kSharePath);
    req.set_spec_json("{not json");
    auto r = Call<pb::CreateContainerResponse>("CreateContainer", req);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    json no_rootfs = Spec({"true"});
    no_rootfs["root"]["path"] = "missing-rootfs";
    EXPECT_EQ(Create("bad", no_rootfs, Streams(false, false, false)).error().code(),
              Code::kInvalidArgument);
    // A terminal asked for in the spec but not in stdio.
    EXPECT_EQ(Create("bad", Spec({"true"}, true), Streams(false, true, false)).error().code(),
              Code::kInvalidArgument);
    // A spec crun refuses: crun's own message comes back, and nothing stays.
    json bad_mount = Spec({"true"});
    bad_mount["mounts"].push_back({{"destination", "/x"},
                                   {"type", "bind"},
                                   {"source", "/no/such/dir"},
                                   {"options", {"bind"}}});
    auto refused = Create("bad", bad_mount, Streams(false, false, false));
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message().find("crun"), std::string::npos)
        << refused.error().ToString();
    EXPECT_EQ(Simple("StartContainer", "bad").code(), Code::kNotFound);
    EXPECT_EQ(Simple("StartContainer", "nobody").code(), Code::kNotFound);
    EXPECT_EQ(Wait("nobody").error().code(), Code::kNotFound);
    EXPECT_EQ(
        Exec("nobody", "e", Spec({"true"})["process"], Streams(false, false, false)).error().code(),
        Code::kNotFound);
  }

  pid_t svc_pid = 0;
  {
    SCOPED_TRACE("a long-running container: exec, stdin, terminal, processes");
    auto pid = Create("svc", Spec({"sleep", "1000"}), Streams(false, false, false));
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString() << "\n" << Diagnostics();
    svc_pid = static_cast<pid_t>(*pid);
    EXPECT_EQ(Create("svc", Spec({"true"}), Streams(false, false, false)).error().code(),
              Code::kAlreadyExists);
    // Not running yet: no exec.
    EXPECT_EQ(Exec("svc", "early", Spec({"true"})["process"], Streams(false, false, false))
                  .error()
                  .code(),
              Code::kFailedPrecondition);
    ASSERT_TRUE(Simple("StartContainer", "svc").ok());

    json p3 = Spec({"sh", "-c", "echo out3; echo err3 >&2; exit 3"})["process"];
    auto e3 = Exec("svc", "e3", p3, Streams(false, true, true));
    ASSERT_TRUE(e3.has_value()) << e3.error().ToString();
    auto out3 = ReadAll("svc", "e3", false, 2);  // two bytes at a time
    ASSERT_TRUE(out3.has_value()) << out3.error().ToString();
    EXPECT_EQ(*out3, "out3\n");
    EXPECT_EQ(ReadAll("svc", "e3", true).value_or("?"), "err3\n");
    auto w3 = Wait("svc", "e3");
    ASSERT_TRUE(w3.has_value()) << w3.error().ToString();
    EXPECT_EQ(w3->exit_status(), 3u);
    // An exec id comes again once its process has exited.
    auto again =
        Exec("svc", "e3", Spec({"sh", "-c", "echo again"})["process"], Streams(false, true, false));
    ASSERT_TRUE(again.has_value()) << again.error().ToString();
    EXPECT_EQ(ReadAll("svc", "e3", false).value_or("?"), "again\n");
    EXPECT_EQ(Wait("svc", "e3").value_or(pb::WaitProcessResponse()).exit_status(), 0u);

    // stdin: what goes in comes out, and closing it ends cat.
    auto cat = Exec("svc", "cat", Spec({"cat"})["process"], Streams(true, true, false));
    ASSERT_TRUE(cat.has_value()) << cat.error().ToString();
    pb::WriteStdinRequest write;
    write.set_container_id("svc");
    write.set_exec_id("cat");
    write.set_data("ping through the guest\n");
    auto written = Call<pb::WriteStdinResponse>("WriteStdin", write);
    ASSERT_TRUE(written.has_value()) << written.error().ToString();
    EXPECT_EQ(written->written(), write.data().size());
    pb::CloseStdinRequest close;
    close.set_container_id("svc");
    close.set_exec_id("cat");
    ASSERT_TRUE(Call<pb::CloseStdinResponse>("CloseStdin", close).has_value());
    EXPECT_EQ(ReadAll("svc", "cat", false).value_or("?"), "ping through the guest\n");
    EXPECT_EQ(Wait("svc", "cat").value_or(pb::WaitProcessResponse()).exit_status(), 0u);
    // stdout was not asked for stderr: EOF at once.
    EXPECT_EQ(ReadAll("svc", "cat", true).value_or("?"), "");

    // A terminal: resized before the process reads its size.
    json tty = Spec({"sh", "-c", "read line; stty size; echo tty-$line"}, true)["process"];
    auto t = Exec("svc", "tty", tty, Streams(true, true, false, true));
    ASSERT_TRUE(t.has_value()) << t.error().ToString() << "\n" << Diagnostics();
    pb::TtyWinResizeRequest resize;
    resize.set_container_id("svc");
    resize.set_exec_id("tty");
    resize.set_rows(31);
    resize.set_columns(101);
    auto resized = Call<pb::TtyWinResizeResponse>("TtyWinResize", resize);
    ASSERT_TRUE(resized.has_value()) << resized.error().ToString();
    resize.set_exec_id("cat");  // no terminal
    EXPECT_EQ(Call<pb::TtyWinResizeResponse>("TtyWinResize", resize).error().code(),
              Code::kFailedPrecondition);
    write.set_exec_id("tty");
    write.set_data("ok\r");
    ASSERT_TRUE(Call<pb::WriteStdinResponse>("WriteStdin", write).has_value());
    auto tty_out = ReadAll("svc", "tty", false);
    ASSERT_TRUE(tty_out.has_value()) << tty_out.error().ToString();
    EXPECT_NE(tty_out->find("31 101"), std::string::npos) << *tty_out;
    EXPECT_NE(tty_out->find("tty-ok"), std::string::npos) << *tty_out;
    EXPECT_EQ(Wait("svc", "tty").value_or(pb::WaitProcessResponse()).exit_status(), 0u);

    // A process signalled: 128 + the signal.
    auto sleeper =
        Exec("svc", "sleeper", Spec({"sleep", "1000"})["process"], Streams(false, false, false));
    ASSERT_TRUE(sleeper.has_value()) << sleeper.error().ToString();
    EXPECT_EQ(Exec("svc", "sleeper", Spec({"true"})["process"], Streams(false, false, false))
                  .error()
                  .code(),
              Code::kAlreadyExists);
    // Its stdin was not asked for.
    pb::WriteStdinRequest no_stdin;
    no_stdin.set_container_id("svc");
    no_stdin.set_exec_id("sleeper");
    no_stdin.set_data("x");
    EXPECT_EQ(Call<pb::WriteStdinResponse>("WriteStdin", no_stdin).error().code(),
              Code::kFailedPrecondition);
    pb::ListProcessesRequest list;
    list.set_container_id("svc");
    auto listed = Call<pb::ListProcessesResponse>("ListProcesses", list);
    ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
    std::vector<uint32_t> pids(listed->pids().begin(), listed->pids().end());
    EXPECT_NE(std::find(pids.begin(), pids.end(), static_cast<uint32_t>(svc_pid)), pids.end());
    EXPECT_NE(std::find(pids.begin(), pids.end(), sleeper->pid()), pids.end());
    ASSERT_TRUE(Signal("svc", "sleeper", SIGTERM).ok());
    EXPECT_EQ(Wait("svc", "sleeper").value_or(pb::WaitProcessResponse()).exit_status(),
              128u + SIGTERM);
    EXPECT_EQ(Signal("svc", "sleeper", SIGTERM).code(), Code::kNotFound);
    EXPECT_EQ(Signal("svc", "", 0).code(), Code::kInvalidArgument);
  }

  {
    SCOPED_TRACE("pause, resume, update, stats");
    ASSERT_TRUE(Simple("PauseContainer", "svc").ok());
    EXPECT_EQ(Simple("PauseContainer", "svc").code(), Code::kFailedPrecondition);
    EXPECT_EQ(Exec("svc", "while-paused", Spec({"true"})["process"], Streams(false, false, false))
                  .error()
                  .code(),
              Code::kFailedPrecondition);
    pb::StatsContainerRequest stats_req;
    stats_req.set_container_id("svc");
    auto paused = Call<pb::StatsContainerResponse>("StatsContainer", stats_req);
    ASSERT_TRUE(paused.has_value()) << paused.error().ToString();
    ASSERT_TRUE(Simple("ResumeContainer", "svc").ok());
    EXPECT_EQ(Simple("ResumeContainer", "svc").code(), Code::kFailedPrecondition);

    pb::UpdateContainerRequest update;
    update.set_container_id("svc");
    update.set_resources_json(R"({"pids":{"limit":50},"memory":{"limit":67108864}})");
    auto updated = Call<pb::UpdateContainerResponse>("UpdateContainer", update);
    ASSERT_TRUE(updated.has_value()) << updated.error().ToString();
    update.set_resources_json("[1]");
    EXPECT_EQ(Call<pb::UpdateContainerResponse>("UpdateContainer", update).error().code(),
              Code::kInvalidArgument);

    auto stats = Call<pb::StatsContainerResponse>("StatsContainer", stats_req);
    ASSERT_TRUE(stats.has_value()) << stats.error().ToString();
    const auto& m = stats->metrics();
    EXPECT_GE(m.pids().current(), 1u);
    EXPECT_EQ(m.pids().limit(), 50u);
    EXPECT_EQ(m.memory().usage_limit(), 67108864u);
    EXPECT_GT(m.memory().usage(), 0u);
    EXPECT_GT(m.cpu().usage_usec(), 0u);
    std::cout << "[ stats    ] svc: pids " << m.pids().current() << ", memory "
              << m.memory().usage() << " B, cpu " << m.cpu().usage_usec() << " us\n";

    EXPECT_EQ(Simple("RemoveContainer", "svc").code(), Code::kFailedPrecondition);
    ASSERT_TRUE(Signal("svc", "", SIGKILL, /*all=*/true).ok());
    auto waited = Wait("svc");
    ASSERT_TRUE(waited.has_value()) << waited.error().ToString();
    EXPECT_EQ(waited->exit_status(), 128u + SIGKILL);
    ASSERT_TRUE(Simple("RemoveContainer", "svc").ok());
  }

  {
    SCOPED_TRACE("an OOM kill is reported before the exit it caused");
    json spec = Spec({"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"});
    spec["linux"]["resources"]["memory"] = {{"limit", 32 << 20}, {"swap", 32 << 20}};
    std::vector<std::string> order;
    std::optional<Result<pb::GetOOMEventResponse>> oom;
    std::optional<Result<pb::WaitProcessResponse>> exit;
    client_->CallUnary<pb::GetOOMEventResponse>(kAgent, "GetOOMEvent", pb::GetOOMEventRequest(),
                                                Within(180s),
                                                [&](Result<pb::GetOOMEventResponse> r) {
                                                  order.push_back("oom");
                                                  oom = std::move(r);
                                                });
    auto pid = Create("oom", spec, Streams(false, false, true));
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
    pb::WaitProcessRequest wait;
    wait.set_container_id("oom");
    client_->CallUnary<pb::WaitProcessResponse>(kAgent, "WaitProcess", wait, Within(180s),
                                                [&](Result<pb::WaitProcessResponse> r) {
                                                  order.push_back("exit");
                                                  exit = std::move(r);
                                                });
    ASSERT_TRUE(Simple("StartContainer", "oom").ok());
    ASSERT_TRUE(loop_->RunUntil([&] { return oom.has_value() && exit.has_value(); }, 200s))
        << Diagnostics();
    ASSERT_TRUE(oom->has_value()) << oom->error().ToString();
    EXPECT_EQ((*oom)->container_id(), "oom");
    ASSERT_TRUE(exit->has_value()) << exit->error().ToString();
    EXPECT_EQ((*exit)->exit_status(), 137u);
    EXPECT_EQ(order, (std::vector<std::string>{"oom", "exit"}));
    ASSERT_TRUE(Simple("RemoveContainer", "oom").ok());

    // A host that does not poll OOM events still gets the exit (after the
    // agent's wait for it, 2 s), and the event is kept for its next poll.
    ASSERT_TRUE(Create("oom2", spec, Streams(false, false, false)).has_value());
    ASSERT_TRUE(Simple("StartContainer", "oom2").ok());
    auto waited = Wait("oom2");
    ASSERT_TRUE(waited.has_value()) << waited.error().ToString();
    EXPECT_EQ(waited->exit_status(), 137u);
    auto kept = Call<pb::GetOOMEventResponse>("GetOOMEvent", pb::GetOOMEventRequest());
    ASSERT_TRUE(kept.has_value()) << kept.error().ToString();
    EXPECT_EQ(kept->container_id(), "oom2");
    ASSERT_TRUE(Simple("RemoveContainer", "oom2").ok());
  }

  {
    SCOPED_TRACE("nothing left in the guest");
    // A container in the guest's pid namespace that sees the agent's state
    // directories and the containers' cgroup parent (bind mounts of guest
    // paths, read-only).
    json spec = Spec({"sh", "-c",
                      "echo containers: $(ls /mnt/run/containers); echo crun: $(ls /mnt/run/crun);"
                      " echo cgroups: $(cd /mnt/cg/hull && ls -d */);"
                      " for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"});
    json& ns = spec["linux"]["namespaces"];
    ns.erase(ns.begin());  // no pid namespace of its own
    spec["mounts"].push_back({{"destination", "/mnt/run"},
                              {"type", "bind"},
                              {"source", "/run/hull"},
                              {"options", {"rbind", "ro"}}});
    spec["mounts"].push_back({{"destination", "/mnt/cg"},
                              {"type", "bind"},
                              {"source", "/sys/fs/cgroup"},
                              {"options", {"rbind", "ro"}}});
    auto pid = Create("inspect", spec, Streams(false, true, true));
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
    ASSERT_TRUE(Simple("StartContainer", "inspect").ok());
    auto out = ReadAll("inspect", "", false);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    EXPECT_EQ(ReadAll("inspect", "", true).value_or("?"), "");
    EXPECT_EQ(Wait("inspect").value_or(pb::WaitProcessResponse()).exit_status(), 0u);
    EXPECT_NE(out->find("containers: inspect\n"), std::string::npos) << *out;
    EXPECT_NE(out->find("crun: inspect\n"), std::string::npos) << *out;
    EXPECT_NE(out->find("cgroups: inspect/\n"), std::string::npos) << *out;
    // The command lines of every process in the guest: the agent, this
    // shell, kernel threads (empty); no container process, no crun.
    size_t agent = out->find("/init");
    ASSERT_NE(agent, std::string::npos) << *out;
    std::istringstream processes(out->substr(agent));
    for (std::string line; std::getline(processes, line);) {
      for (const char* gone : {"sleep", "dd ", "cat", "crun", "/usr/bin/crun"}) {
        EXPECT_NE(line.rfind(gone, 0), 0u) << gone << " still runs:\n" << *out;
      }
    }
    ASSERT_TRUE(Simple("RemoveContainer", "inspect").ok());
  }

  Status destroyed = DestroySandbox(*client_, "pod");
  ASSERT_TRUE(destroyed.ok()) << destroyed.ToString();
  std::optional<int> status = guest_->WaitExit(kExitDeadline);
  ASSERT_TRUE(status.has_value()) << "QEMU still running after DestroySandbox\n" << Diagnostics();
}

}  // namespace
}  // namespace hull::itest
