// BinaryLogger: a containerd logging binary (binary:// and binary-v2://),
// started for one process. It reads the process's stdout on fd 3 and stderr
// on fd 4, and says it is ready on fd 5. The BinaryLogger owns the child; the
// caller owns the write ends of the two pipes. Dropping a BinaryLogger whose
// child still runs hands the child to the reaper: SIGTERM now, SIGKILL after
// the grace period, from a loop timer (never a blocking wait).
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/unique_fd.h"
#include "shim/stdio/stdio_uri_internal.h"

namespace hull::shim::stdio {

class BinaryLogger {
 public:
  struct Started;

  // Spawns `spec.path` with argv [path, k1, v1, ...], an environment of only
  // CONTAINER_ID and CONTAINER_NAMESPACE, fd 3/4 the read ends of two new
  // pipes and fd 5 the write end of the wait pipe.
  static Result<Started> Start(EventLoop& loop, Reaper& reaper, const LoggerSpec& spec,
                               const std::string& container_id, const std::string& ns,
                               std::chrono::milliseconds stop_grace);
  ~BinaryLogger();
  BinaryLogger(const BinaryLogger&) = delete;
  BinaryLogger& operator=(const BinaryLogger&) = delete;

  // Calls `on_ready` once, from a loop callback, when the logger has written
  // a byte to fd 5 or closed it (OK), or when it closed it without a byte
  // under binary-v2 (an error). The owner may destroy the logger inside.
  void WaitReady(std::function<void(Status)> on_ready);

  // Calls `on_exit` from the reaper when the logger exits (not if dropped).
  // The owner may destroy the logger inside.
  void OnExit(std::function<void()> on_exit) { on_exit_ = std::move(on_exit); }
  bool exited() const { return exited_; }
  pid_t pid() const { return pid_; }

 private:
  BinaryLogger(EventLoop& loop, Reaper& reaper, const LoggerSpec& spec,
               std::chrono::milliseconds stop_grace)
      : loop_(loop), reaper_(reaper), spec_(spec), stop_grace_(stop_grace) {}
  void OnWaitReadable();

  EventLoop& loop_;
  Reaper& reaper_;
  const LoggerSpec spec_;
  const std::chrono::milliseconds stop_grace_;
  pid_t pid_ = 0;
  bool exited_ = false;
  UniqueFd wait_;  // read end of the wait pipe, until the logger is ready
  EventHandle wait_watch_;
  std::function<void(Status)> on_ready_;
  std::function<void()> on_exit_;
};

struct BinaryLogger::Started {
  std::unique_ptr<BinaryLogger> logger;
  UniqueFd stdout_write;  // the logger reads the other end as fd 3
  UniqueFd stderr_write;  // ... and this one's as fd 4
};

}  // namespace hull::shim::stdio
