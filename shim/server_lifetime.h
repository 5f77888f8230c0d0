// ServerLifetime: the one owner of when the shim server ends. The services
// report what containerd did; this decides (docs/start-delete.md, "When the
// server ends"):
//   - the Task API's Shutdown ends the server once every container of the
//     pod is deleted (none being admitted), unless the Sandbox API created
//     the pod: then only ShutdownSandbox ends it;
//   - a Shutdown that came while containers were left (containerd 2.x sends
//     the pod's one Shutdown before the last app container's delete when they
//     all died at once) ends it `shutdown_grace` after the last delete, when
//     still nothing is left (containerd 1.6 sends a Shutdown of its own then);
//   - ShutdownSandbox ends it `linger` after its reply: containerd's ttrpc
//     client can lose a reply that arrives together with the connection's
//     end, and containerd closes the connection itself;
//   - a signal (SIGTERM, SIGINT) or a lost spawner ends it at once.
// `stop` (the server's orderly stop) runs at most once. Loop thread only.
#pragma once

#include <chrono>
#include <functional>

#include "base/event_loop.h"

namespace hull::shim {

class ServerLifetime {
 public:
  struct Timing {
    std::chrono::milliseconds shutdown_grace{2000};
    std::chrono::milliseconds linger{500};  // 0: at once
  };

  // `all_deleted`: whether every container of the pod is deleted and none
  // is being admitted (Pod::AllDeleted).
  ServerLifetime(EventLoop& loop, std::function<bool()> all_deleted, std::function<void()> stop,
                 Timing timing);
  ServerLifetime(EventLoop& loop, std::function<bool()> all_deleted, std::function<void()> stop)
      : ServerLifetime(loop, std::move(all_deleted), std::move(stop), Timing{}) {}
  ServerLifetime(const ServerLifetime&) = delete;
  ServerLifetime& operator=(const ServerLifetime&) = delete;

  // CreateSandbox made the pod: the Task API's Shutdown no longer ends it.
  void SandboxCreated() { held_by_sandbox_api_ = true; }
  // The Task API's Shutdown, answered by the caller; true when it ends the
  // server (the caller answers once the pod is torn down, then calls
  // ShutdownAnswered), false when it is kept for later or ignored.
  bool TaskShutdown();
  void ShutdownAnswered() { End(); }
  // A container was deleted (and dropped from the pod).
  void ContainerDeleted();
  // ShutdownSandbox has answered.
  void SandboxShutDown();
  // A signal, or the spawner is lost.
  void EndNow() { End(); }

  bool ended() const { return ended_; }

 private:
  void End();

  EventLoop& loop_;
  std::function<bool()> all_deleted_;
  std::function<void()> stop_;
  Timing timing_;
  bool held_by_sandbox_api_ = false;
  bool shutdown_pending_ = false;  // a Shutdown came while containers were left
  bool ended_ = false;
  EventHandle timer_;
};

}  // namespace hull::shim
