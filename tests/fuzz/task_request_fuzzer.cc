// Every Task request's decode-and-validate path, the way containerd reaches
// it: a ttrpc Request frame (method chosen by the first byte, payload the
// rest) through the real ttrpc server into the real TaskService. The
// options resolver is the real one over the request's options, then refuses,
// so no container is ever created and nothing is spawned; every other call
// meets no container. Each input gets exactly one reply.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/logging.h"
#include "base/reaper.h"
#include "shim/config/config.h"
#include "shim/context.h"
#include "shim/pod/pod.h"
#include "shim/publisher.h"
#include "shim/task_service.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"
#include "ttrpc/request.pb.h"
#include "ttrpc/server.h"

using namespace hull;
using namespace hull::shim;

namespace {

constexpr const char* kMethods[] = {
    "Create", "Start", "Delete",    "State",   "Pids",   "Pause", "Resume", "Checkpoint",
    "Kill",   "Exec",  "ResizePty", "CloseIO", "Update", "Wait",  "Stats",  "Connect"};

class NullSink : public EventSink {
 public:
  void Send(const std::string&, const google::protobuf::Any&,
            std::function<void(Status)> done) override {
    done(Status::Ok());
  }
};

struct World {
  std::unique_ptr<EventLoop> loop = std::move(*EventLoop::Create());
  std::unique_ptr<Reaper> reaper = std::move(*Reaper::Create(*loop));
  Logger log = Logger::Null();
  EventPublisher publisher{*loop, log, std::make_unique<NullSink>()};
  ShimContext ctx{
      .loop = *loop, .reaper = *reaper, .log = log, .publisher = publisher, .ns = "fuzz"};
  // No container ever gets a backend: the fuzzer reaches decode, validation
  // and routing, never a runtime.
  Pod pod{ctx,
          [](const RuntimeOptions&) -> Result<std::unique_ptr<Backend>> {
            return FailedPreconditionError("fuzz: no backend");
          },
          std::nullopt};
  // Shutdown and deletes are reported to it; ending the server does nothing.
  ServerLifetime lifetime{*loop, [this] { return pod.AllDeleted(); }, [] {}};
  TaskService tasks{
      ctx, pod,
      [](const google::protobuf::Any& options, const std::string&) -> Result<ShimConfig> {
        ShimConfig config;
        HULL_RETURN_IF_ERROR(ApplyOptions(options, config));
        return FailedPreconditionError("fuzz: no containers");
      },
      lifetime};
  hull::ttrpc::Server server{*loop};
  World() { tasks.RegisterWith(server); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();  // lives for the whole run
  if (size == 0) return 0;
  ::ttrpc::Request request;
  request.set_service(data[0] & 0x80 ? "containerd.task.v3.Task" : "containerd.task.v2.Task");
  request.set_method(kMethods[(data[0] & 0x7f) % std::size(kMethods)]);
  request.set_payload(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  request.set_timeout_nano(5'000'000'000);
  std::string frame;
  hull::ttrpc::AppendFrame(&frame, 1, hull::ttrpc::MessageType::kRequest, 0,
                           request.SerializeAsString());
  // One send fits a socketpair's buffer, so no write readiness is needed.
  if (frame.size() > 100'000) return 0;

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) __builtin_trap();
  UniqueFd ours(fds[1]);
  if (!world->server.ServeConnection(UniqueFd(fds[0])).ok()) __builtin_trap();
  if (!SetNonBlocking(ours.get()).ok()) __builtin_trap();
  size_t sent = 0;
  hull::ttrpc::FrameDecoder decoder;
  // Wakes the loop when the reply arrives; the condition below reads it.
  EventHandle watch = world->loop->WatchFd(ours.get(), kReadable, [](uint32_t) {});
  std::optional<hull::ttrpc::Frame> reply;
  bool done = world->loop->RunUntil(
      [&] {
        while (sent < frame.size()) {
          ssize_t n = ::send(ours.get(), frame.data() + sent, frame.size() - sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
        char buf[4096];
        ssize_t n = ::recv(ours.get(), buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
        if (!reply) reply = decoder.Next();
        return reply.has_value();
      },
      std::chrono::seconds(10));
  if (!done) __builtin_trap();  // every call is answered
  watch.Reset();
  ours.reset();
  if (!world->loop->RunUntil([&] { return world->server.connection_count() == 0; },
                             std::chrono::seconds(10))) {
    __builtin_trap();  // the server lets go of a closed connection
  }
  return 0;
}
