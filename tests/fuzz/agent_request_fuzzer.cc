// hull's agent protocol (hull.agent.v1.Agent), both ends:
//
// - The agent (first byte's top bit clear): up to eight Request frames, sent
//   one after the other on one connection through the real ttrpc server
//   into the real AgentService and ContainerService, each answered before
//   the next is sent. The machine is not touched: the sandbox hooks
//   (hostname, 9p mount, network, power-off) only record, and the containers'
//   backend runs nothing (PretendBackend: a create "succeeds" with a pid no
//   process can have, so the later calls meet a container; an exec is
//   refused, so no exec ever gets a pid the agent would signal or reap).
//   State goes to a private temporary directory. Every call must be
//   answered, the connection let go, and the state directory left empty.
// - The host (top bit set): AgentClient, as the vm backend uses it, sends
//   one call and gets the rest of the input back as the body of a frame
//   (a Response, or whatever the input makes of it); the typed answer must
//   come exactly once, an error when the bytes are not a valid answer.
//   (The vm backend's own checks of answers, e.g. a pid of 0, are inline in
//   its callbacks and need a booted VM: tests/integration covers them.)
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent_service.h"
#include "agent/container_service.h"
#include "base/event_loop.h"
#include "base/reaper.h"
#include "google/protobuf/any.pb.h"
#include "hull/agent/v1/agent.pb.h"
#include "runtime/backend.h"
#include "shim/backend/vm/agent_client.h"
#include "ttrpc/client.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"
#include "ttrpc/request.pb.h"
#include "ttrpc/server.h"

using namespace hull;
namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;

namespace {

constexpr const char* kMethods[] = {
    "Hello",          "CreateSandbox",   "DestroySandbox",  "CreateContainer", "StartContainer",
    "ExecProcess",    "SignalProcess",   "WaitProcess",     "RemoveContainer", "WriteStdin",
    "CloseStdin",     "ReadStdout",      "ReadStderr",      "TtyWinResize",    "ListProcesses",
    "PauseContainer", "ResumeContainer", "UpdateContainer", "StatsContainer",  "GetOOMEvent",
    "NoSuchMethod"};

// Above the kernel's largest pid_max (2^22): no process has it.
constexpr pid_t kPretendPid = (1 << 22) + 1;
// Each call's ttrpc timeout: long-polls (GetOOMEvent, WaitProcess,
// ReadStdout) and a terminal's pty master that never comes are answered
// DeadlineExceeded after it.
constexpr std::chrono::milliseconds kCallTimeout = 40ms;
constexpr size_t kMaxCalls = 8;

// A Backend that runs nothing. Answers come on a later loop turn, as the
// Backend contract asks; `pending` counts those not yet delivered, so the
// fuzzer can let them all run before the service is destroyed.
class PretendBackend final : public hull::runtime::Backend {
 public:
  PretendBackend(EventLoop& loop, int& pending) : loop_(loop), pending_(pending) {}

  void PrepareSandbox(const hull::runtime::SandboxRequest&, hull::runtime::Done done) override {
    Ok(done);
  }
  void TeardownSandbox(hull::runtime::Done done) override { Ok(done); }
  void Release(const std::string&) override {}
  void Create(const hull::runtime::CreateRequest& req, hull::runtime::Done done) override {
    Status written = Status::Ok();
    if (FILE* f = std::fopen(req.pid_file.c_str(), "we")) {
      std::fprintf(f, "%d", kPretendPid);
      std::fclose(f);
    } else {
      written = InternalError("pretend: cannot write " + req.pid_file);
    }
    Answer(std::move(done), written);
  }
  void Start(const std::string&, hull::runtime::Done done) override { Ok(done); }
  void Exec(const hull::runtime::ExecRequest&, hull::runtime::Done done) override {
    Answer(std::move(done), FailedPreconditionError("pretend: no exec"));
  }
  void Kill(const std::string&, int, bool, hull::runtime::Done done) override { Ok(done); }
  void Delete(const std::string&, bool, hull::runtime::Done done) override { Ok(done); }
  void Pause(const std::string&, hull::runtime::Done done) override { Ok(done); }
  void Resume(const std::string&, hull::runtime::Done done) override { Ok(done); }
  void Update(const std::string&, const std::string&, hull::runtime::Done done) override {
    Ok(done);
  }
  void Ps(const std::string&, std::function<void(Result<std::vector<pid_t>>)> done) override {
    Later([done = std::move(done)] { done(std::vector<pid_t>{kPretendPid}); });
  }
  void Checkpoint(const hull::runtime::CheckpointRequest&, hull::runtime::Done done) override {
    Answer(std::move(done), UnimplementedError("pretend"));
  }
  void Stats(const std::string&, pid_t,
             std::function<void(Result<google::protobuf::Any>)> done) override {
    Later([done = std::move(done)] {
      google::protobuf::Any any;
      any.set_type_url("io.containerd.cgroups.v2.Metrics");
      done(std::move(any));
    });
  }
  Result<EventHandle> WatchOom(const std::string&, pid_t, std::function<void()>) override {
    return loop_.AddTimer(std::chrono::hours(24), [] {});
  }
  Result<uint64_t> OomKillCount(const std::string&) override { return uint64_t{0}; }
  void WatchInitExit(const std::string&, pid_t, std::function<void(int)>) override {}
  void WatchExecExit(const std::string&, const std::string&, pid_t,
                     std::function<void(int)>) override {}
  void ForgetExit(const std::string&, const std::string&, pid_t) override {}
  void SignalExec(const std::string&, const std::string&, pid_t, int,
                  hull::runtime::Done done) override {
    Ok(done);
  }
  void ResizeTerminal(const std::string&, const std::string&, uint32_t, uint32_t) override {}
  std::string name() const override { return "pretend"; }

 private:
  void Later(std::function<void()> task) {
    ++pending_;
    loop_.Post([&pending = pending_, task = std::move(task)] {
      --pending;
      task();
    });
  }
  void Answer(hull::runtime::Done done, Status status) {
    Later([done = std::move(done), status = std::move(status)] { done(status); });
  }
  void Ok(hull::runtime::Done& done) { Answer(std::move(done), Status::Ok()); }

  EventLoop& loop_;
  int& pending_;
};

struct Shared {
  std::unique_ptr<EventLoop> loop = std::move(*EventLoop::Create());
  std::unique_ptr<Reaper> reaper = std::move(*Reaper::Create(*loop));
  std::string dir;
  // HULL_FUZZ_TRACE=1: each call's method and answer on stderr (for seeds).
  bool trace = std::getenv("HULL_FUZZ_TRACE") != nullptr;
  Shared() {
    static char tmpl[] = "/tmp/hull-agent-fuzz.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) __builtin_trap();
    dir = tmpl;
    // The directory goes when the fuzzer exits normally (not after a crash).
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(tmpl, ec);
    });
  }
};

// One agent, made afresh for each input (so that one input's sandbox or
// containers do not decide the next one's answers).
struct Agent {
  int backend_pending = 0;
  int powered_off = 0;
  hull::ttrpc::Server server;
  agent::AgentService sandbox;
  agent::ContainerService containers;
  Agent(Shared& s)
      : server(*s.loop),
        sandbox(*s.loop, agent::AgentHooks{
                             .power_off = [this] { ++powered_off; },
                             .mount_share = [](const std::string&,
                                               const std::string&) { return Status::Ok(); },
                             .set_hostname = [](const std::string&) { return Status::Ok(); },
                             // Never the host's network: only the
                             // request's decoding is fuzzed.
                             .configure_network = [](const pb::Network&) { return Status::Ok(); }}),
        containers(*s.loop, *s.reaper,
                   agent::ContainerOptions{.runtime = "/nonexistent/crun",
                                           .runtime_root = s.dir + "/crun",
                                           .state_dir = s.dir + "/state"},
                   std::make_unique<PretendBackend>(*s.loop, backend_pending)) {
    sandbox.Register(server);
    containers.Register(server);
  }
};

// Sends `frame` on `fd` and runs the loop until one whole frame has come
// back (or the frame could not be sent and the peer closed).
std::optional<hull::ttrpc::Frame> RoundTrip(EventLoop& loop, int fd, const std::string& frame,
                                            hull::ttrpc::FrameDecoder& decoder) {
  size_t sent = 0;
  // Wakes the loop when an answer arrives; the condition reads it.
  EventHandle watch = loop.WatchFd(fd, kReadable, [](uint32_t) {});
  std::optional<hull::ttrpc::Frame> reply;
  bool done = loop.RunUntil(
      [&] {
        while (sent < frame.size()) {
          ssize_t n =
              ::send(fd, frame.data() + sent, frame.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
        if (!reply) reply = decoder.Next();
        return reply.has_value();
      },
      10s);
  if (!done) __builtin_trap();  // every call is answered
  return reply;
}

// Agent side: records of [method byte][length, 2 bytes little-endian][payload].
void FuzzAgent(Shared& s, const uint8_t* data, size_t size) {
  auto agent = std::make_unique<Agent>(s);
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) __builtin_trap();
  UniqueFd ours(fds[1]);
  if (!agent->server.ServeConnection(UniqueFd(fds[0])).ok()) __builtin_trap();
  if (!SetNonBlocking(ours.get()).ok()) __builtin_trap();
  hull::ttrpc::FrameDecoder decoder;
  for (uint32_t call = 0; size >= 3 && call < kMaxCalls; ++call) {
    size_t length = std::min<size_t>(data[1] | (data[2] << 8), size - 3);
    ::ttrpc::Request request;
    request.set_service(agent::kAgentService);
    request.set_method(kMethods[data[0] % std::size(kMethods)]);
    request.set_payload(std::string(reinterpret_cast<const char*>(data) + 3, length));
    request.set_timeout_nano(std::chrono::nanoseconds(kCallTimeout).count());
    data += 3 + length;
    size -= 3 + length;
    std::string frame;
    const uint32_t stream = 2 * call + 1;
    hull::ttrpc::AppendFrame(&frame, stream, hull::ttrpc::MessageType::kRequest, 0,
                             request.SerializeAsString());
    std::optional<hull::ttrpc::Frame> reply = RoundTrip(*s.loop, ours.get(), frame, decoder);
    // The answer is this call's: one call at a time.
    if (reply->header.stream_id != stream ||
        reply->header.type != static_cast<uint8_t>(hull::ttrpc::MessageType::kResponse)) {
      __builtin_trap();
    }
    if (s.trace) {
      ::ttrpc::Response response;
      response.ParseFromString(reply->body);
      std::fprintf(stderr, "agent_request_fuzzer: %s -> %d %s\n", request.method().c_str(),
                   response.status().code(), response.status().message().c_str());
    }
  }
  ours.reset();
  if (!s.loop->RunUntil([&] { return agent->server.connection_count() == 0; }, 10s)) {
    __builtin_trap();  // the server lets go of a closed connection
  }
  // The backend's answers still queued run before the service goes (they
  // call back into it), and a DestroySandbox's power-off after its reply.
  bool drained = false;
  s.loop->Post([&] { drained = true; });
  if (!s.loop->RunUntil([&] { return drained && agent->backend_pending == 0; }, 10s)) {
    __builtin_trap();
  }
  agent.reset();
  // Containers left when the agent went keep their directories (a real
  // agent powers off then); the next input starts from an empty state.
  std::error_code ec;
  std::filesystem::remove_all(s.dir + "/state", ec);
}

// Host side: byte 0 picks the call, byte 1 the frame's type and stream
// (0: a Response on the call's stream), the rest is the frame's body.
void FuzzHost(Shared& s, const uint8_t* data, size_t size) {
  if (size < 2) return;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) __builtin_trap();
  UniqueFd ours(fds[1]);
  if (!SetNonBlocking(ours.get()).ok()) __builtin_trap();
  auto client = hull::ttrpc::Client::FromFd(*s.loop, UniqueFd(fds[0]));
  if (!client) __builtin_trap();
  shim::vm::AgentClient agent(std::move(*client));
  int answers = 0;
  // Each answer is read through, as the vm backend would.
  auto call = [&]<typename Resp, typename Req>(const char* method) {
    agent.Call<Resp>(
        method, Req(),
        [&answers](Result<Resp> r) {
          ++answers;
          if (r)
            (void)r->ByteSizeLong();
          else
            (void)r.error().ToString();
        },
        kCallTimeout);
  };
  switch ((data[0] & 0x7f) % 20) {
    case 0: call.operator()<pb::HelloResponse, pb::HelloRequest>("Hello"); break;
    case 1:
      call.operator()<pb::CreateSandboxResponse, pb::CreateSandboxRequest>("CreateSandbox");
      break;
    case 2:
      call.operator()<pb::DestroySandboxResponse, pb::DestroySandboxRequest>("DestroySandbox");
      break;
    case 3:
      call.operator()<pb::CreateContainerResponse, pb::CreateContainerRequest>("CreateContainer");
      break;
    case 4:
      call.operator()<pb::StartContainerResponse, pb::StartContainerRequest>("StartContainer");
      break;
    case 5: call.operator()<pb::ExecProcessResponse, pb::ExecProcessRequest>("ExecProcess"); break;
    case 6:
      call.operator()<pb::SignalProcessResponse, pb::SignalProcessRequest>("SignalProcess");
      break;
    case 7: call.operator()<pb::WaitProcessResponse, pb::WaitProcessRequest>("WaitProcess"); break;
    case 8:
      call.operator()<pb::RemoveContainerResponse, pb::RemoveContainerRequest>("RemoveContainer");
      break;
    case 9: call.operator()<pb::WriteStdinResponse, pb::WriteStdinRequest>("WriteStdin"); break;
    case 10: call.operator()<pb::CloseStdinResponse, pb::CloseStdinRequest>("CloseStdin"); break;
    case 11: call.operator()<pb::ReadStreamResponse, pb::ReadStreamRequest>("ReadStdout"); break;
    case 12: call.operator()<pb::ReadStreamResponse, pb::ReadStreamRequest>("ReadStderr"); break;
    case 13:
      call.operator()<pb::TtyWinResizeResponse, pb::TtyWinResizeRequest>("TtyWinResize");
      break;
    case 14:
      call.operator()<pb::ListProcessesResponse, pb::ListProcessesRequest>("ListProcesses");
      break;
    case 15:
      call.operator()<pb::PauseContainerResponse, pb::PauseContainerRequest>("PauseContainer");
      break;
    case 16:
      call.operator()<pb::ResumeContainerResponse, pb::ResumeContainerRequest>("ResumeContainer");
      break;
    case 17:
      call.operator()<pb::UpdateContainerResponse, pb::UpdateContainerRequest>("UpdateContainer");
      break;
    case 18:
      call.operator()<pb::StatsContainerResponse, pb::StatsContainerRequest>("StatsContainer");
      break;
    default: call.operator()<pb::GetOOMEventResponse, pb::GetOOMEventRequest>("GetOOMEvent"); break;
  }
  // The request the client sent: its stream id.
  hull::ttrpc::FrameDecoder decoder;
  std::optional<hull::ttrpc::Frame> request;
  EventHandle watch = s.loop->WatchFd(ours.get(), kReadable, [](uint32_t) {});
  if (!s.loop->RunUntil(
          [&] {
            char buf[4096];
            ssize_t n = ::recv(ours.get(), buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
            if (!request) request = decoder.Next();
            return request.has_value() || answers > 0;
          },
          10s)) {
    __builtin_trap();
  }
  watch.Reset();
  if (request) {
    const uint8_t how = data[1];
    uint32_t stream = request->header.stream_id + (how >> 2);
    auto type = (how & 3) == 0 ? hull::ttrpc::MessageType::kResponse
                               : static_cast<hull::ttrpc::MessageType>(how & 3);
    std::string frame;
    hull::ttrpc::AppendFrame(&frame, stream, type, 0,
                             std::string_view(reinterpret_cast<const char*>(data) + 2, size - 2));
    size_t sent = 0;
    while (sent < frame.size()) {
      ssize_t n =
          ::send(ours.get(), frame.data() + sent, frame.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n <= 0) break;  // the client closed, or its buffer is full: the deadline answers
      sent += static_cast<size_t>(n);
    }
  }
  if (!s.loop->RunUntil([&] { return answers > 0; }, 10s)) __builtin_trap();
  agent.Close();
  // Nothing answers twice, not even on a later turn.
  bool turned = false;
  s.loop->Post([&] { turned = true; });
  s.loop->RunUntil([&] { return turned; }, 10s);
  if (answers != 1) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Shared* shared = new Shared();  // lives for the whole run
  if (size == 0) return 0;
  if (size > 70'000) return 0;
  if (data[0] & 0x80) {
    FuzzHost(*shared, data, size);
  } else {
    FuzzAgent(*shared, data + 1, size - 1);
  }
  return 0;
}
