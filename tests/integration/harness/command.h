// Running host commands from integration tests: RunCommand() for one that
// finishes (captures stdout/stderr, kills on timeout) and BackgroundCommand for
// one that runs alongside the test (`ctr events`, an attached `ctr run`).
// Every child leads its own process group; a timeout or Stop() signals the
// whole group, so nothing it forked outlives the test by accident.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/integration/harness/spawn_internal.h"

namespace hull::itest {

struct CommandResult {
  // The exit code, 128+N when killed by signal N, 127 when it could not start.
  int exit_code = -1;
  std::string out, err;
  bool timed_out = false;

  bool ok() const { return exit_code == 0 && !timed_out; }
  // "exit 1\nstdout: ...\nstderr: ..." for assertion messages.
  std::string Describe() const;
};

// Runs argv (PATH lookup), writes stdin_data to its stdin then closes it, and
// collects its output until it exits. On timeout the process group is killed
// and timed_out is set. extra_env entries ("KEY=VALUE") replace or extend the
// inherited environment. (Not named `Run`: inside a TEST body that name is
// testing::Test::Run.)
CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60),
                         const std::string& stdin_data = "",
                         const std::vector<std::string>& extra_env = {});

// A command running in the background; a reader thread collects its output.
// Output()/WaitForOutput() may be called from any thread; Wait()/Stop() from
// the owning thread only. Destruction stops it.
class BackgroundCommand {
 public:
  // Returns nullptr when the command cannot be started (reason in *error).
  static std::unique_ptr<BackgroundCommand> Start(const std::vector<std::string>& argv,
                                                  const std::vector<std::string>& extra_env = {},
                                                  std::string* error = nullptr);
  ~BackgroundCommand();
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  // Everything written to stdout / stderr so far.
  std::string Output();
  std::string ErrorOutput();

  // True once stdout contains `needle`; false on timeout or when the command
  // closed its stdout without writing it.
  bool WaitForOutput(std::string_view needle, std::chrono::milliseconds timeout);

  // Waits for the command to exit by itself; its decoded exit code, or
  // nullopt on timeout. After it returns a value, Stop() returns the same.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

  // SIGTERM to the group, SIGKILL after `grace`; reaps and joins the reader.
  // Returns the decoded exit code (143 for a SIGTERM death). Idempotent.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  pid_t pid() const { return child_.pid; }

 private:
  BackgroundCommand() = default;
  void ReadLoop();
  void FinishReader();

  internal::Child child_;
  internal::Fd wake_r_, wake_w_;  // tells the reader to drain and quit
  std::thread reader_;
  std::optional<int> exit_code_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::string out_, err_;
  bool out_closed_ = false;
};

}  // namespace hull::itest
