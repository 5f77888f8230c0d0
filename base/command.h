// Command: one run of an external program (a runtime CLI call such as
// `runc start`) as loop events. It spawns the program, feeds it optional
// stdin bytes, collects stdout/stderr that were not redirected elsewhere, and
// calls `done` once: after the process has exited and its captured output has
// reached EOF. Dropping a Command that is still running kills the process.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "base/spawn.h"

namespace hull {

struct CommandResult {
  int exit_status = 0;  // exit code, or 128 + signal
  std::string out;
  std::string err;
  bool ok() const { return exit_status == 0; }
};

class Command {
 public:
  using Done = std::function<void(CommandResult)>;

  // `options.fds` may map 0/1/2 to descriptors of the caller's (runc create
  // hands its stdio to the container); those not mapped are pipes: stdin gets
  // `stdin_data`, stdout/stderr are captured (up to 4 MiB each).
  static Result<std::unique_ptr<Command>> Start(EventLoop& loop, Reaper& reaper,
                                                SpawnOptions options, std::string stdin_data,
                                                Done done);
  ~Command();

  pid_t pid() const { return child_.pid(); }

 private:
  Command(EventLoop& loop) : loop_(loop) {}
  void OnReadable(int which);
  void OnStdinWritable();
  void MaybeFinish();

  EventLoop& loop_;
  ChildHandle child_;
  UniqueFd stdin_;
  UniqueFd out_[2];
  EventHandle stdin_watch_;
  EventHandle out_watch_[2];
  std::string stdin_data_;
  size_t stdin_written_ = 0;
  CommandResult result_;
  bool exited_ = false;
  Done done_;
};

}  // namespace hull
