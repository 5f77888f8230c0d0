// Reaper: the one place hull collects exited children. hull is a child
// subreaper, so container processes that runc daemonizes are reparented to it;
// their exits arrive here like those of hull's own children. On SIGCHLD it
// calls waitpid(-1, WNOHANG) until nothing is left and hands each exit to the
// handler registered for that pid, or keeps it until someone claims it (an
// init can exit before hull has read its pid file).
//
// In a confined server (docs/security.md) the children are the spawner's: the
// Reaper then starts them through it and takes their exits from its exits
// channel, in the order the spawner reaped them, through the same table.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/event_loop.h"
#include "base/spawn.h"
#include "base/spawner.h"

namespace hull {

class Reaper {
 public:
  using ExitHandler = std::function<void(int wait_status)>;

  static Result<std::unique_ptr<Reaper>> Create(EventLoop& loop);
  // Children are started by `spawner` (which outlives the Reaper) and their
  // exits read from it. `on_spawner_lost` runs once if the spawner goes away.
  static Result<std::unique_ptr<Reaper>> CreateWithSpawner(
      EventLoop& loop, SpawnerClient& spawner, std::function<void(Status)> on_spawner_lost);

  // Starts a child whose exit this Reaper will see: Spawn() here, or in the
  // spawner. Register the exit handler before the loop turns again.
  Result<pid_t> Spawn(const SpawnOptions& options);
  // The spawner, when children are started by one.
  SpawnerClient* spawner() const { return spawner_; }

  // Calls `on_exit(wait_status)` once `pid` has exited. An exit reaped before
  // this call is delivered on a later loop turn. Replaces an earlier handler.
  void Watch(pid_t pid, ExitHandler on_exit);
  // Forgets `pid`: its exit, past or future, is discarded.
  void Discard(pid_t pid);
  // The wait status of `pid` if it was reaped and not yet claimed; claims it.
  std::optional<int> TakeExit(pid_t pid);

  // Reaps everything that has exited. Runs on SIGCHLD; callable directly.
  void ReapNow();

  size_t unclaimed_for_testing() const { return unclaimed_.size(); }

 private:
  explicit Reaper(EventLoop& loop) : loop_(loop) {}
  void Deliver(pid_t pid, int status);
  void ReadSpawnerExits();

  EventLoop& loop_;
  EventHandle sigchld_;
  SpawnerClient* spawner_ = nullptr;
  EventHandle spawner_exits_;
  std::function<void(Status)> on_spawner_lost_;
  std::unordered_map<pid_t, ExitHandler> handlers_;
  std::unordered_map<pid_t, int> unclaimed_;
  std::deque<pid_t> unclaimed_order_;  // oldest first, to bound the table
  std::unordered_map<pid_t, bool> discard_;
};

// An owned child: if it is dropped while still running it is killed with
// SIGKILL and its exit is discarded by the reaper, so no child outlives its
// owner unreaped.
class ChildHandle {
 public:
  ChildHandle() = default;
  ChildHandle(Reaper& reaper, pid_t pid) : reaper_(&reaper), pid_(pid) {}
  ChildHandle(ChildHandle&& other) noexcept;
  ChildHandle& operator=(ChildHandle&& other) noexcept;
  ~ChildHandle() { Reset(); }

  pid_t pid() const { return pid_; }
  // The child has exited; dropping the handle no longer kills anything.
  void MarkExited() { pid_ = 0; }
  void Reset();

 private:
  Reaper* reaper_ = nullptr;
  pid_t pid_ = 0;
};

}  // namespace hull
