// ExitTracker: the exit-ordering rules of one container (docs/exit-ordering.md)
// and the only state they need. The Container reports what happened (a start
// begun, its event queued, a start failed, an exit reaped) and the tracker
// decides when each exit is published, through the hooks it was given:
//   - a process's exit follows its start event;
//   - the init's exit follows every exec's, and every exec start under way;
//   - a container without a pid namespace of its own has what is left of it
//     ended (kill --all) before the init's exit is published;
//   - an init killed before it was ever started is reported at once;
//   - an OOM kill is published after the init's start event and before the
//     init's exit, once per kill the container's cgroup counted.
// Owned by its Container. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "shim/process.h"

namespace hull::shim {

class ExitTracker {
 public:
  struct Hooks {
    // Records nothing: queues the process's TaskExit and answers its Wait
    // calls (the exit is recorded on the Process already).
    std::function<void(Process*)> publish_exit;
    // Queues one TaskOOM.
    std::function<void()> publish_oom;
    // The OOM kills the container's cgroup has counted so far; nullopt where
    // the backend cannot tell (then a notification alone is trusted).
    std::function<std::optional<uint64_t>()> oom_kill_count;
    // Ends every process left in the container (runtime kill --all), then
    // calls `then` -- for a container without its own pid namespace.
    std::function<void(std::function<void()> then)> end_the_rest;
  };

  ExitTracker(Process* init, Hooks hooks) : init_(init), hooks_(std::move(hooks)) {}

  // Whether the container has no pid namespace of its own (shared with the
  // host or a pod): its processes do not die with its init.
  void set_shares_pid_namespace(bool shares) { shares_pid_namespace_ = shares; }
  bool shares_pid_namespace() const { return shares_pid_namespace_; }

  // An exec the tracker follows from Exec to Delete.
  void Track(Process* exec) { entries_[exec]; }
  void Forget(const Process* exec) { entries_.erase(exec); }

  // A start is under way (the runtime's start or exec): a held init exit
  // waits for it, and an exit of the process itself waits for its event.
  void StartBegun(Process* process);
  // The start event is queued: an exit reaped meanwhile is published now.
  void StartPublished(Process* process);
  // The start failed; the process never ran (for the init: the runtime's
  // container was ended and `exit_status` is its recorded exit).
  void StartFailed(Process* process, std::optional<int> exit_status);

  // The process exited with `exit_status` (already decoded from wait).
  void OnExit(Process* process, int exit_status);

  // The container's OOM kills are watched from now on (the counter's value
  // now is what was published); Unwatched at delete.
  void OomWatchStarted();
  void OomUnwatched() { oom_watched_ = false; }
  // The watcher noticed an OOM kill: published now, or, while the init's
  // start is in flight, right after its start event.
  void OomNoticed();

  // A start of `process` is under way.
  bool start_in_flight(const Process* process) const;
  // TaskExit of `process` has been queued and its waiters answered.
  bool exit_published(const Process* process) const;
  // The init exited, but its exit is held (execs, starts or the kill --all).
  bool init_exit_held() const { return init_held_; }

 private:
  struct Entry {
    bool start_in_flight = false;
    bool start_published = false;
    std::optional<int> early_exit;  // reaped before the start event
    bool exit_published = false;
  };
  Entry& EntryOf(const Process* process);
  void Record(Process* process, int exit_status);
  void Publish(Process* process);
  // Publishes the held init exit once nothing holds it any more.
  void MaybeReleaseInit();
  // Publishes TaskOOM if the counter went up since the last one (or, with
  // no counter, when `notified`).
  void PublishNewOomKills(bool notified);
  bool ExecsBusy() const;

  Process* init_;
  Hooks hooks_;
  bool shares_pid_namespace_ = false;
  std::map<const Process*, Entry> entries_;  // the init and every exec
  bool init_held_ = false;
  int ending_the_rest_ = 0;  // kill --all calls under way
  bool oom_watched_ = false;
  bool oom_held_ = false;  // noticed while the init's start was in flight
  uint64_t oom_kills_published_ = 0;
};

}  // namespace hull::shim
