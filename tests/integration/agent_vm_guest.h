// The guest that the agent's VM tests boot: tools/guest-image's image
// (built or found cached), one QEMU `-M microvm` under TCG with the agent's
// virtio-serial port on a chardev socket and, optionally, a 9p share, and
// the first calls every host makes. Shared by agent_vm_test and
// agent_containers_vm_test; the test's thread drives it (no loop of its own).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "tests/integration/guest_image.h"
#include "ttrpc/client.h"

namespace hull::itest {

namespace fs = std::filesystem;
namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr char kAgent[] = "hull.agent.v1.Agent";
inline constexpr int kCpus = 2;
inline constexpr int kMemMiB = 256;
// Boots take 1.3 s on an idle host and up to ~11 s with other builds on the
// two cores (docs/vm.md): generous deadlines, never fixed sleeps.
inline constexpr auto kBootDeadline = 90s;
inline constexpr auto kExitDeadline = 30s;

struct GuestImage {
  std::string kernel;
  std::string initramfs;
  std::string release;
};

// Builds (or finds cached) the guest image; nullopt and `why` on failure.
inline std::optional<GuestImage> BuildImage(std::string* why) {
  std::optional<std::map<std::string, std::string>> vars = BuildGuestImage(why);
  if (!vars) return std::nullopt;
  return GuestImage{(*vars)["HULL_GUEST_KERNEL"], (*vars)["HULL_GUEST_INITRAMFS"],
                    (*vars)["HULL_GUEST_KERNEL_RELEASE"]};
}

// A suite that boots the guest: the image is built once per suite, and
// every test skips, saying why, where it cannot be (no root, no QEMU, the
// image tool failed). Derived SetUp()s call this one first and return when
// IsSkipped().
class GuestImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    image_ = BuildImage(&why);
    if (!image_) skip_reason_ = why;
  }
  static void TearDownTestSuite() { skip_reason_.reset(); }

  void SetUp() override {
    if (skip_reason_) GTEST_SKIP() << "agent VM test skipped: " << *skip_reason_;
  }

  static inline std::optional<GuestImage> image_;
  static inline std::optional<std::string> skip_reason_;
};

// The host's TSC rate in kHz: microvm has no timer to calibrate it against
// under TCG, and the guest hangs without tsc_early_khz= (docs/vm.md).
inline std::string TscKhz() {
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

inline ttrpc::CallOptions Within(std::chrono::seconds s) {
  return ttrpc::CallOptions{.deadline = Clock::now() + s};
}

inline Result<pb::HelloResponse> Hello(ttrpc::Client& client, std::chrono::seconds within = 30s) {
  pb::HelloRequest req;
  req.set_host_version("agent_vm_test");
  return client.CallUnarySync<pb::HelloResponse>(kAgent, "Hello", req, Within(within));
}

// The host's rule after (re)connecting (docs/vm.md, "Open"): the first call
// on a new connection may be lost, so Hello is asked again, on the same
// connection, until it is answered.
inline Result<pb::HelloResponse> HelloUntilAnswered(ttrpc::Client& client) {
  Result<pb::HelloResponse> hello = DeadlineExceededError("not asked");
  for (int attempt = 0; attempt < 10 && !hello.has_value(); ++attempt) {
    hello = Hello(client, 3s);
    if (!hello.has_value() && hello.error().code() != Code::kDeadlineExceeded) break;
  }
  return hello;
}

inline Status DestroySandbox(ttrpc::Client& client, const std::string& id) {
  pb::DestroySandboxRequest req;
  req.set_sandbox_id(id);
  auto reply =
      client.CallUnarySync<pb::DestroySandboxResponse>(kAgent, "DestroySandbox", req, Within(30s));
  return reply.has_value() ? Status::Ok() : reply.error();
}

}  // namespace hull::itest
