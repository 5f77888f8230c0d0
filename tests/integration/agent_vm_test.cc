// hull-agent in a real QEMU micro-VM: tools/guest-image builds the kernel,
// initramfs (hull-agent as /init) and guest root from Debian packages; each
// test boots `-M microvm` under TCG with the agent's virtio-serial port on a
// chardev socket, and talks to the agent with hull's ttrpc client, as the vm
// backend will. Skips, saying why, when QEMU or the image cannot be had.
// Label integration; one guest at a time (RESOURCE_LOCK hull_agent_vm).
//
// HULL_AGENT_BOOT_RUNS=N runs the boot measurement (BootToAgentReady) N
// times and prints min/median; without it that test is skipped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/event_loop.h"
#include "base/file_util.h"
#include "base/spawn.h"
#include "base/status.h"
#include "hull/agent/v1/agent.pb.h"
#include "ttrpc/client.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"
#include "ttrpc/request.pb.h"

namespace hull::itest {
namespace {

namespace fs = std::filesystem;
namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kAgent[] = "hull.agent.v1.Agent";
constexpr int kCpus = 2;
constexpr int kMemMiB = 256;
// Boots take 1.3 s on an idle host and up to ~11 s with other builds on the
// two cores (docs/vm.md): generous deadlines, never fixed sleeps.
constexpr auto kBootDeadline = 90s;
constexpr auto kExitDeadline = 30s;

struct GuestImage {
  std::string kernel;
  std::string initramfs;
  std::string release;
};

// Builds (or finds cached) the guest image; nullopt and `why` on failure.
std::optional<GuestImage> BuildImage(std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root (QEMU's 9p and the image tool)";
    return std::nullopt;
  }
  if (::access("/usr/bin/qemu-system-x86_64", X_OK) != 0) {
    *why = "no /usr/bin/qemu-system-x86_64 (apt-get install qemu-system-x86)";
    return std::nullopt;
  }
  const std::string out = std::string(HULL_BINARY_DIR) + "/guest-image";
  const std::string log = std::string(HULL_BINARY_DIR) + "/guest-image.log";
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  Result<pid_t> pid = Spawn(SpawnOptions{
      .argv = {std::string(HULL_SOURCE_DIR) + "/tools/guest-image", "--out", out, "--agent",
               HULL_AGENT_BINARY},
      .fds = {{1, log_fd.get()}, {2, log_fd.get()}},
      .parent_death_signal = SIGKILL,
  });
  if (!pid) {
    *why = "tools/guest-image: " + pid.error().ToString();
    return std::nullopt;
  }
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Result<std::string> text = ReadFile(log);
    *why = "tools/guest-image failed: " + (text ? *text : std::string("(no log)"));
    return std::nullopt;
  }
  Result<std::string> env = ReadFile(out + "/image.env");
  if (!env) {
    *why = "no image.env: " + env.error().ToString();
    return std::nullopt;
  }
  std::map<std::string, std::string> vars;
  std::istringstream in(*env);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return GuestImage{vars["HULL_GUEST_KERNEL"], vars["HULL_GUEST_INITRAMFS"],
                    vars["HULL_GUEST_KERNEL_RELEASE"]};
}

// The host's TSC rate in kHz: microvm has no timer to calibrate it against
// under TCG, and the guest hangs without tsc_early_khz= (docs/vm.md).
std::string TscKhz() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) == 0) {
      double mhz = std::stod(line.substr(line.find(':') + 1));
      return std::to_string(static_cast<long>(mhz * 1000));
    }
  }
  return "";
}

// One QEMU guest, killed and cleaned up (socket, console, directory) when
// dropped.
class Guest {
 public:
  static std::unique_ptr<Guest> Boot(const GuestImage& image, const std::string& share = {}) {
    auto guest = std::unique_ptr<Guest>(new Guest);
    char tmpl[] = "/tmp/hull-agent-vm.XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    guest->dir_ = tmpl;
    std::string append =
        "console=ttyS0 quiet panic=-1 mitigations=off cryptomgr.notests tsc=reliable "
        "no_timer_check tsc_early_khz=" +
        TscKhz();
    // One option and its value a line.
    // clang-format off
    std::vector<std::string> argv = {
        "/usr/bin/qemu-system-x86_64",
        "-M", "microvm",
        "-global", "virtio-mmio.force-legacy=false",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-accel", "tcg,thread=multi", "-cpu", "max",
        "-smp", std::to_string(kCpus), "-m", std::to_string(kMemMiB),
        "-kernel", image.kernel, "-initrd", image.initramfs, "-append", append,
        "-chardev", "file,id=console,path=" + guest->dir_ + "/console",
        "-serial", "chardev:console",
        "-device", "virtio-serial-device,id=vser",
        "-chardev", "socket,id=agent,path=" + guest->socket() + ",server=on,wait=off",
        "-device", "virtserialport,bus=vser.0,chardev=agent,name=hull.agent",
    };
    // clang-format on
    if (!share.empty()) {
      argv.insert(argv.end(),
                  {"-fsdev", "local,id=pod,path=" + share + ",security_model=none,multidevs=remap",
                   "-device", "virtio-9p-device,fsdev=pod,mount_tag=hullpod"});
    }
    std::string log = guest->dir_ + "/qemu.log";
    UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    guest->started_ = Clock::now();
    Result<pid_t> pid = Spawn(SpawnOptions{.argv = argv,
                                           .fds = {{1, log_fd.get()}, {2, log_fd.get()}},
                                           .parent_death_signal = SIGKILL});
    EXPECT_TRUE(pid.has_value()) << pid.error().ToString();
    guest->pid_ = pid.value_or(-1);
    return guest;
  }

  ~Guest() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string socket() const { return dir_ + "/agent.sock"; }
  std::string dir() const { return dir_; }
  Clock::time_point started() const { return started_; }
  pid_t pid() const { return pid_; }

  // Connects hull's ttrpc client to the chardev socket (QEMU creates it
  // while starting up).
  std::unique_ptr<ttrpc::Client> Connect(EventLoop& loop) {
    auto deadline = Clock::now() + 20s;
    for (;;) {
      auto client = ttrpc::Client::Connect(loop, socket());
      if (client) return std::move(*client);
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "connect " << socket() << ": " << client.error().ToString() << "\n"
                      << Diagnostics();
        return nullptr;
      }
      std::this_thread::sleep_for(5ms);
    }
  }

  // Waits for QEMU to exit; its wait status, or nullopt at the deadline.
  std::optional<int> WaitExit(std::chrono::seconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return status;
      }
      if (Clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(10ms);
    }
  }

  // Waits until the guest's console holds `count` lines containing `needle`
  // (the agent logs each host attach and detach there).
  bool WaitForConsole(const std::string& needle, int count, std::chrono::seconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      Result<std::string> text = ReadFile(dir_ + "/console");
      int seen = 0;
      if (text) {
        for (size_t pos = text->find(needle); pos != std::string::npos;
             pos = text->find(needle, pos + 1)) {
          ++seen;
        }
      }
      if (seen >= count) return true;
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
  }

  std::string Diagnostics() const {
    std::string out;
    for (const char* name : {"qemu.log", "console"}) {
      Result<std::string> text = ReadFile(dir_ + "/" + name);
      std::string t = text ? *text : "(none)";
      if (t.size() > 3000) t = "..." + t.substr(t.size() - 3000);
      out += std::string("--- ") + name + ":\n" + t + "\n";
    }
    return out;
  }

 private:
  Guest() = default;
  std::string dir_;
  pid_t pid_ = -1;
  Clock::time_point started_;
};

ttrpc::CallOptions Within(std::chrono::seconds s) {
  return ttrpc::CallOptions{.deadline = Clock::now() + s};
}

Result<pb::HelloResponse> Hello(ttrpc::Client& client, std::chrono::seconds within = 30s) {
  pb::HelloRequest req;
  req.set_host_version("agent_vm_test");
  return client.CallUnarySync<pb::HelloResponse>(kAgent, "Hello", req, Within(within));
}

// The host's rule after (re)connecting (docs/vm.md, "Open"): the first call
// on a new connection may be lost, so Hello is asked again, on the same
// connection, until it is answered.
Result<pb::HelloResponse> HelloUntilAnswered(ttrpc::Client& client) {
  Result<pb::HelloResponse> hello = DeadlineExceededError("not asked");
  for (int attempt = 0; attempt < 10 && !hello.has_value(); ++attempt) {
    hello = Hello(client, 3s);
    if (!hello.has_value() && hello.error().code() != Code::kDeadlineExceeded) break;
  }
  return hello;
}

Status DestroySandbox(ttrpc::Client& client, const std::string& id) {
  pb::DestroySandboxRequest req;
  req.set_sandbox_id(id);
  auto reply =
      client.CallUnarySync<pb::DestroySandboxResponse>(kAgent, "DestroySandbox", req, Within(30s));
  return reply.has_value() ? Status::Ok() : reply.error();
}

class AgentVmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    image_ = BuildImage(&why);
    if (!image_) skip_reason_ = new std::string(why);
  }
  static void TearDownTestSuite() {
    delete skip_reason_;
    skip_reason_ = nullptr;
  }

  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << "agent VM test skipped: " << *skip_reason_;
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.has_value());
    loop_ = std::move(*loop);
  }

  // DestroySandbox answered, then QEMU exits by itself (the guest powered
  // off), and nothing of the guest is left.
  void DestroyAndExpectExit(ttrpc::Client& client, Guest& guest, const std::string& id) {
    Status destroyed = DestroySandbox(client, id);
    ASSERT_TRUE(destroyed.ok()) << destroyed.ToString() << "\n" << guest.Diagnostics();
    std::optional<int> status = guest.WaitExit(kExitDeadline);
    ASSERT_TRUE(status.has_value()) << "QEMU still running after DestroySandbox\n"
                                    << guest.Diagnostics();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
    // The host side sees the port close when QEMU goes.
    EXPECT_TRUE(loop_->RunUntil([&] { return !client.open(); }, 10s));
  }

  static inline std::optional<GuestImage> image_;
  static inline std::string* skip_reason_ = nullptr;
  std::unique_ptr<EventLoop> loop_;
};

TEST_F(AgentVmTest, HelloReportsTheGuestSizeAndDestroySandboxPowersOff) {
  std::string share = fs::temp_directory_path() / "hull-agent-vm-share.XXXXXX";
  ASSERT_NE(::mkdtemp(share.data()), nullptr);
  // Removed however the test ends.
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove_share{share};
  std::string dir;
  {
    auto guest = Guest::Boot(*image_, share);
    dir = guest->dir();
    auto client = guest->Connect(*loop_);
    ASSERT_NE(client, nullptr);

    Result<pb::HelloResponse> hello = Hello(*client, kBootDeadline);
    auto ready = Clock::now() - guest->started();
    ASSERT_TRUE(hello.has_value()) << hello.error().ToString() << "\n" << guest->Diagnostics();
    std::cout << "[ boot     ] QEMU start to agent Hello answered: "
              << std::chrono::duration<double>(ready).count() << " s; MemTotal "
              << hello->memory_bytes() / 1024 << " KiB of " << kMemMiB << " MiB\n";
    EXPECT_EQ(hello->version(), "0.1.0");
    EXPECT_EQ(hello->vcpus(), static_cast<uint32_t>(kCpus));
    // The kernel keeps 46-81 MiB of -m for itself (docs/vm.md): MemTotal is
    // below -m, and not by more than 96 MiB.
    EXPECT_LT(hello->memory_bytes(), uint64_t{kMemMiB} << 20);
    EXPECT_GT(hello->memory_bytes(), uint64_t{kMemMiB - 96} << 20);
    EXPECT_LE(hello->memory_available_bytes(), hello->memory_bytes());
    EXPECT_EQ(hello->kernel_release(), image_->release);
    EXPECT_EQ(hello->pid(), 1u);
    EXPECT_EQ(hello->sandbox_id(), "");

    pb::CreateSandboxRequest create;
    create.set_sandbox_id("pod-1");
    create.set_hostname("pod-one");
    create.set_share_tag("hullpod");
    create.set_share_path("/run/hull/pod");
    auto created = client->CallUnarySync<pb::CreateSandboxResponse>(kAgent, "CreateSandbox", create,
                                                                    Within(30s));
    ASSERT_TRUE(created.has_value()) << created.error().ToString() << "\n" << guest->Diagnostics();
    // Again with the same id: fine; with another: AlreadyExists.
    created = client->CallUnarySync<pb::CreateSandboxResponse>(kAgent, "CreateSandbox", create,
                                                               Within(30s));
    EXPECT_TRUE(created.has_value());
    create.set_sandbox_id("pod-2");
    created = client->CallUnarySync<pb::CreateSandboxResponse>(kAgent, "CreateSandbox", create,
                                                               Within(30s));
    ASSERT_FALSE(created.has_value());
    EXPECT_EQ(created.error().code(), Code::kAlreadyExists);

    hello = Hello(*client);
    ASSERT_TRUE(hello.has_value()) << hello.error().ToString();
    EXPECT_EQ(hello->sandbox_id(), "pod-1");
    EXPECT_EQ(hello->hostname(), "pod-one");

    // What is not built yet says so.
    pb::ListProcessesRequest list;
    list.set_container_id("c");
    auto listed = client->CallUnarySync<pb::ListProcessesResponse>(kAgent, "ListProcesses", list,
                                                                   Within(30s));
    ASSERT_FALSE(listed.has_value());
    EXPECT_EQ(listed.error().code(), Code::kUnimplemented);

    // The wrong sandbox is not destroyed.
    Status wrong = DestroySandbox(*client, "pod-2");
    EXPECT_EQ(wrong.code(), Code::kNotFound);

    DestroyAndExpectExit(*client, *guest, "pod-1");
  }
  // Nothing left: no QEMU (reaped above), no socket, no run directory.
  EXPECT_FALSE(fs::exists(dir));
}

// Raw bytes on the chardev socket: a frame whose header claims more than the
// ttrpc limit, then a Hello. Returns the two responses' (stream id, body).
std::vector<ttrpc::Frame> OversizedThenHello(const std::string& socket_path) {
  std::vector<ttrpc::Frame> frames;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval tv{.tv_sec = 60, .tv_usec = 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  ttrpc::AppendFrame(&out, 1, ttrpc::MessageType::kRequest, 0,
                     std::string(ttrpc::kMaxMessageSize + 1, 'x'));
  ::ttrpc::Request hello;
  hello.set_service(kAgent);
  hello.set_method("Hello");
  ttrpc::AppendFrame(&out, 3, ttrpc::MessageType::kRequest, 0, hello.SerializeAsString());
  size_t off = 0;
  while (off < out.size()) {
    ssize_t n = ::send(fd.get(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      ADD_FAILURE() << "send: " << errno;
      return frames;
    }
    off += static_cast<size_t>(n);
  }
  ttrpc::FrameDecoder decoder;
  while (frames.size() < 2) {
    char buf[4096];
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) {
      ADD_FAILURE() << "recv: " << (n == 0 ? "EOF" : std::to_string(errno));
      break;
    }
    decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
    while (auto f = decoder.Next()) frames.push_back(std::move(*f));
  }
  return frames;
}

TEST_F(AgentVmTest, HostReconnectsAndTheAgentKeepsServing) {
  auto guest = Guest::Boot(*image_);
  {
    auto first = guest->Connect(*loop_);
    ASSERT_NE(first, nullptr);
    Result<pb::HelloResponse> hello = Hello(*first, kBootDeadline);
    ASSERT_TRUE(hello.has_value()) << hello.error().ToString() << "\n" << guest->Diagnostics();
    pb::CreateSandboxRequest create;
    create.set_sandbox_id("pod-r");
    auto created = first->CallUnarySync<pb::CreateSandboxResponse>(kAgent, "CreateSandbox", create,
                                                                   Within(30s));
    ASSERT_TRUE(created.has_value()) << created.error().ToString();
  }  // the host closes its end: the agent sees the port hang up
  ASSERT_TRUE(guest->WaitForConsole("host detached", 1, 30s)) << guest->Diagnostics();

  // Each new host connection is a fresh ttrpc session (stream ids from 1
  // again) and the agent still knows its sandbox. The test waits for the
  // agent to log each hangup before reconnecting: a host that reconnects
  // before the agent has read the hangup is the session-restart path, tested
  // in tests/unit/agent/port_server_test.cc and below.
  for (int round = 0; round < 3; ++round) {
    auto again = guest->Connect(*loop_);
    ASSERT_NE(again, nullptr);
    Result<pb::HelloResponse> hello = Hello(*again);
    ASSERT_TRUE(hello.has_value()) << "round " << round << ": " << hello.error().ToString() << "\n"
                                   << guest->Diagnostics();
    EXPECT_EQ(hello->sandbox_id(), "pod-r");
    again.reset();
    ASSERT_TRUE(guest->WaitForConsole("host detached", round + 2, 30s)) << guest->Diagnostics();
  }

  // Over the limit: refused with ResourceExhausted, its body skipped, and
  // the next frame on the same connection is served.
  std::vector<ttrpc::Frame> frames = OversizedThenHello(guest->socket());
  ASSERT_EQ(frames.size(), 2u) << guest->Diagnostics();

  ::ttrpc::Response refused;
  ASSERT_TRUE(refused.ParseFromString(frames[0].body));
  EXPECT_EQ(frames[0].header.stream_id, 1u);
  EXPECT_EQ(refused.status().code(), static_cast<int>(Code::kResourceExhausted));
  ::ttrpc::Response answered;
  ASSERT_TRUE(answered.ParseFromString(frames[1].body));
  EXPECT_EQ(frames[1].header.stream_id, 3u);
  EXPECT_EQ(answered.status().code(), 0);
  pb::HelloResponse hello;
  ASSERT_TRUE(hello.ParseFromString(answered.payload()));
  EXPECT_EQ(hello.sandbox_id(), "pod-r");

  ASSERT_TRUE(guest->WaitForConsole("host detached", 5, 30s)) << guest->Diagnostics();

  // Reconnecting at once, before the agent can have read the hangup: the
  // first call may be lost (docs/vm.md, "Open"), so the host asks Hello again
  // on the same connection until it is answered, as the backend will.
  for (int round = 0; round < 3; ++round) {
    auto again = guest->Connect(*loop_);
    ASSERT_NE(again, nullptr);
    Result<pb::HelloResponse> hello = HelloUntilAnswered(*again);
    ASSERT_TRUE(hello.has_value())
        << "immediate round " << round << ": " << hello.error().ToString() << "\n"
        << guest->Diagnostics();
    EXPECT_EQ(hello->sandbox_id(), "pod-r");
  }

  auto last = guest->Connect(*loop_);
  ASSERT_NE(last, nullptr);
  ASSERT_TRUE(HelloUntilAnswered(*last).has_value()) << guest->Diagnostics();
  DestroyAndExpectExit(*last, *guest, "pod-r");
}

// The boot measurement behind docs/vm.md and docs/benchmarks.md: QEMU start
// to the agent's first Hello answer, HULL_AGENT_BOOT_RUNS times in a row.
TEST_F(AgentVmTest, BootToAgentReady) {
  const char* runs_env = std::getenv("HULL_AGENT_BOOT_RUNS");
  if (runs_env == nullptr) GTEST_SKIP() << "set HULL_AGENT_BOOT_RUNS=N to measure boots";
  int runs = std::max(1, std::atoi(runs_env));
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    auto guest = Guest::Boot(*image_);
    auto client = guest->Connect(*loop_);
    ASSERT_NE(client, nullptr);
    Result<pb::HelloResponse> hello = Hello(*client, kBootDeadline);
    ASSERT_TRUE(hello.has_value()) << hello.error().ToString() << "\n" << guest->Diagnostics();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - guest->started()).count());
    DestroyAndExpectExit(*client, *guest, "bench");
    std::cout << "[ boot     ] run " << i + 1 << ": " << seconds.back() << " s\n";
  }
  std::sort(seconds.begin(), seconds.end());
  std::cout << "[ boot     ] " << runs << " boots, QEMU start to agent ready: min "
            << seconds.front() << " s, median " << seconds[seconds.size() / 2] << " s, max "
            << seconds.back() << " s\n";
}

}  // namespace
}  // namespace hull::itest
