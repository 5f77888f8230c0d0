#include "shim/exit_tracker.h"

#include <utility>

namespace hull::shim {

ExitTracker::Entry& ExitTracker::EntryOf(const Process* process) {
  return entries_[process];
}

bool ExitTracker::exit_published(const Process* process) const {
  auto it = entries_.find(process);
  return it != entries_.end() && it->second.exit_published;
}

bool ExitTracker::start_in_flight(const Process* process) const {
  auto it = entries_.find(process);
  return it != entries_.end() && it->second.start_in_flight;
}

bool ExitTracker::ExecsBusy() const {
  for (const auto& [process, entry] : entries_) {
    if (process == init_) continue;
    if (process->live() || entry.start_in_flight) return true;
  }
  return false;
}

void ExitTracker::StartBegun(Process* process) {
  EntryOf(process).start_in_flight = true;
}

void ExitTracker::StartPublished(Process* process) {
  if (process == init_ && std::exchange(oom_held_, false)) PublishNewOomKills(/*notified=*/true);
  Entry& entry = EntryOf(process);
  entry.start_in_flight = false;
  entry.start_published = true;
  if (std::optional<int> early = std::exchange(entry.early_exit, std::nullopt)) {
    return Record(process, *early);
  }
  // An exec that started while the init's exit was held: it does not die
  // with the init where the pid namespace is shared.
  if (process != init_ && init_held_ && shares_pid_namespace_ && process->live()) {
    ++ending_the_rest_;
    hooks_.end_the_rest([this] {
      --ending_the_rest_;
      MaybeReleaseInit();
    });
  }
  MaybeReleaseInit();
}

void ExitTracker::StartFailed(Process* process, std::optional<int> exit_status) {
  Entry& entry = EntryOf(process);
  entry.start_in_flight = false;
  entry.early_exit.reset();
  if (exit_status && !process->exited() && !entry.exit_published) {
    return Record(process, *exit_status);
  }
  MaybeReleaseInit();
}

void ExitTracker::OnExit(Process* process, int exit_status) {
  Entry& entry = EntryOf(process);
  if (process->exited() || entry.exit_published) return;  // reported already
  if (!entry.start_published) {
    // An init killed before anybody started it has no start event to wait
    // for (containerd's clients cancel a created task this way).
    const bool never_started = process->state() == ProcessState::kCreated && !entry.start_in_flight;
    if (!never_started) {
      entry.early_exit = exit_status;  // published right after the start event
      return;
    }
  }
  Record(process, exit_status);
}

void ExitTracker::Record(Process* process, int exit_status) {
  process->RecordExit(exit_status);
  if (process != init_) {
    Publish(process);
    return MaybeReleaseInit();
  }
  // TaskOOM goes before the exit it caused.
  if (oom_watched_) PublishNewOomKills(/*notified=*/false);
  init_held_ = true;
  if (shares_pid_namespace_) {
    // Nothing else dies with this init: end the rest before its exit is
    // reported, so the container's cgroup is empty when containerd hears.
    ++ending_the_rest_;
    hooks_.end_the_rest([this] {
      --ending_the_rest_;
      MaybeReleaseInit();
    });
  }
  MaybeReleaseInit();
}

void ExitTracker::MaybeReleaseInit() {
  if (!init_held_ || ending_the_rest_ > 0 || ExecsBusy()) return;
  init_held_ = false;
  Publish(init_);
}

void ExitTracker::OomWatchStarted() {
  oom_watched_ = true;
  oom_kills_published_ = hooks_.oom_kill_count().value_or(0);
}

void ExitTracker::OomNoticed() {
  if (!oom_watched_) return;
  if (start_in_flight(init_)) {
    oom_held_ = true;
    return;
  }
  PublishNewOomKills(/*notified=*/true);
}

void ExitTracker::PublishNewOomKills(bool notified) {
  // The watcher and the init's exit both come here; the counter keeps them
  // from publishing one kill twice. Without a counter, trust a notification.
  std::optional<uint64_t> count = hooks_.oom_kill_count();
  if (count) {
    if (*count <= oom_kills_published_) return;
    oom_kills_published_ = *count;
  } else if (!notified) {
    return;
  }
  hooks_.publish_oom();
}

void ExitTracker::Publish(Process* process) {
  EntryOf(process).exit_published = true;
  hooks_.publish_exit(process);
}

}  // namespace hull::shim
