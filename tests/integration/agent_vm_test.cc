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
#include "tests/integration/agent_vm_guest.h"
#include "ttrpc/client.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"
#include "ttrpc/request.pb.h"

namespace hull::itest {
namespace {

class AgentVmTest : public GuestImageTest {
 protected:
  void SetUp() override {
    GuestImageTest::SetUp();
    if (IsSkipped()) return;
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

    // A container the guest does not run is NotFound.
    pb::ListProcessesRequest list;
    list.set_container_id("c");
    auto listed = client->CallUnarySync<pb::ListProcessesResponse>(kAgent, "ListProcesses", list,
                                                                   Within(30s));
    ASSERT_FALSE(listed.has_value());
    EXPECT_EQ(listed.error().code(), Code::kNotFound);

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
