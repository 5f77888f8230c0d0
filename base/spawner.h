// Spawner: a small privileged helper process that starts hull's children for
// a confined server (docs/security.md). The server forks it before it drops
// its capabilities and installs its seccomp filter, so what the spawner
// starts inherits neither. The spawner is the children's parent and a child
// subreaper (container processes runc daemonizes are reparented to it); it
// reaps them and sends each exit, in reaping order, to the server, whose
// Reaper delivers it as if it had reaped it itself.
//
// Two SOCK_SEQPACKET channels: requests (one call at a time, the server
// blocks for the reply, as Spawn() blocks for exec) and exits (the spawner
// writes, the server's loop reads). Descriptors travel as SCM_RIGHTS.
// SpawnerClient lives on the server's loop thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/spawn.h"
#include "base/spawner_wire.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace hull {

// A named way to start a child that is not an exec (hull's pause process is
// a clone() running hull's own code). Entries are fixed when the spawner is
// forked: the server can only name one by its index, never pass code. `run`
// gets the caller's payload and descriptors and returns the child's pid.
// An entry that does privileged work for the server instead of starting a
// child (SpawnerClient::Call) answers with data and descriptors.
struct SpawnerReply {
  std::string data;
  std::vector<UniqueFd> fds;
};

struct SpawnerEntry {
  std::string name;
  std::function<Result<pid_t>(std::string_view payload, std::vector<UniqueFd>& fds)> run;
  // Set instead of `run` for an entry called with SpawnerClient::Call.
  std::function<Result<SpawnerReply>(std::string_view payload, std::vector<UniqueFd>& fds)> call;
};

// What the spawner checks before every Spawn: OK to start `options`, or the
// error the server gets back (and nothing is started). Runs in the spawner.
using SpawnCheck = std::function<Status(const SpawnOptions& options)>;

// One exit the spawner reaped.
struct SpawnerExit {
  pid_t pid = 0;
  int wait_status = 0;
};

class SpawnerClient {
 public:
  // Forks the spawner. `keep_fds` are the caller's descriptors the spawner
  // keeps open (its log); every other one is closed in it. `check`, when
  // set, decides every Spawn request (entries check their own payloads).
  static Result<std::unique_ptr<SpawnerClient>> Start(std::vector<SpawnerEntry> entries,
                                                      std::vector<int> keep_fds = {},
                                                      SpawnCheck check = nullptr);
  ~SpawnerClient();
  SpawnerClient(const SpawnerClient&) = delete;
  SpawnerClient& operator=(const SpawnerClient&) = delete;

  // Spawn() done by the spawner: same options, same errors.
  Result<pid_t> Spawn(const SpawnOptions& options);
  // Runs entry `index` in the spawner with `payload` and `fds`.
  Result<pid_t> Run(uint32_t index, std::string_view payload, const std::vector<int>& fds);
  // Calls entry `index` (one with `call`) and returns its reply.
  Result<SpawnerReply> Call(uint32_t index, std::string_view payload, const std::vector<int>& fds);

  // The exits channel: readable when exits are waiting. Non-blocking.
  int exits_fd() const { return exits_.get(); }
  // Appends every exit that is waiting to `exits`. An error or EOF means the
  // spawner is gone; the exits read before it are still appended.
  Status ReadExits(std::vector<SpawnerExit>& exits);

  pid_t pid() const { return pid_; }

 private:
  SpawnerClient() = default;
  Result<spawner_wire::Received> Request(std::string request, const std::vector<int>& fds);

  pid_t pid_ = -1;
  UniqueFd requests_;
  UniqueFd exits_;
};

}  // namespace hull
